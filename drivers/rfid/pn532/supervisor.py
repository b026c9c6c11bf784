"""One PN532 module's life: open the port, wake and configure the chip, poll, reconnect.

Health follows what the module shows:

- ``reconnecting`` while its port cannot be opened or has gone away (with backoff);
- ``online`` once polls succeed;
- ``stale`` when ``stale_after`` polls in a row fail (no ACK, no answer, error frame, RF fault).

Failed polls are never misses, so neither a silent module nor a vanished port makes a card
depart; after reconnection the first good polls reconcile the view. After ``reinit_after``
failures in a row the module is woken up and configured again (it may have reset).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime

import serial
import structlog

from controller.table.inputs import (
    DeviceHealthChanged,
    DeviceInput,
    Health,
    TagArrived,
    TagDeparted,
    Zone,
)
from drivers.rfid.pn532 import commands as cmd
from drivers.rfid.pn532.config import Pn532Config
from drivers.rfid.pn532.link import LinkError, LinkLostError, Pn532Link
from drivers.rfid.pn532.transport import SerialStream
from drivers.rfid.presence import Arrived, Departed, PresenceEdge, PresenceTracker, ZoneHealth

log = structlog.get_logger(__name__)

MAX_TARGETS = 2
"""InListPassiveTarget's MaxTg: the PN532 activates at most two targets at a time."""


class RfFaultError(LinkError):
    """The module answers, but says its RF front end has failed."""


class ModuleSupervisor:
    """Runs one module until cancelled, reporting device inputs through ``emit``."""

    def __init__(
        self,
        *,
        device: str,
        port: str,
        zone: Zone,
        config: Pn532Config,
        max_tags: int | None = None,
        tracker: PresenceTracker[Zone],
        emit: Callable[[DeviceInput], None],
        clock: Callable[[], datetime],
    ) -> None:
        self.device = device
        self.port = port
        self.zone = zone
        self.config = config
        self.max_tags = max_tags or config.max_tags
        self.firmware: cmd.FirmwareVersion | None = None
        self.health: Health | None = None
        self.polls = 0
        self.failed_polls = 0
        self.missed_reads = 0
        """Good polls that missed a tag believed present (flapping, stacking), counted per tag."""
        self.link: Pn532Link | None = None
        self._tracker = tracker
        self._emit = emit
        self._clock = clock

    async def run(self) -> None:
        """Connect, poll, and reconnect for ever (until cancelled)."""
        delay = self.config.reconnect_min
        while True:
            link = Pn532Link(
                ack_timeout=self.config.ack_timeout, response_timeout=self.config.response_timeout
            )
            try:
                stream = await SerialStream.open(self.port, link, self.config.baudrate)
            except (OSError, serial.SerialException) as exc:
                self._link_down(f"cannot open {self.port}: {exc}")
            else:
                link.write = stream.write
                self.link = link
                try:
                    await self._session(link)
                except LinkLostError as exc:
                    self._link_down(f"lost {self.port}: {exc}")
                    delay = self.config.reconnect_min  # it was working: come back quickly
                except Exception as exc:
                    # A bug must not silently end the module's supervision: report, start over.
                    log.exception("pn532 module failed", device=self.device, port=self.port)
                    self._link_down(f"internal error on {self.port}: {exc!r}")
                finally:
                    stream.close()
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.config.reconnect_max)

    # ----------------------------------------------------------------- session

    async def _session(self, link: Pn532Link) -> None:
        """Configure and poll over one open port; returns only by raising LinkLostError."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                self.firmware = await self._configure(link)
            except LinkLostError:
                raise
            except (LinkError, cmd.ResponseError) as exc:
                self._poll_failed(f"no answer to the wake-up: {exc}")
                await asyncio.sleep(self.config.poll_interval)
                continue
            failures = 0
            while failures < self.config.reinit_after:
                started = loop.time()
                try:
                    uids = await self._inventory(link)
                except LinkLostError:
                    raise
                except (LinkError, cmd.ResponseError) as exc:
                    failures += 1
                    self._poll_failed(str(exc))
                else:
                    failures = 0
                    self._poll_ok(uids)
                await asyncio.sleep(max(0.0, self.config.poll_interval - (loop.time() - started)))

    async def _configure(self, link: Pn532Link) -> cmd.FirmwareVersion:
        """Wake the chip over HSU, leave LowVbat mode, identify it, bound activation retries."""
        link.wake()
        await link.call(cmd.sam_configuration())
        firmware = cmd.decode_firmware_version(await link.call(cmd.get_firmware_version()))
        if firmware.ic != 0x32:
            raise cmd.ResponseError(f"not a PN532: IC code 0x{firmware.ic:02x}")
        await link.call(cmd.rf_max_retries(passive_activation=self.config.passive_retries))
        return firmware

    async def _inventory(self, link: Pn532Link) -> set[str]:
        """Every type A tag on the antenna, two at a time.

        Each round activates up to two tags; while rounds come back full, those tags are halted
        (InDeselect) so the next round finds the others. Halted tags wake again when the RF
        field is cycled, ready for the next poll.
        """
        found: dict[str, None] = {}
        halted = False
        while True:
            answer = await link.call(cmd.in_list_passive_target(MAX_TARGETS))
            targets = cmd.decode_targets_a(answer)
            fresh = [t.uid for t in targets if t.uid not in found]
            found.update(dict.fromkeys(fresh))
            if len(targets) < MAX_TARGETS or not fresh or len(found) >= self.max_tags:
                break
            status = cmd.decode_status(cmd.Command.IN_DESELECT, await link.call(cmd.in_deselect()))
            if status:
                raise RfFaultError(f"InDeselect failed with status 0x{status:02x}")
            halted = True
        if halted:
            await link.call(cmd.rf_field(False))
            await link.call(cmd.rf_field(True))
        if self._tracker.present(self.zone) - found.keys():
            # Something we believe present is missing: make sure the RF front end is working
            # (a module whose antenna drivers shut down finds no tags, which is no news).
            general = cmd.decode_general_status(await link.call(cmd.get_general_status()))
            if general.rf_fault is not None:
                raise RfFaultError(f"{general.rf_fault} (error 0x{general.error:02x})")
        return set(found)

    # ----------------------------------------------------------------- reporting

    def _poll_ok(self, uids: set[str]) -> None:
        self.polls += 1
        self.missed_reads += len(self._tracker.present(self.zone) - uids)
        ts = self._clock()
        self._report(ts, self._tracker.seen(ts, self.zone, uids), "")

    def _poll_failed(self, reason: str) -> None:
        self.polls += 1
        self.failed_polls += 1
        ts = self._clock()
        self._report(ts, self._tracker.failed(ts, self.zone, reason), reason)

    def _link_down(self, reason: str) -> None:
        ts = self._clock()
        self._tracker.lost(ts, self.zone, reason)
        self._set_health(ts, Health.RECONNECTING, reason)

    def _report(self, ts: datetime, edges: list[PresenceEdge[Zone]], reason: str) -> None:
        view = self._tracker.health(self.zone)
        if view is ZoneHealth.FRESH:
            firmware = f"{self.firmware} " if self.firmware else ""
            self._set_health(ts, Health.ONLINE, f"{firmware}on {self.port}, zone {self.zone}")
        elif view is ZoneHealth.STALE:
            failures = self._tracker.failures(self.zone)
            self._set_health(ts, Health.STALE, f"{failures} polls failed in a row: {reason}")
        for edge in edges:
            if isinstance(edge, Arrived):
                self._emit(TagArrived(edge.ts, self.device, self.zone, edge.uid))
            elif isinstance(edge, Departed):
                self._emit(TagDeparted(edge.ts, self.device, self.zone, edge.uid))

    def _set_health(self, ts: datetime, health: Health, detail: str) -> None:
        if health is not self.health:
            self.health = health
            self._emit(DeviceHealthChanged(ts, self.device, health, detail=detail))

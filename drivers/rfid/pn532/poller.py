"""One PN532 module's connection: open the port, wake and configure the chip, poll.

A :class:`ModulePoller` is one module of a ``pn532`` reader, a device of its own (its id is the
reader's and the zone, e.g. ``rfid-seat3``); the reader runs each under the one supervision loop
(:mod:`drivers.supervisor`), which reopens the port with backoff and reports the module
``reconnecting`` while its port cannot be opened or has gone away. The module itself reports

- ``online`` once polls succeed;
- ``stale`` when ``stale_after`` polls in a row fail (no ACK, no answer, error frame, RF fault).

Failed polls are never misses, so neither a silent module nor a vanished port makes a card
depart; after reconnection the first good polls reconcile the view. After ``reinit_after``
failures in a row the module is woken up and configured again (it may have reset).

By type: a :class:`~drivers.errors.DeviceUnavailableError` (the port cannot be opened, or
:class:`~drivers.errors.LinkLostError`) ends the connection; any other
:class:`~drivers.errors.DeviceError` of an exchange is a failed poll, and polling goes on.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

import structlog

from controller.aio import utc_now
from controller.table.inputs import DeviceHealthChanged, Health, TagArrived, TagDeparted, Zone
from drivers.errors import DeviceError, DeviceUnavailableError, LinkLostError
from drivers.rfid.pn532 import commands as cmd
from drivers.rfid.pn532.config import Pn532Config
from drivers.rfid.pn532.link import Pn532Link
from drivers.rfid.presence import Arrived, Departed, PresenceEdge, PresenceTracker, ZoneHealth
from drivers.serial_transport import SerialTransport
from drivers.supervisor import InputSink

log = structlog.get_logger(__name__)

MAX_TARGETS = 2
"""InListPassiveTarget's MaxTg: the PN532 activates at most two targets at a time."""


class RfFaultError(DeviceError):
    """The module answers, but says its RF front end has failed."""


class ModulePoller:
    """One module on its serial port, reporting device inputs to the sink it runs with."""

    kind = ""
    reports_health = True

    def __init__(
        self,
        *,
        device_id: str,
        port: str,
        zone: Zone,
        config: Pn532Config,
        max_tags: int | None = None,
        tracker: PresenceTracker[Zone],
    ) -> None:
        self.device_id = device_id
        self.port = port
        self.zone = zone
        self.config = config
        self.max_tags = max_tags or config.max_tags
        self.firmware: cmd.FirmwareVersion | None = None
        self.polls = 0
        self.failed_polls = 0
        self.missed_reads = 0
        """Good polls that missed a tag believed present (flapping, stacking), counted per tag."""
        self._halted = False  # tags were halted (InDeselect) and the field not yet cycled
        self.link: Pn532Link | None = None
        self._tracker = tracker
        self._sink: InputSink | None = None
        self._reported: Health | None = None

    async def run(self, sink: InputSink) -> None:
        """One connection: open the port, then configure and poll until it goes away."""
        self._sink, self._reported = sink, None
        link = Pn532Link(
            ack_timeout=self.config.ack_timeout, response_timeout=self.config.response_timeout
        )
        try:
            transport = await SerialTransport.open(
                self.port, link.data_received, link.connection_lost, self.config.baudrate
            )
            link.write = transport.write
            self.link = link
            try:
                await self._poll(link)
            except LinkLostError as exc:
                raise LinkLostError(f"lost {self.port}: {exc}") from exc
            finally:
                transport.close()
        finally:
            # However the connection ended, the tags stay where they were, unseen: stale.
            self._tracker.lost(utc_now(), self.zone, f"{self.port} closed")

    # ----------------------------------------------------------------- polling

    async def _poll(self, link: Pn532Link) -> None:
        """Configure and poll over one open port; returns only by raising LinkLostError."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                self.firmware = await self._configure(link)
            except DeviceUnavailableError:
                raise
            except DeviceError as exc:
                await self._poll_failed(f"no answer to the wake-up: {exc}")
                await asyncio.sleep(self.config.poll_interval)
                continue
            failures = 0
            while failures < self.config.reinit_after:
                started = loop.time()
                try:
                    uids = await self._inventory(link)
                except DeviceUnavailableError:
                    raise
                except DeviceError as exc:
                    failures += 1
                    await self._poll_failed(str(exc))
                else:
                    failures = 0
                    await self._poll_ok(uids)
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
        if self._halted:  # a poll that halted tags failed before it woke them: wake them now
            await self._cycle_field(link)
        found: dict[str, None] = {}
        while True:
            answer = await link.call(cmd.in_list_passive_target(MAX_TARGETS))
            targets = cmd.decode_targets_a(answer)
            fresh = [t.uid for t in targets if t.uid not in found]
            found.update(dict.fromkeys(fresh))
            if len(targets) < MAX_TARGETS or not fresh or len(found) >= self.max_tags:
                break
            # from here until the field is cycled the halted tags answer no round: if this poll
            # fails before then, the next one must wake them first, or they would look gone
            self._halted = True
            status = cmd.decode_status(cmd.Command.IN_DESELECT, await link.call(cmd.in_deselect()))
            if status:
                raise RfFaultError(f"InDeselect failed with status 0x{status:02x}")
        if self._halted:
            await self._cycle_field(link)
        if self._tracker.present(self.zone) - found.keys():
            # Something we believe present is missing: make sure the RF front end is working
            # (a module whose antenna drivers shut down finds no tags, which is no news).
            general = cmd.decode_general_status(await link.call(cmd.get_general_status()))
            if general.rf_fault is not None:
                raise RfFaultError(f"{general.rf_fault} (error 0x{general.error:02x})")
        return set(found)

    async def _cycle_field(self, link: Pn532Link) -> None:
        """RF field off and on: halted tags lose power and answer the next round again."""
        await link.call(cmd.rf_field(False))
        await link.call(cmd.rf_field(True))
        self._halted = False

    # ----------------------------------------------------------------- reporting

    async def _poll_ok(self, uids: set[str]) -> None:
        self.polls += 1
        self.missed_reads += len(self._tracker.present(self.zone) - uids)
        ts = utc_now()
        await self._report(ts, self._tracker.seen(ts, self.zone, uids), "")

    async def _poll_failed(self, reason: str) -> None:
        self.polls += 1
        self.failed_polls += 1
        ts = utc_now()
        await self._report(ts, self._tracker.failed(ts, self.zone, reason), reason)

    async def _report(self, ts: datetime, edges: list[PresenceEdge[Zone]], reason: str) -> None:
        assert self._sink is not None, "polls run only inside run()"
        view = self._tracker.health(self.zone)
        if view is ZoneHealth.FRESH:
            firmware = f"{self.firmware} " if self.firmware else ""
            await self._set_health(ts, Health.ONLINE, f"{firmware}on {self.port}, zone {self.zone}")
        elif view is ZoneHealth.STALE:
            failures = self._tracker.failures(self.zone)
            await self._set_health(ts, Health.STALE, f"{failures} polls failed in a row: {reason}")
        for edge in edges:
            if isinstance(edge, Arrived):
                await self._sink(TagArrived(edge.ts, self.device_id, self.zone, edge.uid))
            elif isinstance(edge, Departed):
                await self._sink(TagDeparted(edge.ts, self.device_id, self.zone, edge.uid))

    async def _set_health(self, ts: datetime, health: Health, detail: str) -> None:
        # Every poll says how the module is; only a change is worth an input.
        if health is not self._reported:
            self._reported = health
            assert self._sink is not None
            await self._sink(DeviceHealthChanged(ts, self.device_id, health, detail=detail))

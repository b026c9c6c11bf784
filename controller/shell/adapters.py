"""Adapters from the shipped drivers to the daemon's device-source interface.

Each driver keeps its own shape (a sink callback and a supervisor, or an async context manager
with an event iterator); an adapter gives the daemon the one interface it drives. Driver modules
are imported when a config selects them, so a missing optional dependency only affects its own
driver.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any

from controller.shell.devices import (
    DISPENSE,
    READ,
    REVEAL,
    SHUFFLE,
    AlreadyDoneError,
    DeviceCommandError,
    DeviceError,
    DeviceSource,
    DeviceStatus,
    InputSink,
    SourceContext,
    pydantic_problems,
)
from controller.table.inputs import DeviceInput, Health
from controller.table.plan import DispenseRequest


class _Reader:
    """What every reader source answers to the shuffler's commands: it has no deck."""

    capabilities = frozenset({READ})
    device_id: str

    async def shuffle(self, ref: int) -> None:
        """A reader does not shuffle."""
        raise DeviceCommandError(f"{self.device_id} is a reader: it does not shuffle")

    async def dispense(self, shuffle_id: int, group: int, request: DispenseRequest) -> None:
        """A reader does not dispense."""
        raise DeviceCommandError(f"{self.device_id} is a reader: it does not dispense")

    async def reveal(self, shuffle_id: int) -> None:
        """A reader has no deck."""
        raise DeviceCommandError(f"{self.device_id} is a reader: it has no deck")


class Pn532Source(_Reader):
    """PN532 modules (one per zone) as one source of tag movements and health changes."""

    def __init__(self, device_id: str, options: Mapping[str, Any]) -> None:
        from drivers.rfid.pn532.driver import Pn532Reader  # noqa: PLC0415

        self.device_id = device_id
        self.reader = Pn532Reader.from_options(device_id, options)

    async def run(self, sink: InputSink) -> None:
        """Poll every module; hand every presence edge and health change to the sink."""
        async with self.reader:
            async for event in self.reader.events():
                await sink(event)

    async def query(self) -> DeviceStatus:
        """Online when at least one module answers; the detail lists each module's health."""
        health = self.reader.health()
        online = any(h is Health.ONLINE for h in health.values())
        detail = ", ".join(f"{d} {h.value if h else 'unknown'}" for d, h in health.items())
        return DeviceStatus(online, detail=detail)

    def describe(self) -> dict[str, Any]:
        """The modules, their zones and firmware."""
        firmware = self.reader.firmware()
        return {
            "model": "NXP PN532",
            "approved": True,
            "modules": [
                {
                    "device": module.device,
                    "port": module.port,
                    "zone": str(module.zone),
                    "firmware": str(firmware.get(module.device) or "") or None,
                }
                for module in self.reader.modules
            ],
        }

    async def close(self) -> None:
        """Stop polling and close the ports."""
        await self.reader.stop()


class _Pn532Factory:
    def build(self, device_id: str, options: Mapping[str, Any], ctx: SourceContext) -> DeviceSource:
        return Pn532Source(device_id, options)

    def problems(self, options: Mapping[str, Any]) -> list[str]:
        from drivers.rfid.pn532.config import Pn532Config  # noqa: PLC0415

        return pydantic_problems(Pn532Config, options)


PN532_FACTORY = _Pn532Factory()


# --------------------------------------------------------------------------- TSP/1 reader


class TspReaderSource(_Reader):
    """The TSP/1 reference reader, on a serial port or USB vendor bulk, as a source.

    The driver hands each event to the sink and acknowledges it to the reader only once the sink
    returned (once it is journaled), so a crash between the two loses nothing: the reader sends
    it again, and its snapshots repair anything else.
    """

    def __init__(self, device_id: str, options: Mapping[str, Any], *, usb: bool) -> None:
        from drivers.rfid.tsp_reader.driver import TspReader  # noqa: PLC0415
        from drivers.rfid.tsp_reader.usb import TspUsbReader  # noqa: PLC0415

        self.device_id = device_id
        self._sink: InputSink | None = None
        driver = TspUsbReader if usb else TspReader
        self.reader = driver.from_options(device_id, options, sink=self._forward)

    async def _forward(self, item: DeviceInput) -> None:
        assert self._sink is not None, "the driver runs only inside run()"
        await self._sink(item)

    async def run(self, sink: InputSink) -> None:
        """The driver's own supervisor keeps the reader connected until cancelled."""
        self._sink = sink
        await self.reader.run()

    async def query(self) -> DeviceStatus:
        """Online when the reader is; the detail lists the zones whose health changed."""
        health = self.reader.health()
        online = health.get(self.device_id) is Health.ONLINE
        detail = ", ".join(f"{d} {h.value if h else 'unknown'}" for d, h in health.items())
        return DeviceStatus(online, detail=detail)

    def describe(self) -> dict[str, Any]:
        """Identity as the reader reported it, and its antennas' zones."""
        identity = self.reader.identity
        zones = {str(antenna): str(zone) for antenna, zone in sorted(self.reader.zones.items())}
        if identity is None:
            return {"model": None, "approved": True, "zones": zones}
        return {
            "vendor": identity.vendor,
            "model": identity.model,
            "serial": identity.serial,
            "firmware": identity.fw_version,
            "approved": True,
            "zones": zones,
        }

    async def close(self) -> None:
        """Stop the driver and close its transport."""
        await self.reader.stop()


class _TspReaderFactory:
    def __init__(self, *, usb: bool) -> None:
        self.usb = usb

    def build(self, device_id: str, options: Mapping[str, Any], ctx: SourceContext) -> DeviceSource:
        return TspReaderSource(device_id, options, usb=self.usb)

    def problems(self, options: Mapping[str, Any]) -> list[str]:
        from drivers.rfid.tsp_reader.options import (  # noqa: PLC0415
            TspReaderOptions,
            TspUsbReaderOptions,
        )

        return pydantic_problems(TspUsbReaderOptions if self.usb else TspReaderOptions, options)


TSP_READER_FACTORY = _TspReaderFactory(usb=False)
TSP_READER_USB_FACTORY = _TspReaderFactory(usb=True)


# --------------------------------------------------------------------------- TSP/1 shuffler


class ShufflerSource:
    """The TSP/1 shuffler driver (``drivers.shuffler``) as a source.

    The driver keeps its device connected (its own supervisor, approval, heartbeat) and hands
    every event to the sink; the daemon's commands map onto START_SHUFFLE, DISPENSE_GROUP and
    REVEAL_DECK. A group number the device answers ``ALREADY_DONE`` is :class:`AlreadyDoneError`:
    the resend after a crash that must not dispense again.
    """

    capabilities = frozenset({SHUFFLE, DISPENSE, REVEAL})

    def __init__(self, device_id: str, options: Mapping[str, Any]) -> None:
        from drivers.shuffler.driver import ShufflerDriver  # noqa: PLC0415
        from drivers.shuffler.options import ShufflerOptions  # noqa: PLC0415

        self.device_id = device_id
        self._sink: InputSink | None = None
        parsed = ShufflerOptions.model_validate(dict(options))
        self.driver = ShufflerDriver(device_id, parsed, self._forward)

    async def _forward(self, item: DeviceInput) -> None:
        assert self._sink is not None, "the driver runs only inside run()"
        await self._sink(item)

    async def run(self, sink: InputSink) -> None:
        """The driver's own supervisor keeps the device connected until cancelled."""
        self._sink = sink
        await self.driver.run()

    async def query(self) -> DeviceStatus:
        """GET_STATUS: the current deck (the groups it dispensed are not reported)."""
        from drivers import errors  # noqa: PLC0415

        try:
            status = await self.driver.get_status()
        except errors.DeviceError as exc:
            raise DeviceError(str(exc)) from None
        detail = f"state {status.state}, {status.cards_out} cards out, {status.cards_in} in"
        return DeviceStatus(True, status.shuffle_id or None, None, detail)

    async def shuffle(self, ref: int) -> None:
        """START_SHUFFLE with the dispatch id as the host reference."""
        await self._call(self.driver.start_shuffle(host_ref=ref & 0xFFFFFFFF))

    async def dispense(self, shuffle_id: int, group: int, request: DispenseRequest) -> None:
        """DISPENSE_GROUP with the host's group number."""
        await self._call(
            self.driver.dispense_group(
                shuffle_id, group, request.size, request.purpose, request.seat
            )
        )

    async def reveal(self, shuffle_id: int) -> None:
        """REVEAL_DECK (the driver checks the commitment and sends DeckRevealed to the sink)."""
        await self._call(self.driver.reveal_deck(shuffle_id))

    async def _call(self, command: Awaitable[object]) -> None:
        from drivers import errors  # noqa: PLC0415

        try:
            await command
        except errors.AlreadyDoneError as exc:
            raise AlreadyDoneError(str(exc)) from None
        except errors.DeviceCommandError as exc:
            raise DeviceCommandError(str(exc)) from None
        except errors.DeviceError as exc:
            raise DeviceCommandError(str(exc)) from None

    def describe(self) -> dict[str, Any]:
        """Identity as the shuffler reported it, and the approval verdict."""
        identity = self.driver.identity
        health = self.driver.health
        if identity is None:
            return {"model": None, "approved": None}
        return {
            "vendor": identity.vendor,
            "model": identity.model,
            "serial": identity.serial,
            "firmware": identity.fw_version,
            "firmware_sha256": identity.fw_sha256.hex(),
            "approved": health is not Health.REJECTED if health is not None else None,
        }

    async def close(self) -> None:
        """The driver closes its port when its task is cancelled."""


class _ShufflerFactory:
    def build(self, device_id: str, options: Mapping[str, Any], ctx: SourceContext) -> DeviceSource:
        return ShufflerSource(device_id, options)

    def problems(self, options: Mapping[str, Any]) -> list[str]:
        from drivers.shuffler.options import ShufflerOptions  # noqa: PLC0415

        return pydantic_problems(ShufflerOptions, options)


SHUFFLER_FACTORY = _ShufflerFactory()

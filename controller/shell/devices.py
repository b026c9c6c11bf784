"""The daemon's view of a device: a source of core inputs that takes the daemon's commands.

Whatever the driver (a TSP/1 shuffler on a serial port, PN532 modules, a virtual table), the
daemon sees a :class:`DeviceSource`:

* :meth:`~DeviceSource.run` keeps the device going and hands every input to the sink, in order;
  the sink returns once the input is journaled, so a driver that acknowledges its device only
  after the sink returned never loses an event. ``run`` raises :class:`DeviceError` when the
  device is gone; the daemon restarts it after a backoff.
* :meth:`~DeviceSource.query` asks the device where it is (recovery asks before resending
  anything).
* :meth:`~DeviceSource.shuffle`, :meth:`~DeviceSource.dispense`, :meth:`~DeviceSource.reveal`
  are the shuffler's commands. A dispense names its shuffle and a group number the host chose;
  a device that already dispensed that group refuses it with :class:`AlreadyDoneError`, which is
  what makes a resend after a crash safe.

Sources are built by factories looked up by driver name (:data:`SOURCE_FACTORIES`), imported
lazily like the driver registry's entries. A third-party driver whose class implements this
protocol and has ``from_options(device_id, options, context)`` works without a factory; when the
class also names a pydantic model as ``options_model``, config check validates the device's
options with it (``docs/drivers.md``, "Writing a driver").
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from controller.decks import DeckManifest
from controller.table.inputs import DeviceInput
from controller.table.plan import DispenseRequest

if TYPE_CHECKING:
    from controller.config import DeviceSection

InputSink = Callable[[DeviceInput], Awaitable[None]]

SHUFFLE = "shuffle"
DISPENSE = "dispense"
REVEAL = "reveal"
READ = "read"


class DeviceError(Exception):
    """The device is unavailable; the daemon restarts its source after a backoff."""


class DeviceCommandError(DeviceError):
    """The device refused a command (or cannot take commands now)."""


class AlreadyDoneError(DeviceCommandError):
    """The device already carried out this command (a resend after a crash)."""


@dataclass(frozen=True)
class DeviceStatus:
    """What a device says about itself when asked.

    ``groups`` are the group numbers of ``shuffle_id`` the device has dispensed, when it can
    tell; None when it cannot (then a resend relies on the device refusing duplicates).
    """

    online: bool
    shuffle_id: int | None = None
    groups: frozenset[int] | None = None
    detail: str = ""


@dataclass(frozen=True)
class SourceContext:
    """What a factory may need besides the device's options."""

    table_id: str
    manifest: DeckManifest
    extra: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class DeviceSource(Protocol):
    """A device as the daemon drives it."""

    device_id: str
    capabilities: frozenset[str]

    async def run(self, sink: InputSink) -> None:
        """Run the device until cancelled, handing every input to ``sink`` in order."""

    async def query(self) -> DeviceStatus:
        """Ask the device where it is."""

    async def shuffle(self, ref: int) -> None:
        """Start a shuffle (with its deck check); ``ref`` is the host's reference."""

    async def dispense(self, shuffle_id: int, group: int, request: DispenseRequest) -> None:
        """Dispense ``request`` as group ``group`` of deck ``shuffle_id``."""

    async def reveal(self, shuffle_id: int) -> None:
        """Reveal the order of a retired deck (it arrives as a DeckRevealed input)."""

    def describe(self) -> dict[str, Any]:
        """Identity for the device topic: model, firmware hash, approved…"""

    async def close(self) -> None:
        """Close ports and release the device."""


class SourceFactory(Protocol):
    """Builds a source from a config's device section, and checks its options."""

    def build(self, device_id: str, options: Mapping[str, Any], ctx: SourceContext) -> DeviceSource:
        """A source for ``device_id``."""

    def problems(self, options: Mapping[str, Any]) -> list[str]:
        """What is wrong with ``options`` (key: message), empty when they are fine."""


#: driver name → "module:attribute" of its factory.
SOURCE_FACTORIES: dict[str, str] = {
    "virtual": "controller.shell.virtual:FACTORY",
    "jsonl": "controller.shell.linesource:FACTORY",
    "pn532": "controller.shell.adapters:PN532_FACTORY",
    "tsp-shuffler": "controller.shell.adapters:SHUFFLER_FACTORY",
    "tsp-reader": "controller.shell.adapters:TSP_READER_FACTORY",
    "tsp-reader-usb": "controller.shell.adapters:TSP_READER_USB_FACTORY",
}


class UnknownDriverError(LookupError):
    """No factory and no registered driver class that is itself a source."""


def _factory(driver: str) -> SourceFactory:
    target = SOURCE_FACTORIES.get(driver)
    if target is not None:
        module_name, _, attr = target.partition(":")
        try:
            factory: SourceFactory = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise UnknownDriverError(f"driver {driver!r} cannot be loaded: {exc}") from exc
        return factory
    return _RegistryFactory(driver)


class _RegistryFactory:
    """A registered driver class that implements :class:`DeviceSource` itself."""

    def __init__(self, driver: str) -> None:
        from drivers.registry import load_driver  # noqa: PLC0415 (only for plugin drivers)

        try:
            self.cls = load_driver(driver)
        except LookupError as exc:
            raise UnknownDriverError(str(exc)) from None
        if not hasattr(self.cls, "from_options") or not hasattr(self.cls, "query"):
            raise UnknownDriverError(
                f"driver {driver!r} is registered but is not a daemon device source "
                "(it needs from_options() and the DeviceSource methods)"
            )

    def build(self, device_id: str, options: Mapping[str, Any], ctx: SourceContext) -> DeviceSource:
        cls: Any = self.cls
        source: DeviceSource = cls.from_options(device_id, options, ctx)
        return source

    def problems(self, options: Mapping[str, Any]) -> list[str]:
        model = getattr(self.cls, "options_model", None)
        if model is None:
            return []  # the driver checks its options only when the daemon builds it
        return pydantic_problems(model, options)


def build_source(device_id: str, section: DeviceSection, ctx: SourceContext) -> DeviceSource:
    """The source of one configured device."""
    return _factory(section.driver).build(device_id, section.options, ctx)


def device_option_problems(device_id: str, section: DeviceSection) -> list[str]:
    """Config check of one device: the driver exists and its options are valid."""
    try:
        factory = _factory(section.driver)
    except UnknownDriverError as exc:
        return [f"devices.{device_id}.driver: {exc}"]
    return [f"devices.{device_id}.{p}" for p in factory.problems(section.options)]


def pydantic_problems(model: Any, options: Mapping[str, Any]) -> list[str]:
    """Validate ``options`` with a pydantic model; problems as ``key: message``."""
    from pydantic import ValidationError  # noqa: PLC0415

    try:
        model.model_validate(dict(options))
    except ValidationError as exc:
        return [
            f"{'.'.join(str(p) for p in err['loc']) or '(options)'}: {err['msg']}"
            for err in exc.errors()
        ]
    return []

"""The driver registry: one table of backends by name, plugins added from their entry points.

Like python-can's backend table: every built-in driver is named ``"module:Class"`` and imported
only when a config selects it, so a plain checkout works without installing anything and a driver
whose optional dependency is missing does not break the others. Third-party packages register
theirs in the entry-point group ``tablectl.drivers`` (see ``examples/``); a built-in wins over a
plugin of the same name. Every driver is a :class:`~drivers.contract.Device`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from drivers.contract import Device, DeviceContext

ENTRY_POINT_GROUP = "tablectl.drivers"

#: name → "module:Class" of every driver shipped with tablectl.
BUILTIN_DRIVERS: dict[str, str] = {
    "jsonl": "drivers.jsonl:LineSource",
    "feig-isc": "drivers.rfid.feig.driver:FeigReader",
    "pn532": "drivers.rfid.pn532.driver:Pn532Reader",
    "tsp-reader": "drivers.rfid.tsp_reader.driver:TspReader",
    "tsp-reader-usb": "drivers.rfid.tsp_reader.usb:TspUsbReader",
    "tsp-shuffler": "drivers.shuffler.driver:ShufflerDriver",
    "virtual": "drivers.virtual:VirtualTable",
}


class DriverUnavailableError(LookupError):
    """A config names a driver that is not registered, cannot be imported or is no Device."""


def available_drivers() -> dict[str, str]:
    """Every known driver name and where it lives (built-ins win over plugins of the same name)."""
    found = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    found.update(BUILTIN_DRIVERS)
    return found


def load_driver(name: str) -> type[Device]:
    """Import and return the driver class registered as ``name``."""
    target = available_drivers().get(name)
    if target is None:
        known = ", ".join(sorted(available_drivers())) or "none"
        raise DriverUnavailableError(f"no driver named {name!r} (known drivers: {known})")
    module_name, _, attr = target.partition(":")
    try:
        driver = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise DriverUnavailableError(f"driver {name!r} ({target}) cannot be loaded: {exc}") from exc
    if not (isinstance(driver, type) and issubclass(driver, Device)):
        raise DriverUnavailableError(
            f"driver {name!r} is registered but is not a device driver "
            f"({target} is no subclass of drivers.contract.Device)"
        )
    return driver


def build_device(
    device_id: str, driver: str, options: Mapping[str, Any], context: DeviceContext
) -> Device:
    """The device of one config section (its options are validated by its model)."""
    return load_driver(driver).from_options(device_id, options, context)


def option_problems(device_id: str, driver: str, options: Mapping[str, Any]) -> list[str]:
    """Config check of one device: the driver exists and its options are valid."""
    try:
        cls = load_driver(driver)
    except DriverUnavailableError as exc:
        return [f"devices.{device_id}.driver: {exc}"]
    return [f"devices.{device_id}.{problem}" for problem in cls.option_problems(options)]

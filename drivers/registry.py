"""The driver registry: built-in drivers in a static table, third-party ones by entry point.

Built-ins are named ``"module:Class"`` strings and imported only when a config selects them, so a
plain checkout works without installing anything and a driver whose optional dependency is missing
does not break the others. Third-party packages register drivers in the entry-point group
``tablectl.drivers`` (see ``examples/``).
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

ENTRY_POINT_GROUP = "tablectl.drivers"

#: name → "module:Class" of every driver shipped with tablectl.
BUILTIN_DRIVERS: dict[str, str] = {
    "pn532": "drivers.rfid.pn532.driver:Pn532Reader",
    "tsp-shuffler": "drivers.shuffler.driver:ShufflerDriver",
}


class DriverUnavailableError(LookupError):
    """A config names a driver that is not registered or cannot be imported."""


def available_drivers() -> dict[str, str]:
    """Every known driver name and where it lives (built-ins win over plugins of the same name)."""
    found = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    found.update(BUILTIN_DRIVERS)
    return found


def load_driver(name: str) -> type:
    """Import and return the driver class registered as ``name``."""
    target = available_drivers().get(name)
    if target is None:
        known = ", ".join(sorted(available_drivers())) or "none"
        raise DriverUnavailableError(f"no driver named {name!r} (known drivers: {known})")
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
        driver = getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        raise DriverUnavailableError(f"driver {name!r} ({target}) cannot be loaded: {exc}") from exc
    if not isinstance(driver, type):
        raise DriverUnavailableError(f"driver {name!r} ({target}) is not a class")
    return driver

"""Where the simulator finds the firmware image it runs (the approved one by default)."""

from __future__ import annotations

from pathlib import Path

from drivers.paths import config_dir

IMAGE = Path("firmware") / "tsp-sim-shuffler-1.0.0.bin"


def default_firmware() -> Path:
    """The simulator's approved firmware image."""
    return config_dir() / IMAGE

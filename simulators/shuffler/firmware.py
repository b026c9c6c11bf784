"""Where the simulator finds the firmware image it runs (the approved one by default)."""

from __future__ import annotations

import sys
from pathlib import Path

IMAGE = Path("firmware") / "tsp-sim-shuffler-1.0.0.bin"


def config_dir() -> Path:
    """The project's ``config/``: in the source tree, or where the wheel installed it."""
    source = Path(__file__).resolve().parents[2] / "config"
    if source.is_dir():
        return source
    return Path(sys.prefix) / "share" / "tablectl" / "config"


def default_firmware() -> Path:
    """The simulator's approved firmware image."""
    return config_dir() / IMAGE

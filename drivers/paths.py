"""Where tablectl's shipped configuration lives: the source tree, or where the wheel put it."""

from __future__ import annotations

import sys
from pathlib import Path


def config_dir() -> Path:
    """The project's ``config/`` directory."""
    source = Path(__file__).resolve().parents[1] / "config"
    if source.is_dir():
        return source
    return Path(sys.prefix) / "share" / "tablectl" / "config"

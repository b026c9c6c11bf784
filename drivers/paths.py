"""Where tablectl's shipped configuration lives: the source tree, or where the wheel put it."""

from __future__ import annotations

from pathlib import Path

from controller import paths


def config_dir() -> Path:
    """The project's ``config/`` directory (the same one the controller uses)."""
    return paths.config_dir()

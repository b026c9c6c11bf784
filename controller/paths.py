"""Where the shipped data files (profiles, deck manifests, schemas) are.

In a checkout they sit in ``config/`` beside the packages; in an installed wheel they are under
``<prefix>/share/tablectl/config``. ``TABLECTL_CONFIG_DIR`` overrides both.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parent.parent / "config"
_INSTALLED = Path(sys.prefix) / "share" / "tablectl" / "config"


def config_dir() -> Path:
    """The directory holding ``profiles/``, ``decks/`` and the example configs."""
    override = os.environ.get("TABLECTL_CONFIG_DIR")
    if override:
        return Path(override)
    if (_CHECKOUT / "profiles").is_dir():
        return _CHECKOUT
    return _INSTALLED

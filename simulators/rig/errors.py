"""The rig's own error."""

from __future__ import annotations


class RigError(RuntimeError):
    """The rig could not build or run the table."""

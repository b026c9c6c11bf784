"""JSON from outside the process, read as RFC 8259 defines it: numbers are finite.

Python's :func:`json.loads` takes ``NaN``, ``Infinity`` and ``-Infinity``, which RFC 8259 §6 does
not allow, and reads a number too large for a float (``1e999999``) as infinity, which then
compares, sums and serialises as nothing JSON can hold. RFC 8259 §9 lets a parser limit the range
of the numbers it takes: here a number must be a finite IEEE 754 double. Every parse of bytes that
came from a broker, a socket or a client goes through :func:`loads` (the table's request gate has
its own, with size limits, built on :func:`finite_float` and :func:`no_constant`).
"""

from __future__ import annotations

import json
import math
from typing import Any


class NonFiniteNumberError(ValueError):
    """A number JSON cannot hold: NaN, an infinity, or one beyond a double's range."""


def finite_float(text: str) -> float:
    """A JSON number with a fraction or exponent, as a float; refused when it is not finite."""
    value = float(text)
    if not math.isfinite(value):
        raise NonFiniteNumberError(f"the number {text[:40]} is out of range (not finite)")
    return value


def no_constant(text: str) -> Any:
    """``NaN``, ``Infinity`` and ``-Infinity`` are not JSON (RFC 8259 §6)."""
    raise NonFiniteNumberError(f"{text} is not a JSON number")


def loads(data: bytes | bytearray | str) -> Any:
    """Parse JSON text; ``ValueError`` (``json.JSONDecodeError`` or
    :class:`NonFiniteNumberError`) when it is not JSON with finite numbers."""
    return json.loads(data, parse_float=finite_float, parse_constant=no_constant)

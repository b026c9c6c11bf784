"""How events write seats: a seat is its number, a seat → chips map has string keys (JSON
object keys are strings)."""

from __future__ import annotations

from collections.abc import Mapping

Seat = int
SeatMap = Mapping[str, int]


def seat_map(values: Mapping[int, int]) -> dict[str, int]:
    """A seat → chips map as events carry it (JSON object keys are strings)."""
    return {str(seat): amount for seat, amount in sorted(values.items())}

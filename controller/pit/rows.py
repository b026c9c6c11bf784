"""Values as the pit's store holds them: each column's type, and the checks that keep a value a
column cannot hold (a table may publish anything) out of it, reading as null instead.

Shared by the store's parts (controller/pit/store.py and the modules its class is made of).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from controller.pit.db import Column

#: The views of an event a pit takes: every subscriber's, and the surveillance stream's.
Stream = Literal["public", "secure"]
#: The events column holding each view.
STREAM_COLUMN: dict[str, str] = {"public": "public", "secure": "secure"}

#: The PostgreSQL type of each column :meth:`Db.insert` writes (every other one is text).
COLUMN_TYPES: dict[str, str] = {
    "seq": "bigint",
    "first_seq": "bigint",
    "last_seq": "bigint",
    "max_seq": "bigint",
    "known_last": "bigint",
    "raised_seq": "bigint",
    "resolved_seq": "bigint",
    "state_seq": "bigint",
    "ante": "bigint",
    "pot": "bigint",
    "rake": "bigint",
    "jackpot": "bigint",
    "time_collected": "bigint",
    "runouts": "integer",
    "ante_seat": "integer",
    "seat": "integer",
    "button": "integer",
    "fresh": "integer",
    "first_seen": "float8",
    "committed_at": "float8",
    "updated_at": "float8",
}


def typed_columns(names: str) -> tuple[Column, ...]:
    """Columns named by their names, with their types."""
    return tuple((name, COLUMN_TYPES.get(name, "text")) for name in names.split())


def last_per_key(rows: Sequence[tuple[Any, ...]], width: int) -> list[tuple[Any, ...]]:
    """The rows sorted, keeping the last of those whose first ``width`` values are equal (one
    statement may update a row once: the last row of a key is what updating row by row left)."""
    last: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for row in sorted(rows, key=lambda r: tuple("" if v is None else v for v in r[:width])):
        last[row[:width]] = row
    return list(last.values())


def alarm_list(value: Any) -> list[dict[str, Any]]:
    """The alarms of a status body, as the console shows them: each an object with its
    ``alarm`` (text), ``detail`` and ``since`` (text or null) and what else it holds; 50 at
    most. An item of another shape is kept as a ``malformed`` alarm, never dropped silently."""
    if not isinstance(value, list):
        return []
    out: list[dict[str, Any]] = []
    for item in value[:50]:
        if isinstance(item, dict) and isinstance(item.get("alarm"), str):
            out.append(
                {
                    **item,
                    "detail": text_or_none(item.get("detail")),
                    "since": text_or_none(item.get("since")),
                }
            )
        else:
            out.append({"alarm": "malformed", "detail": json.dumps(item)[:200], "since": None})
    return out


def text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def bigint_or_none(value: Any) -> int | None:
    """An integer a BIGINT column holds (anything else: None)."""
    if isinstance(value, int) and not isinstance(value, bool) and -(2**63) < value < 2**63:
        return value
    return None


def integer_or_none(value: Any) -> int | None:
    """A seat, a button, a count: an integer an INTEGER column holds, not negative."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31:
        return value
    return None


def seat_list(value: Any) -> list[int] | None:
    """A list of seat numbers (anything else: None)."""
    if isinstance(value, list) and all(integer_or_none(v) is not None for v in value):
        return value
    return None


def amount_list(value: Any, *, keep_valid: bool = False) -> list[int] | None:
    """A list of amounts (``keep_valid``: the amounts of a list, the others left out)."""
    if not isinstance(value, list):
        return None
    valid = [v for v in value if bigint_or_none(v) is not None]
    if keep_valid or len(valid) == len(value):
        return valid
    return None


def seat_chips(value: Any) -> dict[str, int] | None:
    """Seat → chips: the entries with a seat number and an amount (None: not an object)."""
    if not isinstance(value, dict):
        return None
    return {
        str(k): v for k, v in value.items() if str(k).isdigit() and bigint_or_none(v) is not None
    }


def json_object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def json_or_null(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))


def json_value(text: str | None) -> Any:
    """A JSON column's value (None: null, or text that is not JSON)."""
    if not text:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def envelopes(texts: Iterable[str | None]) -> list[dict[str, Any]]:
    """Stored envelopes as objects (one that does not read as an object is left out)."""
    out = []
    for text in texts:
        body = json_value(text)
        if isinstance(body, dict):
            out.append(body)
    return out

"""A report's table as CSV (RFC 4180), and whether a request asks for CSV (pure).

RFC 4180: a header line of the column names, then a record per row; records end with CRLF; a
field with a comma, a double quote, CR or LF is quoted and its quotes doubled. Python's ``csv``
writer with ``lineterminator="\\r\\n"`` and minimal quoting writes exactly that. The media type
is ``text/csv`` with ``charset=utf-8`` and ``header=present`` (RFC 4180 §3; RFC 7111).

A text that a spreadsheet would read as a formula (it begins with ``=``, ``+``, ``-``, ``@``, a
tab or a CR: OWASP, "CSV Injection") is written with a ``'`` before it, so that opening the file
runs nothing; numbers are written as numbers. Names of people come from the tables' events.

The file is offered for download (``Content-Disposition: attachment``, RFC 6266) under a name
made of the report, its part and its span's dates only.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence

from pydantic import BaseModel

MEDIA_TYPE = "text/csv; charset=utf-8; header=present"
_FORMULA = ("=", "+", "-", "@", "\t", "\r")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def cell(value: object) -> object:
    """A value as the CSV has it (None: empty; a text a spreadsheet would run: quoted off)."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA):
        return "'" + value
    return value


def csv_text(columns: Sequence[str], rows: Sequence[BaseModel]) -> str:
    """The header and a record per row (each row's fields ``columns``, in that order)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(columns)
    for row in rows:
        values = row.model_dump()
        writer.writerow([cell(values[name]) for name in columns])
    return out.getvalue()


def disposition(report: str, part: str, since: str, until: str) -> str:
    """``attachment`` with the file's name: ``drop-grid-2026-01-01-2026-01-31.csv``."""
    name = _SAFE_NAME.sub("-", f"{report}-{part}-{since[:10]}-{until[:10]}")
    return f'attachment; filename="{name}.csv"'


def wants_csv(format: str | None, accept: str | None) -> bool:
    """Whether a request asks for CSV: ``format=csv``, or (without ``format``) an ``Accept``
    that prefers ``text/csv`` to JSON (RFC 9110 §12.5.1: the highest ``q``; JSON on a tie,
    or without ``Accept``). ValueError: a ``format`` that is neither ``json`` nor ``csv``."""
    if format is not None and format.strip():
        chosen = format.strip().lower()
        if chosen not in ("json", "csv"):
            raise ValueError(f"format: {format!r} is not json or csv")
        return chosen == "csv"
    if not accept:
        return False
    best = {"csv": 0.0, "json": 0.0}
    for item in accept.split(","):
        kind, *params = (p.strip() for p in item.split(";"))
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        kind = kind.lower()
        if kind == "text/csv":
            best["csv"] = max(best["csv"], q)
        elif kind in ("application/json", "application/*", "*/*"):
            best["json"] = max(best["json"], q if kind == "application/json" else min(q, 0.5))
    return best["csv"] > 0 and best["csv"] > best["json"]

"""Each table's devices as they last said they were (their retained health on
``{prefix}/{table}/devices/{device}``), kept in the store so that every pit process shows the
same: the floor map's tiles, a table's page, the device faults of the alarms page and
``GET /api/tables/{table}``.

Every pit process subscribes to the device topics itself (not through the share group: a new
process is given each retained message when it subscribes), so each message reaches the store
once per process, not in the same order everywhere. A device's row keeps the ``ts`` of the
message it holds, and is replaced only by a later one (a message without ``ts`` always
replaces it); a message one process brings late changes nothing. A cleared retained message
(an empty payload) clears the row only if it holds no message later than the last one the
clearing process saw of that device.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from controller.pit.db import Db
from controller.pit.rows import last_per_key


class DeviceIn(NamedTuple):
    """A device's retained message as one pit process took it."""

    table: str
    device: str
    ts: str  # the message's ``ts``; of a cleared one, the last the process saw ('' if none)
    body: str | None  # the message as JSON text; None: the retained message was cleared


DEVICE_COLUMNS = (
    ("table_id", "text"),
    ("device", "text"),
    ("ts", "text"),
    ("body", "text"),
    ("received_at", "float8"),
)


class Devices:
    """The devices' health of a :class:`~controller.pit.store.Store`."""

    db: Db

    def record_devices(self, devices: Sequence[DeviceIn], now: float) -> None:
        """Devices' retained messages, in one transaction (of several messages of one device,
        the last taken counts)."""
        rows = last_per_key([(d.table, d.device, d.ts, d.body, now) for d in devices], 2)
        if not rows:
            return
        with self.db.transaction():
            self.db.changed({str(row[0]) for row in rows})  # announced with the commit
            self.db.insert(
                "devices",
                DEVICE_COLUMNS,
                rows,
                "ON CONFLICT (table_id, device) DO UPDATE SET "
                "body = excluded.body, received_at = excluded.received_at, "
                "ts = CASE WHEN excluded.body IS NULL THEN devices.ts ELSE excluded.ts END "
                "WHERE (excluded.body IS NOT NULL AND (excluded.ts > devices.ts "
                "OR excluded.ts = '')) OR (excluded.body IS NULL AND devices.ts <= excluded.ts)",
            )

    def devices(self, table: str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
        """table → device → its health as it retained it (``table``: that table's only)."""
        where, params = ("AND table_id = ? ", (table,)) if table is not None else ("", ())
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for name, device, body in self.db.all(
            f"SELECT table_id, device, body FROM devices WHERE body IS NOT NULL {where}"  # noqa: S608
            "ORDER BY table_id, device",
            params,
        ):
            try:
                loaded = json.loads(body)
            except ValueError:
                continue
            if isinstance(loaded, dict):
                out.setdefault(name, {})[device] = loaded
        return out

"""Storage confirmation: the pit tells each table how far it has stored its journal.

A table keeps its journal until the pit has stored it (design: closed hands are pruned only once
the pit has them). Every ``confirm_interval`` seconds this process reads each epoch's contiguous
watermark from the store, the ``seq`` such that every event of the epoch numbered 1 to ``seq``
is committed on every stream the pit takes (never past a gap: the gap scan of
:mod:`controller.pit.repair` moves the mark only over stored events), and sends a table whose
watermark advanced a signed request, as it signs its ``replay`` requests, on
``{prefix}/{table}/request/stored``::

    {"transaction": "stored-pit-1-…", "pit": "pit-1", "epoch": "3f9c…", "seq": 1234,
     "auth": {…}}

A table that comes (back) online (a new birth on its status topic) is told at once, whatever was
sent before. In a share group each table's advances are sent by one member, the one presence
names for it (:meth:`controller.pit.presence.Presence.confirms`): the requests a round sends do
not grow with the group. Should two members send (their views of who is live differ for a
moment), the table keeps the highest. The answer on ``response/stored`` is logged and counted
when it is not ``ok``; it is never fatal, and the next advance is confirmed all the same.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import structlog

from controller.mqtt import MqttError
from controller.pit.batches import Applied
from controller.pit.config import PitConfig
from controller.pit.metrics import PitMetrics
from controller.pit.store import Store
from controller.pit.worker import StoreWorker
from controller.signing import Signer

log = structlog.get_logger("tablectl.pit.confirm")

VERB = "stored"
#: Requests whose answer never came are forgotten beyond this many (the next advance asks again).
MAX_WAITING = 10_000

Publish = Callable[[str, bytes], Awaitable[None]]


class Confirmer:
    """Sends each table its stored watermark when it advanced, and when the table comes online."""

    def __init__(
        self,
        config: PitConfig,
        worker: StoreWorker,
        metrics: PitMetrics,
        publish: Publish,
        signer: Signer | None,
        mine: Callable[[str], bool] = lambda _table: True,
    ) -> None:
        """``mine(table)``: whether this process is the one that tells ``table`` its advances
        (every table, alone)."""
        self.config = config
        self.mine = mine
        self.worker = worker
        self.metrics = metrics
        self.publish = publish
        self.signer = signer
        self.streams = ("public", "secure") if config.pit.secure else ("public",)
        self._sent: dict[tuple[str, str], int] = {}  # (table, epoch) → the seq last confirmed
        self._due: set[str] = set()  # tables that came online: told at once
        self._wake = asyncio.Event()
        self._waiting: dict[str, tuple[str, str, int]] = {}  # transaction → what it confirmed

    async def run(self) -> None:
        """Confirm for ever: every ``confirm_interval`` seconds, and at once for a table that
        came online."""
        interval = self.config.pit.confirm_interval
        next_round = time.monotonic() + interval
        while True:
            remaining = next_round - time.monotonic()
            if remaining > 0 and not self._due:
                try:
                    async with asyncio.timeout(remaining):
                        await self._wake.wait()
                except TimeoutError:
                    pass
            self._wake.clear()
            due, self._due = self._due, set()
            every = time.monotonic() >= next_round
            if every:
                next_round = time.monotonic() + interval
            try:
                await self.confirm_once(due=due, advanced=every)
            except Exception:
                log.exception("pit.confirm.failed")

    def on_commit(self, applied: Applied) -> None:
        """After each commit: a table with a new birth is told at once."""
        if applied.came_online:
            self._due.update(applied.came_online)
            self._wake.set()

    async def confirm_once(self, *, due: set[str] | None = None, advanced: bool = True) -> int:
        """Send the watermarks that advanced (``advanced``) and those of the ``due`` tables;
        how many requests went out."""
        due = due or set()
        marks = await self.worker.call(Store.watermarks, self.streams)
        todo = [
            (table, epoch, seq)
            for table, epoch, seq, online in marks
            # a table that came online is told whatever was sent before (by every member: it
            # is rare, and the table learns at once); an advance by the table's own member
            if table in due
            or (
                advanced and online and self._sent.get((table, epoch), 0) < seq and self.mine(table)
            )
        ]
        # sent together: their acknowledgements come in one read, not one turn of the loop each
        done = await asyncio.gather(*(self._send(table, epoch, seq) for table, epoch, seq in todo))
        return sum(done)

    async def _send(self, table: str, epoch: str, seq: int) -> bool:
        pit_id = self.config.pit.id
        transaction = f"{VERB}-{pit_id}-{uuid.uuid4().hex[:12]}"
        body: dict[str, Any] = {
            "transaction": transaction,
            "pit": pit_id,
            "epoch": epoch,
            "seq": seq,
        }
        if self.signer is not None:
            body = Signer(self.signer.private, self.signer.key_id, table).sign(VERB, body)
        topic = f"{self.config.broker.prefix}/{table}/request/{VERB}"
        try:
            await self.publish(topic, json.dumps(body).encode())
        except MqttError as exc:
            log.warning("pit.confirm.not_sent", table=table, error=str(exc))
            return False
        self._sent[(table, epoch)] = max(self._sent.get((table, epoch), 0), seq)
        self._waiting[transaction] = (table, epoch, seq)
        if len(self._waiting) > MAX_WAITING:
            for stale in list(self._waiting)[: MAX_WAITING // 10]:
                del self._waiting[stale]
        self.metrics.confirms_sent.inc()
        log.debug("pit.confirm.sent", table=table, epoch=epoch, seq=seq)
        return True

    def on_response(self, table: str, body: Mapping[str, Any]) -> None:
        """A table answered a ``stored`` request (anyone's: this process counts its own)."""
        transaction = body.get("transaction")
        asked = self._waiting.pop(transaction, None) if isinstance(transaction, str) else None
        if asked is None:
            return
        status = "ok" if body.get("status") == "ok" else "error"
        self.metrics.confirms_answered.labels(status=status).inc()
        if status != "ok":
            _, epoch, seq = asked
            error = str(body.get("error") or "refused")[:300]
            log.warning("pit.confirm.refused", table=table, epoch=epoch, seq=seq, error=error)

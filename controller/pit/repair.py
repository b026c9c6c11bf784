"""Gap repair: ask a table to replay the events the pit never received.

Every ``scan`` seconds each pit process looks, for every table, epoch and stream, at the seqs
stored: it advances the stream's contiguous mark (every seq up to it is stored) and lists the
ranges missing above it, up to the highest seq stored or the highest the table said it has
published (its retained state's ``seq``). A range missing for ``after`` seconds (the other pit
processes of the share group may simply not have committed it yet) becomes a gap in the store;
one process claims it (the claim is an update of the gap's row: the other processes see it taken)
and sends the table a signed ``replay`` request for it, ``chunk`` seqs at most. The replayed
events come on ``{prefix}/{table}/replay/{pit}`` into the same ingest; once every seq of the gap is
stored it is closed as repaired. A gap whose answer does not come is asked again every ``retry``
seconds; one the table cannot replay (an epoch or seqs its journal never had, pruned) is marked
``lost`` with the table's reason, and every gap asked ``attempts`` times or lost is counted
unrepaired.
Gaps stay visible (``GET /api/gaps``, ``open_gaps`` in ``GET /api/tables``) until repaired.

A scan reads the store only when it may find something: after this process committed (events,
or a table's retained state that says how far it has published), while holes or gaps are open,
while a member is away, and at least every ``QUIET_SCANS`` scans whatever happened. A hole is
made by a commit, and whoever committed scans next; a member that dies first is heard away,
which scans at once. An idle pit then costs nothing a second for its scans.

When another member of the share group is heard away (:mod:`controller.pit.presence`), what it
held is nobody's: the gaps it claimed are released (:meth:`Repairer.member_lost`) and a scan
runs at once, and as long as a member is away every hole is asked for as soon as a scan sees it,
without waiting ``after`` (the seqs were not late at another process: they wait in the away
member's session).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from controller.aio import next_tick
from controller.mqtt import MqttError
from controller.pit.config import PitConfig
from controller.pit.metrics import PitMetrics
from controller.pit.store import Gap, Store
from controller.pit.worker import StoreWorker
from controller.signing import Signer

log = structlog.get_logger("tablectl.pit.repair")

Hole = tuple[int, int, float]  # first, last, since when it is missing

#: An idle process still reads the store every this many scans (a safety net: another
#: member's holes are that member's to find, and its death is heard).
QUIET_SCANS = 10


@dataclass(frozen=True)
class Ask:
    """One replay request to send."""

    gap: Gap
    from_seq: int
    to_seq: int


class Repairer:
    """Finds gaps, claims them, asks the tables, and records their answers."""

    def __init__(
        self,
        config: PitConfig,
        worker: StoreWorker,
        metrics: PitMetrics,
        publish: Any,
        signer: Signer | None,
    ) -> None:
        self.config = config
        self.worker = worker
        self.metrics = metrics
        self.publish = publish  # async (topic, payload) -> None
        self.signer = signer
        self._seen: dict[tuple[str, str, str], list[Hole]] = {}
        self._asked: dict[str, Ask] = {}  # transaction → what it asked
        #: the members of the share group away now (controller/pit/presence.py)
        self.away: Callable[[], list[str]] = list
        self._lost: set[str] = set()  # members heard away whose claims are not released yet
        self._wake = asyncio.Event()
        self._committed = True  # something committed since the last scan read the store
        self._open = True  # the last scan saw holes or gaps
        self._quiet = 0  # scans skipped in a row
        if signer is None:
            log.warning(
                "pit.repair.unsigned",
                detail="no [security] key: replay requests go unsigned, and a table that takes "
                "signed requests only refuses them; gaps stay open",
            )

    async def run(self) -> None:
        """Scan for gaps for ever (at once when a member is heard away)."""
        while True:
            try:
                if self.due():
                    await self.scan_once()
            except Exception:
                log.exception("pit.repair.scan_failed")
            with contextlib.suppress(TimeoutError):
                now = asyncio.get_running_loop().time()
                async with asyncio.timeout_at(next_tick(now, self.config.repair.scan)):
                    await self._wake.wait()
            self._wake.clear()

    def on_commit(self, _applied: object) -> None:
        """After each commit of this process: the next scan reads the store."""
        self._committed = True

    def due(self) -> bool:
        """Whether this scan may find anything (else it is skipped, up to ``QUIET_SCANS``)."""
        if self._committed or self._open or self._lost or self.away():
            return True
        self._quiet += 1
        if self._quiet < QUIET_SCANS:
            return False
        self._quiet = 0
        return True

    def member_lost(self, pit: str) -> None:
        """Member ``pit`` of the share group is away: its claims are released and a scan runs
        now."""
        self._lost.add(pit)
        self._wake.set()

    async def scan_once(self) -> list[Ask]:
        """One scan: track the gaps, ask for those due; what was asked."""
        lost, self._lost = self._lost, set()
        committed, self._committed, self._quiet = self._committed, False, 0
        try:
            asks = await self.worker.call(self._scan, time.time(), lost, bool(self.away()))
        except BaseException:
            self._lost |= lost  # released by the next scan
            self._committed |= committed
            raise
        for ask in asks:
            await self._ask(ask)
        counts = await self.worker.call(Store.gap_counts, self.config.repair.attempts)
        self._open = bool(counts["open"]) or any(self._seen.values())
        self.metrics.gaps_open.set(counts["open"])
        self.metrics.gaps_unrepaired.set(counts["unrepaired"])
        return asks

    def _scan(
        self, store: Store, now: float, lost: set[str] | None = None, urgent: bool = False
    ) -> list[Ask]:
        """``lost``: members heard away since the last scan, whose claims go; ``urgent``: a
        member is away, so a hole is not waited for."""
        repair = self.config.repair
        after = 0.0 if urgent else repair.after
        if lost:
            released = store.release_gaps(lost)
            self.metrics.gaps_released.inc(released)
            log.warning("pit.repair.released", members=sorted(lost), gaps=released)
        behind = store.streams_behind()
        with_gaps = {(g.table_id, g.epoch, g.stream) for g in store.open_gaps()}
        keys = {(t, e, s) for t, e, s, _, _ in behind} | with_gaps
        ends = {(t, e, s): (c, end) for t, e, s, c, end in behind}
        seen: dict[tuple[str, str, str], list[Hole]] = {}
        asks: list[Ask] = []
        found: dict[tuple[str, str, str], list[tuple[int, int]]] = {}
        marks = []
        for key in sorted(ends):
            contiguous, end = ends[key]
            mark, found[key] = store.find_holes(*key, contiguous, end)
            if mark > contiguous:
                marks.append((*key, mark))
        store.advance(marks)  # one transaction for the scan's marks
        for key in sorted(keys):
            table, epoch, stream = key
            holes = found.get(key, [])
            aged = self._age(key, holes, now)
            seen[key] = aged
            old = [(a, b) for a, b, since in aged if now - since >= after]
            if not old and key not in with_gaps:
                continue
            young = [(a, b) for a, b, since in aged if now - since < after]
            gaps = store.track_holes(table, epoch, stream, old, now, keep=young)
            for gap in gaps:
                if gap.state == "lost" or now - gap.first_seen < after:
                    continue
                wait = repair.retry * min(max(gap.attempts, 1), 6)
                if gap.asked_at is not None and now - gap.asked_at < wait:
                    continue
                if store.claim_gap(gap, self.config.pit.id, now, wait):
                    last = min(gap.to_seq, gap.from_seq + repair.chunk - 1)
                    asks.append(Ask(gap, gap.from_seq, last))
        self._seen = seen
        return asks

    def _age(
        self, key: tuple[str, str, str], holes: list[tuple[int, int]], now: float
    ) -> list[Hole]:
        """Each hole with the time its oldest overlapping hole was first seen missing."""
        before = self._seen.get(key, [])
        aged = []
        for first, last in holes:
            since = min(
                (s for a, b, s in before if a <= last and first <= b),
                default=now,
            )
            aged.append((first, last, since))
        return aged

    async def _ask(self, ask: Ask) -> None:
        gap = ask.gap
        transaction = f"replay-{self.config.pit.id}-{uuid.uuid4().hex[:12]}"
        body: dict[str, Any] = {
            "transaction": transaction,
            "pit": self.config.pit.id,
            "epoch": gap.epoch,
            "from_seq": ask.from_seq,
            "to_seq": ask.to_seq,
            "stream": gap.stream,
        }
        if self.signer is not None:
            body = Signer(self.signer.private, self.signer.key_id, gap.table_id).sign(
                "replay", body
            )
        topic = f"{self.config.broker.prefix}/{gap.table_id}/request/replay"
        try:
            await self.publish(topic, json.dumps(body).encode())
        except MqttError as exc:
            log.warning("pit.replay.not_sent", table=gap.table_id, error=str(exc))
            return
        self._asked[transaction] = ask
        self.metrics.replays_asked.inc()
        log.info(
            "pit.replay.asked",
            table=gap.table_id,
            epoch=gap.epoch,
            stream=gap.stream,
            from_seq=ask.from_seq,
            to_seq=ask.to_seq,
            attempt=gap.attempts + 1,
        )
        # forget requests whose answer never came (they are asked again)
        if len(self._asked) > 10_000:
            for stale in list(self._asked)[:1000]:
                del self._asked[stale]

    def on_response(self, table: str, body: Mapping[str, Any]) -> None:
        """A table answered a replay request (anyone's: only this process's count)."""
        transaction = body.get("transaction")
        ask = self._asked.pop(transaction, None) if isinstance(transaction, str) else None
        if ask is None:
            return
        status = "ok" if body.get("status") == "ok" else "error"
        self.metrics.replays_answered.labels(status=status).inc()
        data = body.get("data") if isinstance(body.get("data"), dict) else {}
        assert isinstance(data, dict)
        error = body.get("error")
        log.info(
            "pit.replay.answered",
            table=table,
            status=status,
            sent=data.get("sent"),
            missing=data.get("missing"),
            error=error,
        )
        task = asyncio.get_running_loop().create_task(self._record(ask, status, data, error))
        task.add_done_callback(_log_failure)

    async def _record(self, ask: Ask, status: str, data: Mapping[str, Any], error: Any) -> None:
        gap = ask.gap
        if status == "error":
            reason = str(error)[:300] if error else "refused"
            if _unrepairable(reason):
                await self.worker.call(Store.mark_gap, gap.id, "lost", reason)
            else:  # refused (a key, a rate limit…): asked again after the retry delay
                await self.worker.call(Store.mark_gap, gap.id, "asked", reason)
            return
        last = data.get("last_seq")
        if isinstance(last, int):
            await self.worker.call(
                Store.record_known_last, gap.table_id, gap.epoch, gap.stream, last
            )
        missing = data.get("missing")
        if isinstance(missing, list) and missing:
            ranges = ", ".join(f"{r[0]}-{r[1]}" for r in missing if isinstance(r, list))
            reason = f"not in the table's journal: {ranges}"
            await self.worker.call(Store.mark_gap, gap.id, "lost", reason)


def _unrepairable(reason: str) -> bool:
    """Whether a table's refusal says the range can never be replayed: an epoch its journal
    never had, or seqs past the epoch's last event (controller/shell/replay.py)."""
    return "not this journal's" in reason or "goes past its last" in reason


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("pit.replay.record_failed", error=repr(task.exception()))

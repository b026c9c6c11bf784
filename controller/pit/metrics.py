"""The pit's Prometheus metrics (``GET /metrics``).

Events stored per table (``rate(tablectl_pit_events_stored_total[1m])`` is events/s per table),
the delay from an event's time to its commit (``lag``), duplicates dropped, refused messages,
commits, gaps open and unrepaired, replays asked and answered, stored confirmations sent and
answered, the other pit processes heard away and the takeover of their share, and whether the
broker is connected. Each pit process has its own registry: a test can run several in one
interpreter.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from controller.pit.batches import Applied, Batch, event_age

LAG_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


class PitMetrics:
    """Every metric of one pit process."""

    def __init__(self, pit_id: str) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        labels = {"pit": pit_id}
        r = self.registry
        self.events_stored = Counter(
            "tablectl_pit_events_stored",
            "Event views stored for the first time, by table",
            ["table"],
            registry=r,
        )
        self.duplicates = Counter(
            "tablectl_pit_duplicates",
            "Event views delivered again and dropped (already stored)",
            registry=r,
        )
        self.rejected = Counter(
            "tablectl_pit_messages_rejected",
            "Messages that were not what their topic carries",
            registry=r,
        )
        self.messages = Counter(
            "tablectl_pit_messages", "Messages committed and acknowledged", registry=r
        )
        self.commits = Counter("tablectl_pit_commits", "Batches committed", registry=r)
        self.store_retries = Counter(
            "tablectl_pit_store_retries", "Commits tried again (a lock, a deadlock)", registry=r
        )
        self.commit_seconds = Histogram(
            "tablectl_pit_commit_seconds", "Seconds one batch took to commit", registry=r
        )
        self.lag = Histogram(
            "tablectl_pit_lag_seconds",
            "Seconds from a live event's time at the table to its commit in the pit",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.gaps_open = Gauge("tablectl_pit_gaps_open", "Gaps not repaired yet", registry=r)
        self.gaps_unrepaired = Gauge(
            "tablectl_pit_gaps_unrepaired",
            "Gaps the table could not replay, or asked for many times",
            registry=r,
        )
        self.replays_asked = Counter(
            "tablectl_pit_replays_asked", "Replay requests sent to tables", registry=r
        )
        self.replays_answered = Counter(
            "tablectl_pit_replays_answered",
            "Replay requests answered, by status",
            ["status"],
            registry=r,
        )
        self.replayed_events = Counter(
            "tablectl_pit_replayed_events", "Event views stored from replays", registry=r
        )
        self.confirms_sent = Counter(
            "tablectl_pit_confirms_sent",
            "Stored confirmations (stored requests) sent to tables",
            registry=r,
        )
        self.confirms_answered = Counter(
            "tablectl_pit_confirms_answered",
            "Stored confirmations answered, by status (error: logged, never fatal)",
            ["status"],
            registry=r,
        )
        self.members_away = Gauge(
            "tablectl_pit_members_away",
            "Other pit processes of the share group heard away (their Will, or their stop)",
            registry=r,
        )
        self.members_lost = Counter(
            "tablectl_pit_members_lost",
            "Times another pit process of the share group was heard going away",
            registry=r,
        )
        self.takeover = Gauge(
            "tablectl_pit_takeover",
            "1 while this process subscribes to every table's events for an away member",
            registry=r,
        )
        self.gaps_released = Counter(
            "tablectl_pit_gaps_released",
            "Gaps an away member had claimed, let go to be asked again at once",
            registry=r,
        )
        self.connected = Gauge(
            "tablectl_pit_broker_connected", "1 while connected to the broker", registry=r
        )
        self.info = Gauge("tablectl_pit_info", "This pit process", ["pit"], registry=r)
        self.info.labels(**labels).set(1)

    def committed(self, batch: Batch, applied: Applied) -> None:
        """Count one committed batch."""
        self.commits.inc()
        self.messages.inc(len(batch.acks))
        self.rejected.inc(len(batch.rejects))
        self.duplicates.inc(applied.duplicates + batch.copies)
        for table, count in applied.stored.items():
            self.events_stored.labels(table=table).inc(count)
        for event in applied.stored_events:
            if event.source == "replay":
                self.replayed_events.inc()
            elif event.stream == "public":
                age = event_age(event.ts, applied.committed_at)
                if age is not None:
                    self.lag.observe(max(age, 0.0))

    def text(self) -> bytes:
        """The exposition text."""
        return generate_latest(self.registry)

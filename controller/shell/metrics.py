"""Prometheus metrics of the daemon (``[metrics]``; off by default, on localhost when on).

What an operator graphs and alerts on, scraped from ``http://HOST:PORT/metrics``:

* ``tablectl_device_health{device,tablectl_device_health=…}`` — each device's health (1 for the
  current one: online, stale, reconnecting, failed, rejected, unknown);
* ``tablectl_link_retransmits_total{device}`` and the other counters of a TSP/1 link
  (``…_crc_errors_total``, ``…_naks_received_total``) — a flaky cable or device;
* ``tablectl_outbox_messages`` — messages journaled and not yet acknowledged by the broker;
* ``tablectl_journal_bytes``, ``tablectl_disk_free_bytes``, ``tablectl_journal_degraded`` (1
  while a full disk stops the table) and ``tablectl_disk_low`` (1 below the watermark);
* ``tablectl_integrity_alarms`` (integrity alarms raised, until maintenance accepts the journal)
  and ``tablectl_journal_held`` (1 while one holds the table);
* ``tablectl_events_total`` — events journaled (``rate()`` of it is events a second);
* ``tablectl_open_holds`` — rulings the table is waiting on;
* ``tablectl_command_seconds{status}`` — from a request's arrival to its answer (histogram).

Everything is kept on the event loop's thread; the HTTP server (prometheus-client's, on a
thread of its own) reads the values, and the link counters, which are plain integers, when it is
scraped. The outbox depth is a query on the journal's thread, refreshed every ``interval``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping
from typing import Any
from wsgiref.simple_server import WSGIServer

import structlog
from prometheus_client import CollectorRegistry, Counter, Enum, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import start_http_server
from prometheus_client.registry import Collector

from controller.shell.integrity import Integrity
from controller.shell.retention import Retention
from controller.shell.space import JournalSpace
from controller.shell.writer import JournalWriter
from drivers.contract import Device
from drivers.tsp.stats import LinkStats

log = structlog.get_logger("tablectl.metrics")

HEALTHS = ["online", "stale", "reconnecting", "failed", "rejected", "unknown"]
#: Seconds: a console's answer within a few milliseconds, a busy table's within a second.
LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
LINK_COUNTERS = {
    "retransmits": "frames the device sent again, unacknowledged",
    "crc_errors": "frames dropped for a bad checksum",
    "naks_received": "frames the device refused",
    "duplicate_events": "events delivered again and recognised",
}


def link_stats(device: Device) -> LinkStats | None:
    """The TSP/1 link counters of a device that has them (shuffler, TSP/1 reader)."""
    stats = getattr(device, "stats", None)
    return stats if isinstance(stats, LinkStats) else None


class _Live(Collector):
    """What is read when scraped: the journal's disk and integrity, the devices' link counters."""

    def __init__(
        self,
        space: JournalSpace,
        devices: Mapping[str, Device],
        integrity: Integrity | None,
        retention: Retention | None,
    ) -> None:
        self.space = space
        self.devices = devices
        self.integrity = integrity
        self.retention = retention

    def collect(self) -> Iterator[Any]:
        space = self.space
        yield GaugeMetricFamily(
            "tablectl_journal_bytes", "the journal's database, WAL and shared memory", space.size
        )
        yield GaugeMetricFamily(
            "tablectl_disk_free_bytes", "free on the journal's file system", max(space.free, 0)
        )
        yield GaugeMetricFamily(
            "tablectl_journal_degraded",
            "1 while the journal's disk is full and the table takes no input",
            int(space.full),
        )
        yield GaugeMetricFamily(
            "tablectl_disk_low", "1 while the free space is below the watermark", int(space.low)
        )
        integrity = self.integrity
        yield GaugeMetricFamily(
            "tablectl_integrity_alarms",
            "integrity alarms raised (until maintenance accepts the journal)",
            len(integrity.alarms) if integrity is not None else 0,
        )
        yield GaugeMetricFamily(
            "tablectl_journal_held",
            "1 while an integrity alarm holds the table (it waits for maintenance)",
            int(integrity is not None and integrity.held),
        )
        yield from self._retention()
        for name, text in LINK_COUNTERS.items():
            family = CounterMetricFamily(f"tablectl_link_{name}", text, labels=["device"])
            for device_id, device in self.devices.items():
                stats = link_stats(device)
                if stats is not None:
                    family.add_metric([device_id], getattr(stats, name))
            yield family

    def _retention(self) -> Iterator[Any]:
        """The journal's bytes as the last retention round found them."""
        if self.retention is None:
            return
        last = self.retention.last
        yield GaugeMetricFamily(
            "tablectl_journal_live_bytes", "the live database, WAL and shared memory",
            last.live_bytes,
        )  # fmt: skip
        yield GaugeMetricFamily(
            "tablectl_journal_segment_bytes", "archive segments on the local disk",
            last.segment_bytes,
        )  # fmt: skip
        family = GaugeMetricFamily(
            "tablectl_journal_segments", "archive segments by state", labels=["state"]
        )
        for state, count in last.by_state.items():
            family.add_metric([state], count)
        yield family
        yield GaugeMetricFamily(
            "tablectl_journal_waiting_bytes",
            "local segments not yet confirmed by the pit nor archived",
            last.waiting_bytes,
        )


class Metrics:
    """The daemon's metrics, in a registry of their own (several daemons share a test process)."""

    def __init__(
        self,
        space: JournalSpace,
        devices: Mapping[str, Device],
        interval: float = 2.0,
        integrity: Integrity | None = None,
        retention: Retention | None = None,
    ) -> None:
        self.registry = CollectorRegistry()
        self.interval = interval
        registry = self.registry
        self.events = Counter("tablectl_events", "events journaled", registry=registry)
        self.command_seconds = Histogram(
            "tablectl_command_seconds",
            "from a request's arrival to its answer",
            ["status"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.device_health = Enum(
            "tablectl_device_health",
            "each device's health",
            ["device"],
            states=HEALTHS,
            registry=registry,
        )
        self.outbox = Gauge(
            "tablectl_outbox_messages", "journaled, not yet acknowledged by the broker",
            registry=registry,
        )  # fmt: skip
        self.holds = Gauge("tablectl_open_holds", "rulings the table waits on", registry=registry)
        registry.register(_Live(space, devices, integrity, retention))
        for device_id in devices:
            self.device_health.labels(device_id).state("unknown")
        self._server: tuple[WSGIServer, threading.Thread] | None = None

    def health(self, device: str, health: str | None) -> None:
        """A device's health changed."""
        self.device_health.labels(device).state(health if health in HEALTHS else "unknown")

    def serve(self, host: str, port: int) -> bool:
        """Listen on ``host:port``; False (logged) when the address cannot be had: the table
        runs on without its metrics rather than not at all."""
        try:
            self._server = start_http_server(port, host, registry=self.registry)
        except OSError as exc:
            log.error("metrics.not_listening", host=host, port=port, error=str(exc))
            return False
        log.info("metrics.listening", host=host, port=port)
        return True

    async def refresh(self, writer: JournalWriter) -> None:
        """Every ``interval`` seconds, what needs the journal's thread: the outbox's depth."""
        while True:
            self.outbox.set(await writer.call(writer.journal.pending_count))
            await asyncio.sleep(self.interval)

    def close(self) -> None:
        """Stop listening."""
        if self._server is not None:
            server, thread = self._server
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)
            self._server = None

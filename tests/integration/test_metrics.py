"""The Prometheus endpoint of a running daemon, scraped over HTTP after a hand on real devices.

The TSP/1 shuffler simulator on a pty (its link counters are exported) and a reader source, as
in ``test_shuffler_daemon.py``; ``[metrics]`` on a free port of localhost.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.broker import free_port
from tests.integration.conftest import Collector
from tests.integration.test_shuffler_daemon import (
    Readers,
    ShufflerSim,
    deal_with_hands,
    devices,
    play,
    readers,
)

pytestmark = pytest.mark.broker

__all__ = ["readers"]  # the fixture


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(port: int) -> Samples:
    """Every sample of the endpoint: (name, labels) → value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


async def test_a_running_daemon_serves_its_metrics_on_localhost(
    tmp_path: Path, daemon_factory: Any, broker: Any, readers: Readers
) -> None:
    port = free_port()
    sim = ShufflerSim(tmp_path, "--seed", "5")
    try:
        daemon = daemon_factory(
            devices=devices(sim, readers),
            sections=f"[metrics]\nenabled = true\nport = {port}\n",
        )
        async with Collector(broker, daemon.topics) as collector:
            daemon.start()
            before = await asyncio.to_thread(scrape, port)
            hands = asyncio.create_task(deal_with_hands(collector, readers))
            try:
                await play(daemon, broker.port, hands=1)
            finally:
                hands.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await hands
            after = await asyncio.to_thread(scrape, port)
        assert daemon.kill(signal.SIGTERM) == 0
    finally:
        sim.stop()

    assert value(after, "tablectl_events_total") > value(before, "tablectl_events_total") + 20
    assert value(after, "tablectl_command_seconds_count", status="ok") >= 4  # a hand's requests
    assert value(after, "tablectl_command_seconds_bucket", status="ok", le="+Inf") >= 4
    online = {"device": "shuffler", "tablectl_device_health": "online"}
    assert value(after, "tablectl_device_health", **online) == 1
    failed = {"device": "shuffler", "tablectl_device_health": "failed"}
    assert value(after, "tablectl_device_health", **failed) == 0
    assert value(after, "tablectl_link_retransmits_total", device="shuffler") >= 0
    assert ("tablectl_link_retransmits_total", (("device", "reader"),)) not in after  # no link
    assert value(after, "tablectl_journal_bytes") > 4096
    assert value(after, "tablectl_disk_free_bytes") > 0
    assert value(after, "tablectl_journal_degraded") == 0
    assert value(after, "tablectl_outbox_messages") >= 0
    assert value(after, "tablectl_open_holds") == 0
    assert value(after, "tablectl_disk_low") in (0, 1)

"""The metrics of one daemon: off by default, a registry of its own, a taken port no crash."""

from __future__ import annotations

import socket
from pathlib import Path

from prometheus_client import generate_latest

from controller.config import MetricsSection
from controller.decks import load_deck
from controller.shell.metrics import Metrics
from controller.shell.space import JournalSpace
from drivers.contract import DeviceContext
from drivers.virtual import VirtualTable


def test_metrics_are_off_by_default_and_on_localhost_when_on() -> None:
    section = MetricsSection()
    assert section.enabled is False
    assert section.host == "127.0.0.1"


def test_each_daemon_has_its_own_registry_and_a_taken_port_is_logged_not_fatal(
    tmp_path: Path,
) -> None:
    device = VirtualTable.from_options("shuffler", {}, DeviceContext("T1", load_deck("house-a")))
    first = Metrics(JournalSpace(tmp_path / "a.sqlite"), {"shuffler": device})
    second = Metrics(JournalSpace(tmp_path / "b.sqlite"), {})
    first.events.inc(3)
    assert b"tablectl_events_total 3.0" in generate_latest(first.registry)
    assert b"tablectl_events_total 0.0" in generate_latest(second.registry)
    text = generate_latest(first.registry).decode()
    assert 'tablectl_device_health{device="shuffler",tablectl_device_health="unknown"} 1.0' in text
    assert "tablectl_link_retransmits_total{" not in text  # the virtual table has no link
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        assert first.serve("127.0.0.1", taken.getsockname()[1]) is False
    first.close()

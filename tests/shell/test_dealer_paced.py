"""A dealer-paced table, a table without a broker, and the local console socket.

``[table] dispense = "dealer"``: the dealer runs the shuffler from its keypad, so the daemon asks
it for nothing. ``[broker] enabled = false``: the events stay in the journal. ``[daemon]
console``: dealer requests as JSON lines on a Unix socket, answered like MQTT requests.
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controller.config import ConfigError, parse_config
from controller.decks import load_deck
from controller.profiles import load_profile
from controller.shell.console import answer
from controller.shell.daemon import Daemon
from controller.shell.dispatch import Dispatch, Planner
from controller.shell.table import initial_state
from controller.table.engine import apply
from controller.table.inputs import StartHand
from simulators.rig.console import SocketConsole
from tests.shell.inprocess import Running
from tests.waiting import until

TABLE: dict[str, Any] = {"id": "T1", "stacks": {"1": 50, "2": 50, "3": 50}, "button": 3}


def genesis(**more: Any) -> dict[str, Any]:
    return {"table_id": "T1", "profile": "rrop-cash", "stacks": {"1": 50, "2": 50},
            "button": 1, "blinds": [1, 2], **more}  # fmt: skip


def started() -> Any:
    state = initial_state(genesis(), load_profile("rrop-cash"), load_deck("house-a"))
    state, _ = apply(state, StartHand(datetime.now(UTC)))
    return state


def test_a_host_paced_table_asks_for_a_shuffle_and_a_dealer_paced_one_does_not() -> None:
    state = started()
    assert [need.kind for need, _ in Planner("shuffler").plan(state, [])] == ["shuffle"]
    assert Planner("shuffler", host_paced=False).plan(state, []) == []


def test_a_dealer_paced_table_resends_nothing_a_host_paced_run_journaled() -> None:
    state = started()
    need = Planner("shuffler").plan(state, [])[0][0]
    planner = Planner("shuffler", host_paced=False)
    planner.adopt([Dispatch(1, "shuffler", need, None)], state)
    assert planner.outstanding == {}
    host = Planner("shuffler")
    host.adopt([Dispatch(1, "shuffler", need, None)], state)
    assert list(host.outstanding) == [need]


def test_the_settle_time_and_the_other_decks_come_with_the_table() -> None:
    state = initial_state(genesis(settle=10.0), load_profile("rrop-cash"), load_deck("house-a"))
    assert state.settle == 10.0
    assert state.other_decks  # house-b's cards are known as another deck's
    assert {deck for deck, _ in state.other_decks.values()} == {"house-b"}
    old = initial_state(genesis(), load_profile("rrop-cash"), load_deck("house-a"))
    assert old.settle == 3.0  # a journal begun before the setting existed


def test_the_new_keys_are_validated_and_named() -> None:
    config = parse_config(
        {
            "table": {**TABLE, "blinds": [1, 2], "dispense": "dealer", "settle": 10},
            "broker": {"enabled": False},
            "security": {"require_signed": False},
            "daemon": {"console": "/run/tablectl/console.sock"},
        }
    )
    assert config.table.dispense == "dealer"
    assert config.table.genesis()["settle"] == 10.0
    assert not config.broker.enabled
    assert config.daemon.console == Path("/run/tablectl/console.sock")
    with pytest.raises(ConfigError) as caught:
        parse_config({"table": {**TABLE, "blinds": [1, 2], "dispense": "sometimes", "settle": 0}})
    named = " ".join(caught.value.problems)
    assert "table.dispense" in named
    assert "table.settle" in named


async def test_console_lines_that_are_not_requests_are_answered_and_change_nothing() -> None:
    calls: list[tuple[str, bytes]] = []

    async def handle(command: str, payload: bytes) -> dict[str, Any]:
        calls.append((command, payload))
        return {"transaction": "t", "status": "ok"}

    assert "not JSON" in (await answer(b"{", handle, lambda: True))["error"]
    assert "command" in (await answer(b"[1]", handle, lambda: True))["error"]
    assert "command" in (await answer(b'{"seat": 1}', handle, lambda: True))["error"]
    starting = await answer(b'{"command": "award", "transaction": "t"}', handle, lambda: False)
    assert starting["status"] == "error"
    assert calls == []
    reply = await answer(b'{"command": "award", "transaction": "t"}', handle, lambda: True)
    assert reply["status"] == "ok"
    assert calls == [("award", b'{"transaction": "t"}')]


async def test_a_dealer_paced_table_without_a_broker_takes_requests_on_its_console(
    tmp_path: Path,
) -> None:
    sockets = Path(tempfile.mkdtemp(prefix="con"))
    config = parse_config(
        {
            "table": {**TABLE, "blinds": [1, 2], "dispense": "dealer"},
            "devices": {
                "shuffler": {
                    "driver": "virtual",
                    "seed": 3,
                    "state_file": str(tmp_path / "shuffler.json"),
                }
            },
            "broker": {"enabled": False},
            "security": {"require_signed": False},
            "journal": {"path": str(tmp_path / "journal.sqlite")},
            "daemon": {"console": str(sockets / "console.sock")},
        }
    )
    async with Running(config) as daemon:
        assert isinstance(daemon, Daemon)
        assert "no broker" in daemon.status_line()
        console = SocketConsole(sockets / "console.sock", lambda command, body: body)
        try:
            reply = await console.send("start_hand", {})
            assert reply["status"] == "ok"
            assert reply["data"]["events"][0]["type"] == "hand.started"
            again = await console.send("action", {"seat": 3, "action": "sideways"})
            assert again["status"] == "error"
            assert "action" in again["error"]
        finally:
            await console.close()
        await until(lambda: daemon.runner.state.hand is not None)
        # nobody asked the shuffler to shuffle: the dealer paces it
        assert list(daemon.writer.journal.dispatches()) == []
        assert daemon.runner.planner.outstanding == {}
    shutil.rmtree(sockets, ignore_errors=True)

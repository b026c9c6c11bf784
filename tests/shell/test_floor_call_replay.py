"""FLOOR-CALL through the shell: a floor call is a core input, journaled and replayed like every
state change, so a hand held by it is held again after a restart (docs/rules.md, FLOOR-CALL)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from pathlib import Path

from controller.authority import Authority, Role
from controller.shell.snapshot import snapshot
from controller.table.codec import input_from_json
from controller.table.engine import apply
from controller.table.inputs import CallFloor, Confirm, FloorOverride, Input
from controller.table.state import Phase, TableState
from simulators.autoplay import AutoDealer
from simulators.table_journal import endless_dealer, journal_runner
from tests.shell.inprocess import Running, config_for, now, phase, request
from tests.shell.test_replay import journaled
from tests.waiting import until

DEALER = Authority("Ann", Role.DEALER, "ann")
FLOOR = Authority("Bob", Role.FLOOR, "bob")


def with_floor_calls(dealer: AutoDealer, hands: int) -> list[Input]:
    """The dealer's hands, each with a floor call in its middle: the floor confirms the first
    hand's, overrides the next's to a misdeal, and so on (the misdealt hand is not played on)."""
    state: TableState = dealer.run.state
    inputs: list[Input] = []
    for number in range(hands):
        start = len(dealer.run.inputs)
        assert dealer.play_hand()
        played = dealer.run.inputs[start:]
        middle = len(played) // 2
        for item in played[:middle]:
            state, _ = apply(state, item)
        inputs += played[:middle]
        hand = state.hand
        assert hand is not None
        assert not hand.irregular.holds
        at = played[middle - 1].ts
        if number % 2 == 0:
            ruled: list[Input] = [CallFloor(at, "a dispute", authority=DEALER)]
            ruled.append(Confirm(at, authority=FLOOR))
            rest = played[middle:]
        else:
            ruled = [CallFloor(at, "a dispute", seat=hand.order[0], authority=DEALER)]
            ruled.append(FloorOverride(at, "FLOOR-CALL", "misdeal", authority=FLOOR))
            rest = []
        for item in [*ruled, *rest]:
            state, _ = apply(state, item)
        inputs += [*ruled, *rest]
        assert state.hand is None
        # the automatic dealer goes on from the table as the floor left it
        dealer.run.state = state
    return inputs


def test_floor_call_a_journal_with_floor_calls_replays_to_the_same_state_and_events(
    tmp_path: Path,
) -> None:
    dealer = endless_dealer("floor calls", seed=7)
    inputs = with_floor_calls(dealer, hands=4)
    path = tmp_path / "journal.sqlite"
    state = journaled(path, dealer, inputs)
    assert snapshot(state, seq=0, epoch="e") == snapshot(dealer.run.state, seq=0, epoch="e")

    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("DELETE FROM snapshots")  # replayed from the genesis, every input again

    async def replay() -> None:
        runner = journal_runner(path, dealer)
        report = runner.recover()
        assert report.diverged == []  # every input gave the events it gave the first time
        assert report.inputs == len(inputs)
        assert snapshot(runner.state, seq=0, epoch="e") == snapshot(state, seq=0, epoch="e")
        journaled = [input_from_json(row.body) for row in runner.journal.inputs(after=0)]
        assert sum(isinstance(i, CallFloor) for i in journaled) == 4
        kinds = [json.loads(row.body)["type"] for row in runner.journal.events()]
        assert kinds.count("floor.called") == 4
        assert kinds.count("hand.misdeal") == 2
        assert runner.journal.verify().ok
        await runner.writer.close()

    asyncio.run(replay())


async def test_floor_call_a_hand_held_by_a_floor_call_is_held_again_after_a_restart(
    tmp_path: Path,
) -> None:
    config = config_for(tmp_path)
    async with Running(config) as daemon:
        started = await daemon.commands.handle("start_hand", request(transaction="a"), now())
        assert started["status"] == "ok"
        await until(lambda: phase(daemon) is Phase.BETTING)
        inputs = daemon.writer.journal.counts()["inputs"]
        called = await daemon.commands.handle(
            "call_floor", request(transaction="b", reason="a dispute", seat=1), now()
        )
        assert called["status"] == "ok", called
        assert [e["type"] for e in called["data"]["events"]] == ["hand.hold", "floor.called"]
        journaled = [input_from_json(r.body) for r in daemon.writer.journal.inputs(after=inputs)]
        assert [i.reason for i in journaled if isinstance(i, CallFloor)] == ["a dispute"]
        hand = daemon.runner.state.hand
        assert hand is not None
        [hold] = hand.irregular.holds
        assert hold.rule.value == "FLOOR-CALL"
        seat = hand.chips.round.to_act if hand.chips.round is not None else None
        refused = await daemon.commands.handle(
            "action", request(transaction="c", seat=seat, action="fold"), now()
        )
        assert refused["status"] == "error"
        assert refused["error"].startswith(f"the hand is held ({hold.id}, FLOOR-CALL: a dispute)")
        before = snapshot(daemon.runner.state, seq=daemon.runner.last_seq, epoch="e")

    async with Running(config) as again:
        after = snapshot(again.runner.state, seq=before["seq"], epoch="e")
        assert after == before  # replayed: still held, for the floor to rule on
        hand = again.runner.state.hand
        assert hand is not None
        assert [h.id for h in hand.irregular.holds] == [hold.id]
        confirmed = await again.commands.handle(
            "confirm", request(transaction="d", hold=hold.id), now()
        )
        assert confirmed["status"] == "ok", confirmed
        assert "hand.resume" in [e["type"] for e in confirmed["data"]["events"]]
        folded = await again.commands.handle(
            "action", request(transaction="e", seat=seat, action="fold"), now()
        )
        assert folded["status"] == "ok", folded
        assert (await again.writer.call(again.writer.journal.verify)).ok

"""A shuffle journaled by a run that stopped before sending it is sent by the next run.

Found by the fault-injection soak (benchmarks/fault_soak.py): a daemon killed after a hand's
``start_hand`` was journaled (with the shuffle it needs) and before the command reached the
shuffler. The next start asks the shuffler where it is; it still holds the last hand's deck. A
hand's end forgets the table's deck, so the shuffle names no deck to replace, and any deck the
device reported passed for the shuffle done: the command was never sent and the hand waited for
a deck for ever, through every restart.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.shell.daemon import Daemon
from controller.shell.snapshot import snapshot
from controller.table.state import Phase, TableState
from drivers.virtual import VirtualTable
from tests.shell.inprocess import Running, config_for, now, phase, request
from tests.waiting import until


def next_step(snap: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The dealer's next request to end the hand in play (None: wait for the devices)."""
    hand = snap["hand"]
    if hand.get("holds"):
        return "confirm", {"hold": hand["holds"][0]["id"]}
    if hand["phase"] == "betting" and hand["to_act"] is not None:
        return "action", {"seat": hand["to_act"], "action": "fold"}
    if hand["phase"] == "award":
        return "award", {}
    return None


def changed(daemon: Daemon, state: TableState) -> Callable[[], bool]:
    """Whether the table is no longer in ``state``."""
    return lambda: daemon.runner.state is not state


async def finish_hand(daemon: Daemon) -> None:
    """Fold the hand in play to its end, as a dealer's console would."""
    for n in range(50):
        state = daemon.runner.state
        if state.hand is None:
            return
        step = next_step(snapshot(state, seq=daemon.runner.last_seq, epoch=""))
        if step is None:
            await until(changed(daemon, state), 30, "the devices")
            continue
        answer = await daemon.commands.handle(
            step[0], request(transaction=f"e{n}", **step[1]), now()
        )
        assert answer["status"] == "ok", answer
    raise AssertionError("the hand did not end")


async def test_a_shuffle_journaled_and_never_sent_is_sent_after_a_restart(
    tmp_path: Path,
) -> None:
    config = config_for(tmp_path)
    async with Running(config) as daemon:  # one hand, to its end: the shuffler keeps its deck
        started = await daemon.commands.handle("start_hand", request(transaction="a"), now())
        assert started["status"] == "ok"
        await until(lambda: phase(daemon) is Phase.BETTING, timeout=30)
        await finish_hand(daemon)
        device = daemon.devices.devices["shuffler"]
        assert isinstance(device, VirtualTable)
        first_deck = device._memory["shuffle_id"]
        assert first_deck >= 1

    # the next hand is started and journaled with its shuffle, and the daemon stops (is
    # killed) before its devices are even started: the command never reaches the shuffler
    stopped = Daemon(config)
    stopped.prepare()
    started = await stopped.commands.handle("start_hand", request(transaction="b"), now())
    assert started["status"] == "ok"
    assert [d.need.kind for d in stopped.runner.planner.outstanding.values()] == ["shuffle"]
    await stopped.writer.close()

    async with Running(config) as daemon:  # the shuffler still holds the last hand's deck
        device = daemon.devices.devices["shuffler"]
        assert isinstance(device, VirtualTable)
        await until(lambda: device._memory["shuffle_id"] > first_deck, 10, "the shuffle sent")
        await until(lambda: phase(daemon) is Phase.BETTING, 30, "the hand dealt")
        assert daemon.writer.journal.verify().ok

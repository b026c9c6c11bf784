"""``tablectl deck enroll``: the bookkeeping, and the command against simulated readers."""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.cards import STANDARD_DECK
from controller.decks import load_deck, load_manifest
from controller.enroll import Accepted, Enrollment, EnrollmentError, Refused, enroll
from controller.table.inputs import TagArrived, Zone
from drivers.rfid.tsp_reader.driver import TspReader
from simulators.control_client import ControlClient
from tests.tsp_reader.conftest import FAST, RigFactory

TABLECTL = [sys.executable, "-m", "controller.cli"]
DECK = [f"04e0{n:010x}" for n in range(52)]
HOUSE_B = load_deck("house-b")
FOREIGN = HOUSE_B.uid(STANDARD_DECK[0])
DECKS = Path(__file__).resolve().parents[2] / "config" / "decks"


# --------------------------------------------------------------------------- bookkeeping


@given(st.data())
def test_only_new_tags_of_this_deck_are_enrolled_in_presentation_order(data: Any) -> None:
    order = data.draw(st.permutations(STANDARD_DECK))
    known = {f"04ff{n:010x}": ("other", STANDARD_DECK[n]) for n in range(5)}
    enrollment = Enrollment("d", order, known)
    refused = 0
    for index, uid in enumerate(DECK):
        # Now and then the dealer presents a card again, or one of another deck.
        mistake = data.draw(st.sampled_from([None, "again", "foreign"]))
        if mistake == "again" and index:
            outcome = enrollment.offer(DECK[data.draw(st.integers(0, index - 1))])
        elif mistake == "foreign":
            outcome = enrollment.offer(data.draw(st.sampled_from(sorted(known))))
        else:
            outcome = None
        if outcome is not None:
            assert isinstance(outcome, Refused)
            assert enrollment.next_card == order[index]  # the position stays open
            refused += 1
        accepted = enrollment.offer(uid)
        assert accepted == Accepted(uid, order[index], index + 1)
    manifest = enrollment.manifest()
    assert {uid: manifest.card(uid) for uid in DECK} == dict(zip(DECK, order, strict=True))
    assert isinstance(enrollment.offer("04aaaaaaaaaaaa"), Refused)  # complete


def test_short_decks_and_bad_orders_are_refused() -> None:
    enrollment = Enrollment("d")
    for uid in DECK[:40]:
        enrollment.offer(uid)
    with pytest.raises(
        EnrollmentError, match=r"short deck: 40 of 52 cards enrolled \(the next card was 3s\)"
    ):
        enrollment.manifest()
    with pytest.raises(EnrollmentError, match="each of the 52 cards exactly once"):
        Enrollment("d", STANDARD_DECK[:51])
    with pytest.raises(EnrollmentError, match="each of the 52 cards exactly once"):
        Enrollment("d", (*STANDARD_DECK[:51], STANDARD_DECK[0]))
    together = Enrollment("d").together(DECK[:2])
    assert together.uids == tuple(DECK[:2])
    assert "present them again one at a time, starting with 2c" in together.reason


async def test_two_cards_arriving_together_are_both_refused(pty_rig: RigFactory) -> None:
    rig = await pty_rig(antennas=[{"antenna": 0, "zone": "enroll"}])
    enrollment = Enrollment("d")
    reports: list[object] = []
    queue: asyncio.Queue[Any] = asyncio.Queue()

    class Source:
        async def next_event(self) -> Any:
            return await queue.get()

    async def forward() -> None:
        seen = 0
        while True:
            await rig.log.wait_for(lambda e: isinstance(e, TagArrived), after=seen)
            for event in rig.log.events[seen:]:
                queue.put_nowait(event)
            seen = len(rig.log.events)

    forwarder = asyncio.create_task(forward())

    def report(item: object) -> None:
        if isinstance(item, Accepted | Refused):
            reports.append(item)

    task = asyncio.create_task(enroll(Source(), enrollment, gap=0.03, report=report))
    try:
        rig.sim(tags={0: DECK[:2]})  # two cards put down at once: the same sweep sees both
        async with asyncio.timeout(10):
            while not reports:
                await asyncio.sleep(0.01)
        assert isinstance(reports[0], Refused)
        assert set(reports[0].uids) == set(DECK[:2])
        rig.sim(tags={0: [DECK[1]]})
        rig.sim(tags={})
        await rig.sweeps(5)
        rig.sim(tags={0: [DECK[1]]})
        async with asyncio.timeout(10):
            while len(reports) < 2:
                await asyncio.sleep(0.01)
        assert reports[1] == Accepted(DECK[1], STANDARD_DECK[0], 1)
    finally:
        task.cancel()
        forwarder.cancel()
        for running in (task, forwarder):
            with contextlib.suppress(asyncio.CancelledError):
                await running


async def test_a_window_the_process_slept_through_is_watched_again() -> None:
    """The second card's frame is in before the window ends, but the process, starved by a
    busy machine, wakes only after it: the cards still arrived together."""
    gap = 0.02
    ready: list[TagArrived] = []
    calls = 0

    def arrival(uid: str) -> TagArrived:
        return TagArrived(datetime.now(UTC), "reader", Zone.parse("enroll"), uid)

    class Starved:
        async def next_event(self) -> TagArrived:
            nonlocal calls
            calls += 1
            if calls == 1:
                return arrival(DECK[0])
            if ready:
                return ready.pop()
            if calls == 2:
                time.sleep(gap * 3)  # the whole loop stalls: no timer, no read runs
                ready.append(arrival(DECK[1]))
            await asyncio.Event().wait()  # no more cards: the timeouts end the wait
            raise AssertionError("an event no one sets")

    enrollment = Enrollment("d")
    reports: list[object] = []
    await enroll(Starved(), enrollment, gap=gap, idle_timeout=0.2, report=reports.append)
    assert len(reports) == 1
    assert isinstance(reports[0], Refused)
    assert reports[0].uids == (DECK[0], DECK[1])


# --------------------------------------------------------------------------- the command


class Lines:
    """A process's output lines, with waiting for a pattern."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self.stream = stream
        self.lines: list[str] = []

    async def expect(self, pattern: str, timeout: float = 10.0) -> re.Match[str]:
        try:
            return await asyncio.wait_for(self._expect(pattern), timeout)
        except TimeoutError:
            raise AssertionError(f"no {pattern!r} in {timeout}s: {self.lines}") from None

    async def _expect(self, pattern: str) -> re.Match[str]:
        while line := (await self.stream.readline()).decode():
            self.lines.append(line)
            if found := re.search(pattern, line):
                return found
        raise AssertionError(f"output ended before {pattern!r}: {self.lines}")


async def _process(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *TABLECTL, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )


@pytest.fixture
async def processes() -> AsyncIterator[list[asyncio.subprocess.Process]]:
    started: list[asyncio.subprocess.Process] = []
    yield started
    for process in started:
        if process.returncode is None:
            process.terminate()
        # its output read to its end: an asyncio subprocess's transport closes once the process
        # exited and its pipes did; wait() returns at the exit, and a transport left open when
        # the test's loop closes is collected in a later test ("unclosed transport")
        await asyncio.wait_for(process.communicate(), 10)


def _reader_config(path: Path, **section: Any) -> Path:
    lines = ["[devices.enroll-reader]"]
    for key, value in {**section}.items():
        lines.append(
            f"{key} = {value!r}".replace("'", '"') if isinstance(value, str) else f"{key} = {value}"
        )
    lines += ["[[devices.enroll-reader.antennas]]", "antenna = 0", 'zone = "enroll"']
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


FAST_SCAN = {"scan_period_ms": 5, "arrive_n": 2, "depart_n": 2, "snapshot_ms": 500}


async def test_enroll_a_deck_from_the_tsp_reader_process_refusing_mistakes(
    tmp_path: Path, processes: list[asyncio.subprocess.Process]
) -> None:
    link, control = tmp_path / "reader", tmp_path / "reader.ctl"
    sim = await _process("sim", "rfid", "--link", str(link), "--control", str(control))
    processes.append(sim)
    assert sim.stdout is not None
    assert (await asyncio.wait_for(sim.stdout.readline(), 20)).startswith(b"/dev/pts/")
    config = _reader_config(
        tmp_path / "table.toml", driver="tsp-reader", port=str(link), **FAST_SCAN
    )
    out = tmp_path / "decks" / "test-deck.toml"
    cli = await _process(
        "deck", "enroll", "--deck-id", "test-deck", "--config", str(config), "--out", str(out),
        "--decks", str(DECKS), "--gap", "0.02", "--idle-timeout", "20",
    )  # fmt: skip
    processes.append(cli)
    assert cli.stdout is not None
    assert cli.stderr is not None
    progress, problems = Lines(cli.stdout), Lines(cli.stderr)
    await problems.expect("present 2c first")
    await problems.expect("reader enroll online")
    async with ControlClient(control) as reader:

        async def present(*uids: str) -> None:
            await reader.send({"tags": {"0": list(uids)}})

        async def lift() -> None:
            """Take every card off, and wait until the reader has seen them go."""
            await present()
            async with asyncio.timeout(10):
                while (await reader.status())["antennas"]["0"]["asserted"]:
                    await asyncio.sleep(0.01)

        for position, uid in enumerate(DECK[:10], start=1):
            await present(uid)
            await progress.expect(rf"^\s*{position}/52  {STANDARD_DECK[position - 1]}\s+{uid}$")
        await present(DECK[2])  # the dealer shows 4c again
        await problems.expect(rf"refused: UID {DECK[2]} is already enrolled as 4c \(card 3\)")
        await present(FOREIGN)  # a card of house-b slipped in
        await problems.expect(rf"refused: UID {FOREIGN} is 2c of deck house-b")
        await present(DECK[10], DECK[11])  # two cards at once
        await problems.expect("refused: 2 cards arrived together")
        await lift()  # ... so the dealer lifts them, and presents them one at a time
        for position, uid in enumerate(DECK[10:], start=11):
            await present(uid)
            await progress.expect(rf"^\s*{position}/52  {STANDARD_DECK[position - 1]}\s+{uid}$")
    await progress.expect(rf"wrote {re.escape(str(out))}: deck test-deck, 52 cards")
    assert await asyncio.wait_for(cli.wait(), 10) == 0
    manifest = load_manifest(out)
    assert manifest.deck_id == "test-deck"
    assert dict(manifest.uid_to_card) == dict(zip(DECK, STANDARD_DECK, strict=True))


async def test_a_short_deck_writes_nothing_whatever_the_reader(
    tmp_path: Path, processes: list[asyncio.subprocess.Process]
) -> None:
    # The PN532 this time, and an order given beforehand. The enrolment ends when no card has
    # come for the idle timeout: long enough that a busy machine's pause between two cards of
    # the test is not taken for the end.
    link, control = tmp_path / "pn532", tmp_path / "pn532.ctl"
    sim = await _process("sim", "pn532", "--link", str(link), "--control", str(control))
    processes.append(sim)
    assert sim.stdout is not None
    assert (await asyncio.wait_for(sim.stdout.readline(), 20)).startswith(b"/dev/pts/")
    order = tmp_path / "order.txt"
    order.write_text("As Ks Qs  # the spades first\n" + " ".join(STANDARD_DECK[:49]) + "\n")
    out = tmp_path / "short.toml"
    cli = await _process(
        "deck", "enroll", "--deck-id", "short", "--reader", "pn532", "--port", str(link),
        "--order", str(order), "--out", str(out), "--decks", str(tmp_path), "--idle-timeout", "5",
    )  # fmt: skip
    processes.append(cli)
    assert cli.stdout is not None
    assert cli.stderr is not None
    progress, problems = Lines(cli.stdout), Lines(cli.stderr)
    async with ControlClient(control) as pn532:
        for position, (uid, card) in enumerate(zip(DECK, ("As", "Ks", "Qs"), strict=False), 1):
            await pn532.send({"tags": [uid]})
            await progress.expect(rf"^\s*{position}/52  {card}\s+{uid}$")
        await pn532.send({"tags": []})
    await problems.expect(r"short deck: 3 of 52 cards enrolled \(the next card was 2c\)")
    assert await asyncio.wait_for(cli.wait(), 10) == 1
    assert not out.exists()


async def test_enroll_through_a_simulated_usb_reader(
    tmp_path: Path, processes: list[asyncio.subprocess.Process]
) -> None:
    # The reader lives inside the enroll process (the fake pyusb backend); its control socket
    # is how the dealer's hand reaches it.
    control = tmp_path / "usb.ctl"
    config = _reader_config(
        tmp_path / "usb.toml",
        driver="tsp-reader-usb",
        serial_number="ENROLL-1",
        backend="simulated",
        simulator_control=str(control),
        **FAST_SCAN,
    )
    out = tmp_path / "usb-deck.toml"
    cli = await _process(
        "deck", "enroll", "--deck-id", "usb-deck", "--config", str(config), "--out", str(out),
        "--decks", str(tmp_path), "--gap", "0.02", "--idle-timeout", "20",
    )  # fmt: skip
    processes.append(cli)
    assert cli.stdout is not None
    progress = Lines(cli.stdout)
    async with asyncio.timeout(20):
        while not control.exists():
            await asyncio.sleep(0.02)
    async with ControlClient(control) as reader:
        for position, uid in enumerate(DECK, start=1):
            await reader.send({"tags": {"0": [uid]}})
            await progress.expect(rf"^\s*{position}/52  {STANDARD_DECK[position - 1]}\s+{uid}$")
    assert await asyncio.wait_for(cli.wait(), 10) == 0
    assert dict(load_manifest(out).uid_to_card) == dict(zip(DECK, STANDARD_DECK, strict=True))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--deck-id", "x"], "name the reader"),
        (["--deck-id", "x y", "--reader", "pn532", "--port", "/dev/null"], "letters, digits"),
        (["--deck-id", "x", "--reader", "tsp-reader-usb", "--port", "12:zz"], "VID:PID"),
        (["--deck-id", "house-a", "--reader", "pn532", "--port", "/dev/null"], "exists"),
        (
            ["--deck-id", "x", "--reader", "pn532", "--port", "p", "--order", "/nonexistent"],
            "--order",
        ),
        (["--deck-id", "x", "--config", "NOENROLL"], 'maps no zone "enroll"'),
        (["--deck-id", "x", "--config", "NOENROLL", "--port", "p"], "not both"),
    ],
)
async def test_bad_options_exit_2_with_the_reason(
    tmp_path: Path, args: list[str], message: str
) -> None:
    no_enroll = tmp_path / "seats.toml"
    no_enroll.write_text(
        'driver = "tsp-reader"\nport = "/dev/null"\n[[antennas]]\nantenna = 0\nzone = "seat:1"\n'
    )
    args = [str(no_enroll) if a == "NOENROLL" else a for a in args]
    process = await _process("deck", "enroll", "--decks", str(DECKS), *args)
    _, stderr = await asyncio.wait_for(process.communicate(), 20)
    assert process.returncode == 2, stderr
    assert message in stderr.decode()


async def test_reading_with_the_driver_directly(pty_rig: RigFactory) -> None:
    # Any reader driver is an event source for enroll(): here the TSP/1 one, without a sink.
    rig = await pty_rig(antennas=[{"antenna": 0, "zone": "enroll"}])
    reader = TspReader.from_options(
        "enroll",
        {
            "port": str(rig.server.port.device),
            **FAST,
            "antennas": [{"antenna": 0, "zone": "enroll"}],
        },
    )
    await rig.reader.stop()  # one driver on the port at a time
    enrollment = Enrollment("d")
    async with reader:
        task = asyncio.create_task(enroll(reader, enrollment, gap=0.02))
        for uid in DECK:
            rig.sim(tags={0: [uid]})
            count = enrollment.count
            async with asyncio.timeout(10):
                while enrollment.count == count:
                    await asyncio.sleep(0.005)
        await asyncio.wait_for(task, 10)
    assert enrollment.manifest().uid(STANDARD_DECK[-1]) == DECK[-1]

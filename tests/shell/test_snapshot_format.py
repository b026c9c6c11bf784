"""The snapshot format (controller/shell/checkpoint.py, docs/snapshots.md): a table between hands
written down and read back plays on exactly as the table it was; the format's structure is
pinned to its number; snapshots of earlier formats stay readable; what cannot be read is refused
in one line, never half read."""

from __future__ import annotations

import hashlib
import json
import pickle
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.game.betting import Structure
from controller.shell.chain import Head
from controller.shell.checkpoint import (
    FORMAT,
    FORMAT_NAME,
    MIGRATIONS,
    Snapshot,
    SnapshotUnreadableError,
    decode,
    encode,
    is_legacy,
    read_legacy,
    schema,
)
from controller.shell.record_codec import encoder
from controller.table.codec import event_to_json
from controller.table.engine import apply
from controller.table.inputs import ActionKind
from controller.table.state import TableState
from controller.table.streets import Street
from simulators.autoplay import Style, random_table
from simulators.irregular import IrregularDealer

DATA = Path(__file__).resolve().parents[1] / "data" / "snapshots"

#: The SHA-256 of each format's JSON Schema (``schema()``, canonical JSON). A change to the table
#: state's records changes it: then FORMAT goes up, MIGRATIONS gets the step from the format
#: before, docs/snapshots.md is regenerated (`make snapshot-schema`) and the new digest is added
#: here; the old ones stay, with their golden files in tests/data/snapshots.
SCHEMA_DIGESTS = {
    1: "8ae4c9264a5e929af0982a9f380a7dcceb94db03f5582c968a686cd631787f99",
    # the rules profile's betting structure (betting.structure, betting.cap); the rule IDs of
    # the betting structures (RR-PL, RR-BR-5/6, RR-BR-3/4) and of the floor (FLOOR-CALL)
    2: "0505dab98fbdb3fb40ccbd86d1dfa7dc1659b9c37692a93eb86425f29abe3199",
}


def _dealer(seed: int, profile: str = "rrop-cash") -> IrregularDealer:
    rng = random.Random(seed)
    return IrregularDealer(random_table(rng, profile), rng, Style(muck_loser=0.3), rate=0.5)


def _written(state: TableState) -> dict[str, Any]:
    return encoder(TableState)(state)  # type: ignore[no-any-return]


def _snapshot(state: TableState) -> Snapshot:
    return Snapshot(input_id=7, epoch="e1", seq=42, chain=Head(99, "ab" * 32), state=state)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    hands=st.integers(1, 6),
    profile=st.sampled_from(["rrop-cash", "de-charitable", "tda-tournament"]),
)
def test_a_table_read_back_from_its_snapshot_plays_the_next_hand_as_the_table_itself(
    seed: int, hands: int, profile: str
) -> None:
    dealer = _dealer(seed, profile)
    for _ in range(hands):
        if not dealer.play_hand():
            return
    between = dealer.run.state
    assert between.hand is None
    read = decode(encode(_snapshot(between)))
    assert (read.input_id, read.epoch, read.seq, read.chain) == (7, "e1", 42, Head(99, "ab" * 32))
    assert _written(read.state) == _written(between)  # every field, the last hand's too
    dealer.run.inputs.clear()
    dealer.run.events.clear()
    if not dealer.play_hand():
        return
    state, events = read.state, list[str]()
    for item in dealer.run.inputs:
        state, caused = apply(state, item)
        events.extend(event_to_json(e) for e in caused)
    assert events == [event_to_json(e) for e in dealer.run.events]
    assert _written(state) == _written(dealer.run.state)


def test_the_same_table_always_gives_the_same_bytes() -> None:
    dealer = _dealer(5)
    for _ in range(4):
        dealer.play_hand()
    once = encode(_snapshot(dealer.run.state))
    again = encode(_snapshot(decode(once).state))
    assert once == again


def _structure(value: Any) -> Any:
    """The schema without its words (titles, descriptions): what a document's shape depends on."""
    if isinstance(value, dict):
        return {k: _structure(v) for k, v in value.items() if k not in ("title", "description")}
    if isinstance(value, list):
        return [_structure(v) for v in value]
    return value


def test_the_format_is_pinned_to_its_number() -> None:
    text = json.dumps(_structure(schema()), sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(text.encode()).hexdigest()
    assert digest == SCHEMA_DIGESTS.get(FORMAT), (
        f"the table state's records no longer have the structure {FORMAT_NAME} documents "
        f"(schema digest {digest}): raise FORMAT, add MIGRATIONS[{FORMAT}] from the format "
        "before, regenerate config/schemas and pin the new digest here"
    )
    assert sorted(MIGRATIONS) == list(range(1, FORMAT))  # a step from every earlier format


@pytest.mark.parametrize("golden", sorted(DATA.glob("format-*.json")), ids=lambda p: p.stem)
def test_every_earlier_formats_snapshot_is_still_read(golden: Path) -> None:
    facts = json.loads(golden.with_suffix(".facts").read_text())
    read = decode(golden.read_bytes())
    state = read.state
    assert state.hand is None
    assert (read.input_id, read.epoch, read.seq) == (
        facts["input_id"],
        facts["epoch"],
        facts["seq"],
    )
    assert dict(state.stacks) == {int(s): c for s, c in facts["stacks"].items()}
    assert (state.button, state.hands_started, state.house) == (
        facts["button"],
        facts["hands_started"],
        facts["house"],
    )
    assert state.last_hand is not None
    assert state.last_hand.hand_id == facts["last_hand"]
    if golden.stem == f"format-{FORMAT}":  # the current format: read back, written the same
        assert encode(read) == golden.read_bytes()


def test_a_snapshot_of_a_newer_format_is_refused_in_one_line() -> None:
    document = json.loads(encode(_snapshot(_dealer(3).run.state)))
    document["format"] = f"tablectl.snapshot/{FORMAT + 1}"
    document["written_by"] = "9.0.0"
    with pytest.raises(SnapshotUnreadableError) as caught:
        decode(json.dumps(document).encode())
    line = str(caught.value)
    assert "\n" not in line
    assert f"tablectl.snapshot/{FORMAT + 1}" in line
    assert "9.0.0" in line
    assert f"reads tablectl.snapshot/1 to {FORMAT}" in line


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda d: d["state"].update(seats_of_the_future=1), "seats_of_the_future"),
        (lambda d: d["state"].pop("button"), "'button'"),
        (lambda d: d["state"].update(button="3"), "state.button"),
        (lambda d: d["state"]["stacks"].update(seven=7), "'seven' is not a number"),
        (lambda d: d["state"]["deck"].update(ready=1), "state.deck.ready"),
        (lambda d: d["state"]["last_hand"].update(phase="lunch"), "no Phase 'lunch'"),
        (lambda d: d["state"].update(time_paid_until="yesterday"), "state.time_paid_until"),
        (lambda d: d.pop("chain"), "'chain'"),
        (lambda d: d.update(format="tablectl.snapshot/x"), "unknown format"),
        (lambda d: d.update(format="tablectl.state/1"), "not a tablectl.snapshot/N"),
        (lambda d: d.update(table_id="T9"), "table_id"),
    ],
)
def test_a_malformed_snapshot_is_refused_naming_where(change: Any, named: str) -> None:
    dealer = _dealer(8)
    dealer.play_hand()
    document = json.loads(encode(_snapshot(dealer.run.state)))
    change(document)
    with pytest.raises(SnapshotUnreadableError) as caught:
        decode(json.dumps(document).encode())
    assert named in str(caught.value)


@pytest.mark.parametrize("blob", [b"", b"\xff\xfe", b"[]", b'"text"', b"{"])
def test_bytes_that_are_no_snapshot_are_refused(blob: bytes) -> None:
    with pytest.raises(SnapshotUnreadableError):
        decode(blob)


def test_a_pickled_snapshot_of_an_earlier_version_is_read_and_checked_whole() -> None:
    dealer = _dealer(21)
    for _ in range(3):
        dealer.play_hand()
    state = dealer.run.state
    assert is_legacy(hashlib.sha256(b"core").hexdigest())
    assert not is_legacy(FORMAT_NAME)
    read = read_legacy(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
    assert _written(read) == _written(state)
    with pytest.raises(SnapshotUnreadableError, match="holds a dict"):
        read_legacy(pickle.dumps({"table_id": "R"}))
    with pytest.raises(SnapshotUnreadableError, match="cannot load"):
        read_legacy(b"\x80\x05not a pickle")
    # a record pickled without a field these records have (an older or newer class)
    partial = state.copy()
    del partial.deck
    with pytest.raises(SnapshotUnreadableError, match="other records"):
        read_legacy(pickle.dumps(partial, protocol=pickle.HIGHEST_PROTOCOL))


def test_a_format_1_snapshot_is_read_as_format_2_a_no_limit_table() -> None:
    blob = (DATA / "format-1.json").read_bytes()
    document = json.loads(blob)
    assert "betting.structure" not in document["state"]["profile"]
    migrated = MIGRATIONS[1](json.loads(blob))
    assert migrated["format"] == "tablectl.snapshot/2"
    # the profile gains its betting structure as format 1 meant it; nothing else changes
    assert migrated["state"]["profile"] == {
        **document["state"]["profile"],
        "betting.structure": "no_limit",
        "betting.cap": 4,
    }
    assert {k: v for k, v in migrated["state"].items() if k != "profile"} == {
        k: v for k, v in document["state"].items() if k != "profile"
    }
    assert {k: v for k, v in migrated.items() if k not in ("format", "state")} == {
        k: v for k, v in document.items() if k not in ("format", "state")
    }
    read = decode(blob)
    assert read.state.profile.betting_structure is Structure.NO_LIMIT
    assert read.state.profile.betting_cap == 4
    written = json.loads(encode(read))
    assert written["format"] == FORMAT_NAME
    assert written["state"] == migrated["state"]  # written again in format 2, field for field


def test_the_format_2_golden_is_a_fixed_limit_table_of_a_bet_and_four_raises() -> None:
    state = decode((DATA / "format-2.json").read_bytes()).state
    assert state.profile.betting_structure is Structure.FIXED_LIMIT
    assert state.profile.betting_cap == 5
    hand = state.last_hand
    assert hand is not None
    raised: dict[Street, list[int]] = {}
    for action in hand.chips.actions:
        if action.kind in (ActionKind.BET, ActionKind.RAISE):
            raised.setdefault(action.street, []).append(action.to)
    # every bet and raise the street's one size: the big blind (2) before the turn, 4 from it;
    # the flop capped at five, three players in; the turn raised a fifth time once heads-up
    assert raised == {
        Street.PREFLOP: [4, 6],
        Street.FLOP: [2, 4, 6, 8, 10],
        Street.TURN: [4, 8, 12, 16, 20],
    }


def test_a_format_1_document_without_what_format_1_had_is_refused_in_one_line() -> None:
    document = json.loads((DATA / "format-1.json").read_bytes())
    del document["state"]["profile"]
    with pytest.raises(SnapshotUnreadableError) as caught:
        decode(json.dumps(document).encode())
    line = str(caught.value)
    assert "\n" not in line
    assert line.startswith("tablectl.snapshot/1: no 'profile'")

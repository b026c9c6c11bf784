"""Deck manifests: RFID-DECK."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.cards import Card
from controller.decks import ManifestError, load_deck, load_manifest, synthetic_manifest


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "deck.toml"
    path.write_text(text)
    return path


def test_the_shipped_decks_are_valid() -> None:
    for name in ("house-a", "house-b"):
        manifest = load_deck(name)
        assert len(manifest.uid_to_card) == 52
        assert len(set(manifest.uid_to_card.values())) == 52


def test_rfid_deck_a_manifest_must_map_52_distinct_cards_to_distinct_uids(tmp_path: Path) -> None:
    good = synthetic_manifest("t").to_toml()
    assert len(load_manifest(write(tmp_path, good)).uid_to_card) == 52
    lines = good.splitlines()
    short = "\n".join(lines[:-1])  # the last card is missing
    with pytest.raises(ManifestError, match="1 card\\(s\\) missing: As"):
        load_manifest(write(tmp_path, short))
    twice = good.replace('= "As"', '= "Ks"')  # the king of spades twice, no ace of spades
    with pytest.raises(ManifestError, match="card Ks has 2 UIDs"):
        load_manifest(write(tmp_path, twice))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[uids]\n", "\\[deck\\] id is required"),
        ('[deck]\nid = "x"\n', "\\[uids\\] is required"),
        ('[deck]\nid = "x"\n[uids]\n"zz" = "As"\n', "uids.zz: not a tag UID"),
        ('[deck]\nid = "x"\n[uids]\n"04a1b2c3d4e580" = "Ax"\n', "not a card"),
        ("not toml [", "Expected"),
    ],
)
def test_a_bad_manifest_names_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        load_manifest(write(tmp_path, text))


def test_jokers_are_listed_apart_and_never_as_cards(tmp_path: Path) -> None:
    manifest = load_deck("house-a")
    assert len(manifest.jokers) == 2
    assert not manifest.jokers & manifest.uid_to_card.keys()
    uid = next(iter(manifest.uid_to_card))
    text = synthetic_manifest("t").to_toml() + f'\n[jokers]\nuids = ["{uid}"]\n'
    synthetic_uid = next(iter(synthetic_manifest("t").uid_to_card))
    clash = text.replace(uid, synthetic_uid)
    with pytest.raises(ManifestError, match="joker UID is also a card"):
        load_manifest(write(tmp_path, clash))


def test_a_manifest_rewritten_in_place_is_read_again(tmp_path: Path) -> None:
    # the same size, the same inode, written within the same clock tick: only the bytes differ
    path = write(tmp_path, synthetic_manifest("one").to_toml())
    first = load_manifest(path)
    assert load_manifest(path) is first  # unchanged bytes: the one parse is shared
    swapped = synthetic_manifest("one").to_toml().replace('"As"', '"@@"')
    swapped = swapped.replace('"Ks"', '"As"').replace('"@@"', '"Ks"')
    path.write_text(swapped)
    second = load_manifest(path)
    assert second.card(first.uid(Card("As"))) == "Ks"
    assert second.card(first.uid(Card("Ks"))) == "As"


def test_a_manifest_that_is_not_utf8_or_is_missing_is_a_manifest_error(tmp_path: Path) -> None:
    path = tmp_path / "deck.toml"
    path.write_bytes(b'[deck]\nid = "\xff"\n')
    with pytest.raises(ManifestError, match=r"deck\.toml: 'utf-8' codec can't decode"):
        load_manifest(path)
    with pytest.raises(ManifestError, match="No such file"):
        load_manifest(tmp_path / "absent.toml")


def test_windows_line_ends_read_as_before(tmp_path: Path) -> None:
    text = synthetic_manifest("crlf").to_toml().replace("\n", "\r\n")
    assert load_manifest(write(tmp_path, text)).deck_id == "crlf"

"""The roster and ``tablectl station person add|list|remove``: what is written, and every kind of
bad input refused with its reason and nothing changed."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path

import pytest

from controller.cards import Card
from controller.cli import main
from controller.decks import load_deck
from controller.passwords import verify
from controller.signing import new_key, public_text, save_private_key
from controller.station.roster import RosterError, load_roster, new_person, roster_text

BADGE = "04:A1:B2:C3:D4:E5:F6"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """A table config whose keyring has the station's key acting for ann (not bob)."""
    private, public = new_key()
    save_private_key(private, tmp_path / "station.key")
    assert public == public_text(private.public_key())
    (tmp_path / "keyring.toml").write_text(
        f'[keys.station]\nperson = "station"\nroles = ["dealer"]\npublic_key = "{public}"\n'
        'acts_for = ["ann"]\n\n[persons."ann"]\nroles = ["dealer"]\n'
    )
    path = tmp_path / "table.toml"
    path.write_text(
        '[table]\nid = "T1"\nstacks = { 1 = 100, 2 = 100 }\nbutton = 1\nblinds = [1, 2]\n'
        '[security]\nkeyring = "keyring.toml"\n[daemon]\nconsole = "/run/tablectl/console.sock"\n'
    )
    return path


def cli(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    *args: str,
    stdin: str = "",
) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    status = main(["station", *args])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_person_add_writes_the_roster_beside_the_keyring_with_the_pin_hashed(
    config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    status, out, err = cli(
        capsys,
        monkeypatch,
        "person",
        "add",
        "ann",
        "--name",
        "Ann Example",
        "--badge",
        BADGE,
        "--pin-stdin",
        "--config",
        str(config),
        stdin="1234\n",
    )
    assert status == 0, err
    assert out.splitlines()[0] == "ann: Ann Example (dealer), 1 badge"
    roster_file = config.parent / "roster.toml"
    assert stat.S_IMODE(os.stat(roster_file).st_mode) == 0o600
    assert "1234" not in roster_file.read_text()
    person = load_roster(roster_file).persons["ann"]
    assert person.badges == ("04a1b2c3d4e5f6",)
    assert verify(person.pin, "1234")
    assert not verify(person.pin, "4321")
    status, out, _ = cli(capsys, monkeypatch, "person", "list", "--json", "--config", str(config))
    assert status == 0
    assert json.loads(out) == {
        "id": "ann",
        "name": "Ann Example",
        "roles": ["dealer"],
        "badges": ["04a1b2c3d4e5f6"],
    }


def test_person_add_says_what_the_keyring_still_needs(
    config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    status, out, _ = cli(
        capsys,
        monkeypatch,
        "person",
        "add",
        "bob",
        "--name",
        "Bob",
        "--pin-stdin",
        "--config",
        str(config),
        stdin="5678\n",
    )
    assert status == 0
    assert "the station's key 'station' may not act for 'bob'" in out
    assert "the keyring gives 'bob' no dealer role" in out
    assert '[persons."bob"]\nroles = ["dealer"]' in out


@pytest.mark.parametrize(
    ("args", "stdin", "reason"),
    [
        (["--badge", "04a1"], "1234", "a tag UID has 4, 7, 8 or 10 bytes"),
        (["--badge", "not-a-uid"], "1234", "not a tag UID"),
        ([], "", "the PIN is empty"),
        ([], "12", "a PIN is 4 to 12 digits"),
        ([], "12ab", "a PIN is 4 to 12 digits"),
        (["--badge", BADGE, "--badge", BADGE], "1234", "is given twice"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(
    config: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    stdin: str,
    reason: str,
) -> None:
    status, _, err = cli(
        capsys,
        monkeypatch,
        "person",
        "add",
        "ann",
        "--name",
        "Ann",
        *args,
        "--pin-stdin",
        "--config",
        str(config),
        stdin=stdin,
    )
    assert status == 2
    assert reason in err
    assert not (config.parent / "roster.toml").exists()


def test_a_badge_is_one_persons_and_never_a_card(
    config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    add = ["person", "add", "--pin-stdin", "--config", str(config)]
    assert (
        cli(capsys, monkeypatch, *add, "ann", "--name", "Ann", "--badge", BADGE, stdin="1234")[0]
        == 0
    )
    before = (config.parent / "roster.toml").read_text()
    status, _, err = cli(
        capsys, monkeypatch, *add, "bob", "--name", "Bob", "--badge", BADGE, stdin="5678"
    )
    assert status == 2
    assert "badge 04a1b2c3d4e5f6 is ann's already" in err
    card = load_deck("house-a").uid(Card("As"))
    status, _, err = cli(
        capsys, monkeypatch, *add, "bob", "--name", "Bob", "--badge", card, stdin="5678"
    )
    assert status == 2
    assert f"--badge {card} is the card As of deck house-a, not a badge" in err
    assert (config.parent / "roster.toml").read_text() == before


def test_person_remove_and_an_unknown_person(
    config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    add = ["person", "add", "--pin-stdin", "--config", str(config)]
    assert cli(capsys, monkeypatch, *add, "ann", "--name", "Ann", stdin="1234")[0] == 0
    status, out, _ = cli(capsys, monkeypatch, "person", "remove", "ann", "--config", str(config))
    assert (status, out) == (0, "ann: removed\n")
    status, _, err = cli(capsys, monkeypatch, "person", "remove", "ann", "--config", str(config))
    assert status == 2
    assert "no person 'ann' in the roster" in err


def test_a_roster_read_back_is_the_roster_written(tmp_path: Path) -> None:
    path = tmp_path / "roster.toml"
    person = new_person("oneil.b", 'Bríd "B" O\\Neil\u00e9', ["dealer", "floor"], [BADGE], "987654")
    text = roster_text(load_roster(path).with_person(person))
    path.write_text(text)
    assert load_roster(path).persons["oneil.b"] == person


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("[persons.ann]\nname = 'Ann'\nroles = ['dealer']\nbadges = []\npin = '1234'\n", "argon2"),
        ("[persons.ann]\nname = 'Ann'\nroles = ['pit']\nbadges = []\npin = '$argon2id$'\n", "pit"),
        (
            "[persons.ann]\nname = 'Ann'\nroles = ['dealer']\nbadges = []\n"
            "pin = '$argon2'\nx = 1\n",
            "unknown keys x",
        ),
        ("[people]\n", r"only \[persons.ID\] tables, not people"),
        ("not toml", "Expected '='"),
    ],
)
def test_a_bad_roster_file_is_named_with_its_problem(
    tmp_path: Path, text: str, reason: str
) -> None:
    path = tmp_path / "roster.toml"
    path.write_text(text)
    with pytest.raises(RosterError, match=reason):
        load_roster(path)

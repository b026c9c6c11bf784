"""A file given where another kind goes (a config as ``--journal``, a journal as ``--config``)
is named for what it is in one line, exit 2, never with advice meant for a damaged journal; the
keyring block ``tablectl keys new`` prints for the pit loads in a table's keyring."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from controller.cli import main
from controller.keyring import load_keyring

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"


def a_table_config(directory: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example table config, copied into ``directory`` with the example keyring beside it,
    its state where this user can write it."""
    config = directory / "table.toml"
    config.write_text((CONFIG_DIR / "table.example.toml").read_text(encoding="utf-8"))
    keyring = (CONFIG_DIR / "keyring.example.toml").read_text(encoding="utf-8")
    (directory / "keyring.example.toml").write_text(keyring)
    monkeypatch.setenv("TABLECTL_JOURNAL__PATH", str(directory / "state" / "journal.sqlite"))
    monkeypatch.setenv("TABLECTL_DEVICES__SHUFFLER__STATE_FILE", str(directory / "state" / "s"))
    return config


@pytest.mark.parametrize("verb", [["verify"], ["export"], ["salvage", "--out", "new.sqlite"]])
def test_a_config_given_as_the_journal_is_named_and_not_salvaged(
    verb: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    config = a_table_config(tmp_path, monkeypatch)
    assert main(["journal", *verb, "--journal", str(config)]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"tablectl journal {verb[0]}: {config} is not a journal (it looks like a config: give "
        f"--config {config}, or --journal with the journal's path)"
    ]
    assert "salvage --journal" not in captured.err
    assert not (tmp_path / "new.sqlite").exists()


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("just some notes\n", "it is a text file, not SQLite"),
        ("[pit]\nid = 'pit-1'\n", "it is a TOML file, not SQLite"),
        ("", "it is empty"),
    ],
)
def test_a_text_file_given_as_the_journal_is_named_for_what_it_is(
    content: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text(content)
    assert main(["journal", "verify", "--journal", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tablectl journal verify: {path} is not a journal ({said}")
    assert len(err.splitlines()) == 1
    assert "salvage" not in err


def test_a_journal_given_as_the_config_is_named_with_where_it_goes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = tmp_path / "journal.sqlite"
    with sqlite3.connect(journal) as conn:
        conn.execute("CREATE TABLE meta (key TEXT, value TEXT)")
    hint = "not a config: --config takes the config file; a journal goes to the journal verbs "
    hint += f"as --journal {journal}"
    assert main(["config", "check", "--config", str(journal)]) == 2
    assert hint in capsys.readouterr().err
    for argv in (
        ["journal", "verify", "--config", str(journal)],
        ["run", "--config", str(journal)],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert hint in err
        assert "Traceback" not in err


def test_config_check_takes_config_and_its_older_positional_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = a_table_config(tmp_path, monkeypatch)
    assert main(["config", "check", "--config", str(config)]) == 0
    assert main(["config", "check", str(config)]) == 0
    monkeypatch.setenv("TABLECTL_CONFIG", str(config))
    assert main(["config", "check"]) == 0  # the default, as `run`'s
    assert capsys.readouterr().out.count(f"{config}: ok (table T7") == 3
    assert main(["config", "check", "--config", str(config), str(config)]) == 2
    assert "give the file once" in capsys.readouterr().err


def test_the_pit_key_block_loads_in_a_table_keyring_and_lets_its_people_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = a_table_config(tmp_path, monkeypatch)
    argv = ["keys", "new", "pit", "--role", "pit", "--person", "pit web console",
            "--acts-for", "ann=floor", "--acts-for", "Bob Floor=floor,surveillance",
            "--out", str(tmp_path / "keys")]  # fmt: skip
    assert main(argv) == 0
    block = capsys.readouterr().out
    keyring = tmp_path / "keyring.example.toml"
    keyring.write_text(keyring.read_text(encoding="utf-8") + "\n" + block)
    assert main(["config", "check", "--config", str(config)]) == 0
    loaded = load_keyring(keyring)
    pit = loaded.keys["pit"]
    assert sorted(pit.roles) == ["floor", "pit"]  # floor: the rulings its console relays
    assert pit.acts_for == ["ann", "Bob Floor"]
    assert loaded.roles_of("ann") == {"floor"}
    assert loaded.roles_of("Bob Floor") == {"floor", "surveillance"}
    assert (tmp_path / "keys" / "pit.key").is_file()


def test_a_pit_key_without_its_people_acts_for_anyone_and_says_they_need_roles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keys", "new", "pit", "--role", "pit", "--out", str(tmp_path)]) == 0
    block = capsys.readouterr().out
    (tmp_path / "keyring.toml").write_text(block)
    pit = load_keyring(tmp_path / "keyring.toml").keys["pit"]
    assert (sorted(pit.roles), pit.acts_for) == (["floor", "pit"], ["*"])
    assert '[persons."NAME"]' in block


@pytest.mark.parametrize(
    "acts_for", ["ann=", "ann=croupier", "*=floor", "=floor"], ids=["no", "unknown", "any", "who"]
)
def test_a_bad_acts_for_is_refused_before_a_key_is_written(
    acts_for: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["keys", "new", "c", "--role", "floor", "--acts-for", acts_for, "--out", str(tmp_path)]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith(f"tablectl keys new: --acts-for {acts_for!r}")
    assert not (tmp_path / "c.key").exists()

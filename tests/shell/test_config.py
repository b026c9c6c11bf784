"""The table config: the example is valid, every error names its key, the environment wins."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from controller.cli import main
from controller.config import ConfigError, load_config, parse_config

EXAMPLE = Path(__file__).resolve().parents[2] / "config" / "table.example.toml"

MINIMAL: dict[str, Any] = {
    "table": {"id": "T1", "stacks": {"1": 100, "2": 100}, "button": 1, "blinds": [1, 2]},
    "security": {"require_signed": False},
}


def problems(data: Mapping[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    return caught.value.problems


def test_the_example_config_is_valid() -> None:
    config = load_config(EXAMPLE)
    assert config.table.id == "T7"
    assert config.devices["shuffler"].driver == "virtual"
    assert config.devices["shuffler"].options["seed"] == 7
    assert config.client_id == "tablectl-T7"


def test_defaults_fill_what_is_not_given() -> None:
    config = parse_config(MINIMAL)
    assert config.broker.port == 1883
    assert config.broker.prefix == "tables"
    assert config.table.profile == "rrop-cash"


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"broker": {"port": 99999}}, "broker.port", "less than or equal to 65535"),
        ({"broker": {"port": "x"}}, "broker.port", "valid integer"),
        ({"broker": {"hostt": "a"}}, "broker.hostt", "Extra inputs are not permitted"),
        ({"journal": {"path": 5}}, "journal.path", ""),
        ({"log": {"level": "loud"}}, "log.level", "'debug', 'info', 'warning' or 'error'"),
        ({"devices": {"s": {"port": "/dev/x"}}}, "devices.s.driver", "Field required"),
        ({"devices": {"s": {"driver": "nope"}}}, "devices.s.driver", "no driver named 'nope'"),
        ({"devices": {"s": {"driver": "virtual", "sead": 1}}}, "devices.s.sead", "Extra inputs"),
        ({"devices": {"s": {"driver": "virtual", "seed": "x"}}}, "devices.s.seed", "integer"),
        ({"broker": {"tls": {"cert_file": "/c.pem"}}}, "broker.tls", "go together"),
        ({"security": {}}, "security.keyring", "required: the table takes signed requests"),
        (
            {"security": {"keyring": "/nonexistent/keyring.toml"}},
            "security.keyring",
            "no such keyring file",
        ),
        (
            {"security": {"require_signed": False, "unsigned_roles": ["owner"]}},
            "security.unsigned_roles",
            "'dealer', 'floor'",
        ),
        ({"journal": {"max_bytes": 1000}}, "journal.max_bytes", "greater than or equal to"),
        ({"journal": {"live_hands": -1}}, "journal.live_hands", "greater than or equal to 0"),
        ({"journal": {"keep_days": 0}}, "journal.keep_days", "greater than 0"),
        ({"journal": {"retention_interval": "often"}}, "journal.retention_interval", "number"),
        ({"journal": {"keep": 3}}, "journal.keep", "Extra inputs are not permitted"),
        (
            {"table": {**MINIMAL["table"], "house_rules": {"dealer_may_confirm": ["NOPE"]}}},
            "table.profile / table.house_rules",
            "not rule IDs of the catalogue: NOPE",
        ),
        (
            {"table": {**MINIMAL["table"], "house_rules": {"betting.structure": "limit"}}},
            "table.profile / table.house_rules",
            "betting.structure: Input should be 'no_limit', 'pot_limit' or 'fixed_limit'",
        ),
    ],
)
def test_errors_name_the_key_and_say_what_is_wrong(
    change: dict[str, object], key: str, words: str
) -> None:
    found = problems({**MINIMAL, **change})
    assert any(p.startswith(key) and words in p for p in found), found


def test_table_errors_name_the_key() -> None:
    table = dict(MINIMAL["table"])
    found = problems({"table": {**table, "button": 5}})
    assert any("table" in p and "button: seat 5 has no stack" in p for p in found), found
    found = problems({"table": {**table, "stacks": {"11": 5, "1": 5}}})
    assert any(p.startswith("table.stacks") and "1 to 10" in p for p in found), found
    found = problems({"table": {**table, "profile": "nope"}})
    assert any(
        p.startswith("table.profile") and "no rules profile named 'nope'" in p for p in found
    )
    found = problems({"table": {**table, "house_rules": {"odd_chip.recipient": "me"}}})
    assert any("odd_chip.recipient" in p for p in found), found
    found = problems({"table": {**table, "deck": "nope"}})
    assert any(p.startswith("table.deck") for p in found), found
    found = problems({})
    assert found == ["table: Field required"]
    # the topic level {prefix}/_pit is the pit processes' own (docs/mqtt.md)
    found = problems({"table": {**table, "id": "_pit"}})
    assert any(p.startswith("table.id") and "does not begin with '_'" in p for p in found), found


def test_the_environment_overrides_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLECTL_BROKER__HOST", "pit.example")
    monkeypatch.setenv("TABLECTL_BROKER__PORT", "8883")
    monkeypatch.setenv("TABLECTL_JOURNAL__PATH", "/tmp/elsewhere.sqlite")
    config = parse_config({**MINIMAL, "broker": {"host": "file-host", "keepalive": 30}})
    assert config.broker.host == "pit.example"
    assert config.broker.port == 8883
    assert config.broker.keepalive == 30  # the file still counts for what the environment leaves
    assert str(config.journal.path) == "/tmp/elsewhere.sqlite"
    monkeypatch.setenv("TABLECTL_BROKER__PORT", "many")
    assert any(p.startswith("broker.port") for p in problems(MINIMAL))


def test_config_check_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the example's journal and shuffler memory are under /var/lib/tablectl: here, where this
    # user can make them
    monkeypatch.setenv("TABLECTL_JOURNAL__PATH", str(tmp_path / "state" / "journal.sqlite"))
    monkeypatch.setenv("TABLECTL_DEVICES__SHUFFLER__STATE_FILE", str(tmp_path / "state" / "s.json"))
    assert main(["config", "check", "--config", str(EXAMPLE)]) == 0
    assert "ok (table T7" in capsys.readouterr().out
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[table]\nid = "T1"\nstacks = { 1 = 5 }\nbutton = 1\nblinds = [1, 2]\n[broker]\nport = 0\n'
    )
    assert main(["config", "check", "--config", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "table.stacks: List should have at least 2 items" in err or "table.stacks" in err
    assert "broker.port: Input should be greater than or equal to 1 (got 0)" in err
    broken = tmp_path / "broken.toml"
    broken.write_text("[table\n")
    assert main(["config", "check", "--config", str(broken)]) == 1
    assert "not valid TOML" in capsys.readouterr().err
    assert main(["config", "check", "--config", str(tmp_path / "missing.toml")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_config_schema_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "tablectl table config"
    assert "table" in schema["required"]
    assert "broker" in schema["properties"]


def test_a_keyring_is_required_by_default_and_checked(tmp_path: Path) -> None:
    bare = {"table": MINIMAL["table"]}
    assert any("security.keyring: required" in p for p in problems(bare))
    keyring = tmp_path / "keys.toml"
    keyring.write_text('[keys.ann]\nperson = "Ann"\nroles = ["croupier"]\npublic_key = "eA=="\n')
    found = problems({**bare, "security": {"keyring": str(keyring)}})
    assert any("keys.ann.roles" in p and "dealer" in p for p in found)
    assert any("keys.ann.public_key" in p and "32 bytes" in p for p in found)


def test_requests_stay_live_while_a_redelivery_could_be_admitted() -> None:
    """A signed request is admitted while its ts is within clock_skew: its inbox row must
    outlive 2 x clock_skew, or the same bytes could run again."""
    found = problems({**MINIMAL, "journal": {"inbox_seconds": 59}})
    assert found == [
        "journal.inbox_seconds: at least twice security.clock_skew (60 s): a request "
        "redelivered sooner must find its stored response (got 59)"
    ]
    parse_config({**MINIMAL, "journal": {"inbox_seconds": 60}})
    skewed = {
        **MINIMAL,
        "security": {**MINIMAL["security"], "clock_skew": 600},
        "journal": {"inbox_seconds": 1000},
    }
    assert any("(1200 s)" in p for p in problems(skewed))


def test_a_relative_keyring_is_beside_the_config(tmp_path: Path) -> None:
    (tmp_path / "keyring.toml").write_text("")
    path = tmp_path / "table.toml"
    path.write_text(
        '[table]\nid = "T1"\nstacks = { 1 = 100, 2 = 100 }\nbutton = 1\nblinds = [1, 2]\n'
        '[security]\nkeyring = "keyring.toml"\n'
    )
    assert load_config(path).security.keyring == tmp_path / "keyring.toml"

"""Where ``tablectl tail`` and ``tablectl dealer`` connect: the table config's broker (address,
login, TLS) with the command line over it, and options that cannot work refused in one line
before anything connects."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest

from controller.cli import build_parser, main
from controller.shell.cli_client import _broker_target, _TargetError
from tests.integration.test_broker_tls import make_pki


def config_file(tmp_path: Path, broker: dict[str, object]) -> Path:
    """A table config whose [broker] section is ``broker`` (TOML written by hand: the values
    are strings, numbers and one [broker.tls] table)."""
    tls = broker.pop("tls", None)
    lines = [
        "[table]",
        'id = "T7"',
        'stacks = { "1" = 100, "2" = 100 }',
        "button = 1",
        "blinds = [1, 2]",
        "[devices.shuffler]",
        'driver = "virtual"',
        "[security]",
        "require_signed = false",
        "[journal]",
        f"path = {json.dumps(str(tmp_path / 'journal.sqlite'))}",
        "[broker]",
        *(f"{key} = {json.dumps(value)}" for key, value in broker.items()),
    ]
    if isinstance(tls, dict):
        lines += ["[broker.tls]", *(f"{key} = {json.dumps(value)}" for key, value in tls.items())]
    path = tmp_path / "table.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA and a client certificate signed by it (real PEM: the options are checked)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    directory = tmp_path_factory.mktemp("cli-pki") / "pki"
    make_pki(directory)
    return directory


def parsed(*argv: str) -> argparse.Namespace:
    return build_parser("tail").parse_args(["tail", *argv])


def test_the_tables_config_gives_address_tls_and_table_and_the_login_is_the_tools_own(
    tmp_path: Path, pki: Path
) -> None:
    secret = tmp_path / "password"
    secret.write_text("s3cret\n")
    console = tmp_path / "console-password"
    console.write_text("c0nsole\n")
    ca = pki / "ca.pem"
    path = config_file(
        tmp_path,
        {
            "host": "broker.pit",
            "port": 8883,
            "prefix": "casino",
            "username": "table-t7",
            "password_file": str(secret),
            "tls": {"enabled": True, "ca_file": str(ca)},
        },
    )
    target = _broker_target(
        parsed("--config", str(path), "--username", "console-t7", "--password-file", str(console))
    )
    assert (target.table, target.prefix) == ("T7", "casino")
    broker = target.broker
    assert (broker.host, broker.port, broker.url()) == (
        "broker.pit",
        8883,
        "mqtts://broker.pit:8883",
    )
    assert (broker.username, broker.secret()) == ("console-t7", "c0nsole")
    assert broker.tls.enabled
    assert broker.tls.ca_file == ca


def test_a_tool_never_logs_in_as_the_table_itself(
    tmp_path: Path, pki: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The broker binds the client id to the user: a tool with the table's login would take
    the daemon's session, so ``--config`` alone (which holds that login) is refused."""
    secret = tmp_path / "password"
    secret.write_text("s3cret\n")
    by_password = config_file(
        tmp_path, {"host": "127.0.0.1", "username": "table-t7", "password_file": str(secret)}
    )
    with pytest.raises(_TargetError, match="the table's own broker login \\(user table-t7\\)"):
        _broker_target(parsed("--config", str(by_password)))
    assert main(["dealer", "--config", str(by_password), "start_hand"]) == 2
    err = capsys.readouterr().err
    assert "--username USER --password-file FILE" in err
    assert "Traceback" not in err

    cert, key = pki / "client.pem", pki / "client.key"
    by_certificate = config_file(
        tmp_path,
        {
            "host": "127.0.0.1",
            "tls": {"enabled": True, "ca_file": str(pki / "ca.pem"), "cert_file": str(cert),
                    "key_file": str(key)},
        },
    )  # fmt: skip
    with pytest.raises(_TargetError, match="its client certificate"):
        _broker_target(parsed("--config", str(by_certificate)))
    # a password login drops the table's certificate rather than presenting both
    other = tmp_path / "other"
    other.write_text("x\n")
    broker = _broker_target(
        parsed("--config", str(by_certificate), "--username", "pit", "--password-file", str(other))
    ).broker
    assert (broker.username, broker.tls.cert_file, broker.tls.key_file) == ("pit", None, None)


def test_the_command_line_goes_over_the_config(tmp_path: Path) -> None:
    path = config_file(
        tmp_path,
        {"host": "broker.pit", "prefix": "casino", "username": "table-t7", "password": "x"},
    )
    other = tmp_path / "other-password"
    other.write_text("y\n")
    target = _broker_target(
        parsed(
            "--config", str(path), "--broker", "mqtts://10.0.0.2:1884", "--prefix", "lab",
            "--table", "T8", "--username", "surveillance", "--password-file", str(other),
        )
    )  # fmt: skip
    assert (target.table, target.prefix) == ("T8", "lab")
    broker = target.broker
    assert (broker.url(), broker.username, broker.secret()) == (
        "mqtts://10.0.0.2:1884",
        "surveillance",
        "y",
    )


def test_mqtts_turns_tls_on_with_its_own_default_port(pki: Path) -> None:
    ca, cert, key = pki / "ca.pem", pki / "client.pem", pki / "client.key"
    target = _broker_target(
        parsed(
            "--broker", "mqtts://pit.example", "--table", "T1", "--ca-file", str(ca),
            "--cert-file", str(cert), "--key-file", str(key),
        )
    )  # fmt: skip
    tls = target.broker.tls
    assert target.broker.url() == "mqtts://pit.example:8883"
    assert (tls.enabled, tls.ca_file, tls.cert_file, tls.key_file) == (True, ca, cert, key)
    assert target.prefix == "tables"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--broker", "tcp://h:1883", "--table", "T1"], "give mqtt://host:port or mqtts://"),
        (["--broker", "mqtt://h:port", "--table", "T1"], "the port is not a number"),
        (["--broker", "mqtt://:1883", "--table", "T1"], "host: empty"),
        (["--broker", "mqtt://h:70000", "--table", "T1"], "port"),
        (["--table", "T1", "--ca-file", "ca.pem"], "--ca-file: TLS files for a broker without"),
        (["--broker", "mqtts://h", "--table", "T1", "--ca-file", "/no/ca.pem"], "no such file"),
        (["--broker", "mqtts://h", "--table", "T1", "--cert-file", "c.pem"], "go together"),
        (["--broker", "mqtt://localhost"], "give --table or --config"),
        (["--broker", "mqtt://10.0.0.2", "--table", "T1"], "another machine, reached over TLS"),
    ],
)
def test_options_that_cannot_work_are_refused_before_connecting(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(_TargetError) as refused:
        _broker_target(parsed(*argv))
    assert said in str(refused.value)
    for verb in ("tail", "dealer"):
        extra = ["start_hand"] if verb == "dealer" else []
        assert main([verb, *argv, *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"tablectl {verb}: ")
        assert said in err
        assert "Traceback" not in err


def test_a_config_that_does_not_load_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text("[table\n")
    assert main(["tail", "--config", str(broken)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tablectl tail: ")
    assert str(broken) in err

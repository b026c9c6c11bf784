"""``tablectl config check`` names everything ``tablectl run`` would fail on, one line per key.

Each case is a valid config (``parse_config`` takes it) that could not run here: a file it names
is missing or not what it should be, a directory cannot be written, or one section names what
another does not have. ``run`` refuses the same config with the same lines, before it starts.
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controller.cli import main
from controller.config import ConfigError, parse_config
from controller.config_check import run_problems
from controller.shell.journal import Journal

Change = Callable[[Path], dict[str, Any]]


def base(tmp_path: Path) -> dict[str, Any]:
    return {
        "table": {"id": "T1", "stacks": {"1": 100, "2": 100}, "button": 1, "blinds": [1, 2]},
        "devices": {"shuffler": {"driver": "virtual"}},
        "security": {"require_signed": False},
        "journal": {"path": str(tmp_path / "state" / "journal.sqlite")},
    }


def problems_of(tmp_path: Path, change: Change) -> list[str]:
    data = base(tmp_path)
    for section, values in change(tmp_path).items():
        data[section] = {**data.get(section, {}), **values}
    return run_problems(parse_config(data))


def garbage(path: Path) -> Path:
    path.write_text("not a certificate\n")
    return path


def other_tables_journal(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "other.sqlite"
    Journal.open(path, table_id="T9").close()
    return {"journal": {"path": str(path)}}


def a_file_in_the_way(tmp_path: Path) -> Path:
    (tmp_path / "file").write_text("")
    return tmp_path / "file"


CASES: list[tuple[str, Change, str]] = [
    (
        "password_file missing",
        lambda t: {"broker": {"password_file": str(t / "nope")}},
        "broker.password_file: no such file: ",
    ),
    (
        "password_file a directory",
        lambda t: {"broker": {"password_file": str(t)}},
        "broker.password_file: not a file: ",
    ),
    (
        "ca_file missing",
        lambda t: {"broker": {"tls": {"enabled": True, "ca_file": str(t / "ca.pem")}}},
        f"broker.tls.ca_file: no such file: {{t}}{os.sep}ca.pem",
    ),
    (
        "ca_file not PEM",
        lambda t: {"broker": {"tls": {"enabled": True, "ca_file": str(garbage(t / "ca.pem"))}}},
        "broker.tls.ca_file: not a PEM CA bundle: ",
    ),
    (
        "client certificate missing",
        lambda t: {
            "broker": {
                "tls": {
                    "enabled": True,
                    "cert_file": str(t / "c.pem"),
                    "key_file": str(garbage(t / "k.pem")),
                }
            }
        },
        "broker.tls.cert_file: no such file: ",
    ),
    (
        "client certificate not PEM",
        lambda t: {
            "broker": {
                "tls": {
                    "enabled": True,
                    "cert_file": str(garbage(t / "c.pem")),
                    "key_file": str(garbage(t / "k.pem")),
                }
            }
        },
        "broker.tls.cert_file / broker.tls.key_file: not a certificate and its key (PEM): ",
    ),
    (
        "journal directory cannot be made",
        lambda t: {"journal": {"path": str(a_file_in_the_way(t) / "sub" / "journal.sqlite")}},
        "journal.path: directory {t}/file/sub does not exist and cannot be made "
        "({t}/file is not a writable directory)",
    ),
    (
        "journal directory is a file",
        lambda t: {"journal": {"path": str(a_file_in_the_way(t) / "journal.sqlite")}},
        "journal.path: {t}/file is not a directory",
    ),
    (
        "journal is a directory",
        lambda t: {"journal": {"path": str(t)}},
        "journal.path: {t} is not a file",
    ),
    (
        "journal of another table",
        other_tables_journal,
        "journal.path: {t}/other.sqlite is the journal of table 'T9', not 'T1' (table.id)",
    ),
    (
        "journal not a database",
        lambda t: {"journal": {"path": str(garbage(t / "j.sqlite"))}},
        "journal.path: {t}/j.sqlite is not a journal (file is not a database)",
    ),
    (
        "console under a missing directory",
        lambda t: {"daemon": {"console": str(t / "run" / "console.sock")}},
        "daemon.console: directory {t}/run does not exist",
    ),
    (
        "console on top of a file",
        lambda t: {"daemon": {"console": str(a_file_in_the_way(t))}},
        "daemon.console: {t}/file exists and is not a socket (it would be replaced)",
    ),
    (
        "a device's state file where it cannot be written",
        lambda t: {
            "devices": {
                "shuffler": {
                    "driver": "virtual",
                    "state_file": str(a_file_in_the_way(t) / "shuffler.json"),
                }
            }
        },
        "devices.shuffler.state_file: {t}/file is not a directory",
    ),
    (
        "shuffler names no device",
        lambda t: {"table": {"shuffler": "shufler"}},
        "table.shuffler: 'shufler' is not a configured device (devices: shuffler); ",
    ),
    (
        "shuffler disabled",
        lambda t: {"devices": {"shuffler": {"driver": "virtual", "enabled": False}}},
        "table.shuffler: device 'shuffler' is disabled (devices.shuffler.enabled)",
    ),
    (
        "shuffler cannot deal",
        lambda t: {"devices": {"shuffler": {"driver": "jsonl", "port": "/dev/null"}}},
        "table.shuffler: device 'shuffler' (driver 'jsonl') cannot shuffle and dispense",
    ),
]


@pytest.mark.parametrize(("change", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_problem_is_one_line_naming_its_key(
    tmp_path: Path, change: Change, expected: str
) -> None:
    found = problems_of(tmp_path, change)
    expected = expected.replace("{t}", str(tmp_path))
    assert len(found) == 1, found
    assert found[0].startswith(expected), found


def test_a_runnable_config_has_no_problem(tmp_path: Path) -> None:
    assert problems_of(tmp_path, lambda t: {}) == []  # its journal directory is made at start
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "console.sock"))  # a socket left by the last run is replaced
    sock.close()
    console = {"daemon": {"console": str(tmp_path / "console.sock")}}
    assert problems_of(tmp_path, lambda t: console) == []
    own = tmp_path / "state" / "journal.sqlite"
    own.parent.mkdir()
    Journal.open(own, table_id="T1").close()
    assert problems_of(tmp_path, lambda t: {}) == []
    state = {"devices": {"shuffler": {"driver": "virtual", "state_file": str(tmp_path / "d/s")}}}
    assert problems_of(tmp_path, lambda t: state) == []  # made on the first save
    dealer_paced = {"table": {"shuffler": "none", "dispense": "dealer"}}
    assert problems_of(tmp_path, lambda t: dealer_paced) == []
    no_broker = {"broker": {"enabled": False, "host": "", "password_file": "/nope"}}
    assert problems_of(tmp_path, lambda t: no_broker) == []


def test_tls_files_that_load_have_no_problem(tmp_path: Path) -> None:
    key, cert = tmp_path / "k.pem", tmp_path / "c.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "1", "-subj", "/CN=table"],
        check=True, capture_output=True,
    )  # fmt: skip
    ssl.create_default_context().load_cert_chain(str(cert), str(key))
    tls = {"enabled": True, "ca_file": str(cert), "cert_file": str(cert), "key_file": str(key)}
    assert problems_of(tmp_path, lambda t: {"broker": {"tls": tls}}) == []


def test_an_empty_broker_host_is_named(tmp_path: Path) -> None:
    data = {**base(tmp_path), "broker": {"host": " "}}
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    assert caught.value.problems == [
        "broker.host: empty: give the broker's host name or address (or enabled = false for "
        "a table without a broker) (got ' ')"
    ]


def write_config(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "table.toml"
    path.write_text(
        '[table]\nid = "T1"\nstacks = { 1 = 100, 2 = 100 }\nbutton = 1\nblinds = [1, 2]\n'
        'shuffler = "dealer-shoe"\n[security]\nrequire_signed = false\n'
        f'[devices.shuffler]\ndriver = "virtual"\n[journal]\npath = "{tmp_path / "j.sqlite"}"\n'
        f"{extra}"
    )
    return path


def test_config_check_and_run_print_every_problem_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(
        tmp_path, f'[broker]\npassword_file = "{tmp_path / "pw"}"\n[daemon]\nconsole = "/no/c"\n'
    )
    assert main(["config", "check", "--config", str(path)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == f"{path}:"
    assert [line.strip().split(":")[0] for line in lines[1:]] == [
        "broker.password_file",
        "daemon.console",
        "table.shuffler",
    ]
    assert main(["run", "--config", str(path)]) == 2  # refused before anything starts
    err = capsys.readouterr().err
    assert err.startswith(f"tablectl run: {path}:\n")
    assert f"  broker.password_file: no such file: {tmp_path / 'pw'}" in err
    assert not (tmp_path / "j.sqlite").exists()


def test_an_archive_dir_that_is_not_there_is_named_by_check_not_by_run(tmp_path: Path) -> None:
    """A NAS not mounted: `config check` names it; `run` starts (and retries the copies)."""
    missing = {"journal": {"archive_dir": str(tmp_path / "nas")}}
    found = problems_of(tmp_path, lambda t: missing)
    assert found == [f"journal.archive_dir: {tmp_path / 'nas'} is not a directory (not mounted?)"]
    data = base(tmp_path)
    data["journal"] = {**data["journal"], **missing["journal"]}
    assert run_problems(parse_config(data), journal_content=False) == []
    (tmp_path / "nas").mkdir()
    assert problems_of(tmp_path, lambda t: missing) == []

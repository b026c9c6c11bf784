"""Secrets from systemd's ``LoadCredential=``: a config value ``$CREDENTIALS_DIRECTORY/NAME`` is
read from the directory systemd names; without it, one line that says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.cli import main
from controller.config import ConfigError, load_config
from controller.credentials import expand_credentials
from controller.pit.config import load_pit_config
from tests.shell.test_cli_broker_options import config_file


def table_config(tmp_path: Path, password_file: str) -> Path:
    """A table config logging in to the broker with the password in ``password_file``."""
    return config_file(
        tmp_path, {"host": "127.0.0.1", "username": "table-t1", "password_file": password_file}
    )


def test_a_credential_is_read_from_the_directory_systemd_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    credentials = tmp_path / "credentials"
    credentials.mkdir()
    (credentials / "broker.password").write_text("s3cret\n")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(credentials))
    config = load_config(table_config(tmp_path, "$CREDENTIALS_DIRECTORY/broker.password"))
    assert config.broker.password_file == credentials / "broker.password"
    assert config.broker.secret() == "s3cret"


def test_without_the_variable_the_config_says_so_and_nothing_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CREDENTIALS_DIRECTORY", raising=False)
    path = table_config(tmp_path, "$CREDENTIALS_DIRECTORY/broker.password")
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert "broker.password_file: $CREDENTIALS_DIRECTORY/broker.password" in str(refused.value)
    assert main(["run", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "CREDENTIALS_DIRECTORY is not set" in err
    assert "LoadCredential=" in err
    assert "Traceback" not in err
    assert not (tmp_path / "journal.sqlite").exists()


@pytest.mark.parametrize(
    "value", ["$CREDENTIALS_DIRECTORY/", "$CREDENTIALS_DIRECTORY/../etc/shadow",
              "$CREDENTIALS_DIRECTORY/a/b", "$CREDENTIALS_DIRECTORY/.."],
)  # fmt: skip
def test_a_credential_is_one_name_never_a_way_out_of_the_directory(value: str) -> None:
    data, problems = expand_credentials(
        {"broker": {"password_file": value}}, {"CREDENTIALS_DIRECTORY": "/run/credentials/x"}
    )
    assert problems == [f"broker.password_file: {value}: a credential is one name in the directory"]
    assert data["broker"]["password_file"] == value


def test_only_the_prefix_is_expanded_anywhere_in_the_config() -> None:
    environ = {"CREDENTIALS_DIRECTORY": "/run/credentials/table-controller.service"}
    data, problems = expand_credentials(
        {
            "broker": {"tls": {"key_file": "$CREDENTIALS_DIRECTORY/client.key"}},
            "list": ["$CREDENTIALS_DIRECTORY/a", "x"],
            "other": "$HOME/x",
            "mid": "/etc/$CREDENTIALS_DIRECTORY/x",
            "number": 3,
        },
        environ,
    )
    assert problems == []
    assert data == {
        "broker": {"tls": {"key_file": "/run/credentials/table-controller.service/client.key"}},
        "list": ["/run/credentials/table-controller.service/a", "x"],
        "other": "$HOME/x",
        "mid": "/etc/$CREDENTIALS_DIRECTORY/x",
        "number": 3,
    }


def test_the_pit_reads_its_signing_key_from_a_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CREDENTIALS_DIRECTORY", raising=False)
    path = tmp_path / "pit.toml"
    path.write_text('[security]\nkey = "$CREDENTIALS_DIRECTORY/pit.key"\n')
    with pytest.raises(ConfigError, match=r"security\.key: \$CREDENTIALS_DIRECTORY/pit\.key"):
        load_pit_config(path)

"""The pit's config: the example passes ``config check``; mistakes are named, one line each."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.cli import main
from controller.config import ConfigError
from controller.pit.config import load_pit_config

EXAMPLE = Path(__file__).resolve().parents[2] / "config" / "pit.example.toml"


def test_the_example_is_valid_and_its_store_is_beside_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = load_pit_config(EXAMPLE)
    assert config.store.url == f"sqlite:///{EXAMPLE.parent / 'pit.sqlite'}"
    assert config.client_id == "pit-pit-1"
    assert main(["config", "check", "--config", str(EXAMPLE)]) == 0
    assert "ok (pit pit-1, group pit, store sqlite)" in capsys.readouterr().out


def test_mistakes_are_named_and_the_environment_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "pit.toml"
    path.write_text(
        '[pit]\nid = "pit/1"\nsession_expiry = 60\nconfirm_interval = 0\n'
        '[store]\nurl = "mysql://x"\n'
        '[security]\nkey = "missing.key"\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_pit_config(path)
    text = str(caught.value)
    assert "pit.id" in text
    assert "pit.session_expiry" in text
    assert "pit.confirm_interval" in text
    assert "store.url" in text
    path.write_text('[pit]\nid = "pit-1"\n[security]\nkey = "missing.key"\n')
    with pytest.raises(ConfigError, match=r"security\.key: .*no such key file"):
        load_pit_config(path)
    path.write_text('[pit]\nid = "pit-1"\n')
    monkeypatch.setenv("TABLECTL_PIT__ID", "pit-2")
    assert load_pit_config(path).pit.id == "pit-2"


def test_the_web_limits_and_trusted_proxies_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "pit.toml"
    path.write_text(
        '[pit]\nid = "pit-1"\n'
        '[web]\nstreams_per_session = 0\nheader_timeout = 0\ntrusted_proxies = ["*"]\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_pit_config(path)
    text = str(caught.value)
    for name in ("web.streams_per_session", "web.header_timeout", "web.trusted_proxies"):
        assert name in text
    assert "an IP address, or a network such as 10.0.0.0/8" in text
    path.write_text('[web]\ntrusted_proxies = ["127.0.0.1", "10.1.0.0/16"]\nstreams_total = 5\n')
    web = load_pit_config(path).web
    assert (web.trusted_proxies, web.streams_total, web.streams_per_user) == (
        ["127.0.0.1", "10.1.0.0/16"],
        5,
        8,
    )


def test_a_pit_reaches_a_broker_on_another_machine_over_tls_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "pit.toml"
    path.write_text('[pit]\nid = "pit-1"\n[broker]\nhost = "pit-broker.local"\n')
    for argv in (["config", "check", "--config", str(path)], ["pit", "run", "--config", str(path)]):
        assert main(argv) != 0
        assert "broker.tls.enabled: pit-broker.local is another machine" in capsys.readouterr().err
    path.write_text(
        '[pit]\nid = "pit-1"\n[broker]\nhost = "pit-broker.local"\nport = 8883\n'
        "[broker.tls]\nenabled = true\n"
    )
    assert main(["config", "check", "--config", str(path)]) == 0

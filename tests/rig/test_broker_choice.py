"""The rig's broker by default: a mosquitto of its own when the binary is installed, otherwise the
journal alone, said in so many words (the note is what ``tablectl demo`` prints first)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulators.rig import rig as rig_module
from simulators.rig.broker import AUTO, can_connect
from simulators.rig.rig import Rig, RigOptions
from tests.integration.broker import mosquitto_available


async def test_without_mosquitto_the_events_stay_in_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rig_module, "mosquitto_binary", lambda: None)
    async with Rig(RigOptions(broker=AUTO, directory=tmp_path)) as rig:
        assert rig.address is None
        assert rig.local_broker is None
        assert rig.broker_note == "mosquitto is not installed: the events stay in the journal"


@pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed")
async def test_with_mosquitto_a_broker_of_its_own_on_a_free_port(tmp_path: Path) -> None:
    async with Rig(RigOptions(broker=AUTO, directory=tmp_path)) as rig:
        address = rig.address
        assert address is not None
        assert address.host in {"127.0.0.1", "localhost"}
        login = address.console
        assert login is not None  # its ACL takes no anonymous client: the note says whom it takes
        assert rig.broker_note == (
            f"a mosquitto of its own at {address.url} "
            f"(user {login.username}, password in {login.password_file})"
        )
        assert await can_connect(address)
        assert rig.local_broker is not None
    # closing the rig stops the broker it started
    assert not await can_connect(address)

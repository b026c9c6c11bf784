"""``tablectl tail`` (pretty and ``--json``) and ``tablectl dealer`` against a real mosquitto,
with the daemon on the rig's devices; on the rig's own mosquitto (its ACL), with the login the
rig names."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from controller.authority import Role
from controller.table.inputs import DeviceHealthChanged, Health
from simulators.rig.broker import AUTO
from simulators.rig.mirror import Mirror, open_reader
from simulators.rig.rig import OpenTable, Rig, RigOptions
from simulators.rig.setup import READER, SHUFFLER, TableSetup
from tests.integration.broker import mosquitto_available

pytestmark = pytest.mark.broker

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
async def table(broker_url: str, tmp_path: Path) -> AsyncIterator[OpenTable]:
    if broker_url == "none":
        pytest.skip("mosquitto is not installed")
    async with Rig(RigOptions(broker=broker_url, prefix="cli", directory=tmp_path)) as rig:
        table = await rig.open_table(TableSetup(id="T9", stacks={1: 100, 2: 100, 3: 100}, button=3))
        await devices_online_and_published(table)
        yield table


async def devices_online_and_published(table: OpenTable) -> None:
    """Both devices online, and the events saying so delivered by the broker: a tail started
    after this sees only what the test makes happen (on a busy machine a device may come online
    after READY, and its event would be the first the tail prints)."""
    mirror = Mirror(await open_reader(table.journal))
    try:
        for device in (SHUFFLER, READER):

            def online(item: object, device: str = device) -> bool:
                return (
                    isinstance(item, DeviceHealthChanged)
                    and item.device == device
                    and item.health is Health.ONLINE
                )

            await mirror.wait_for(online, f"the {device} online", 0, 20)
        assert table.rig.link is not None
        await table.rig.link.wait_events(mirror.epoch, mirror.last_seq, timeout=20)
    finally:
        mirror.close()


def target(table: OpenTable) -> list[str]:
    """Where ``tablectl dealer`` sends, signed with the rig dealer's key."""
    assert table.broker is not None
    key = table.rig.keys.key_file(Role.DEALER)
    broker = ["--broker", table.broker.url, "--prefix", "cli", "--table", "T9"]
    return [*broker, "--signing-key", str(key)]


def tail_target(table: OpenTable) -> list[str]:
    assert table.broker is not None
    return ["--broker", table.broker.url, "--prefix", "cli", "--table", "T9"]


async def tablectl(*args: str, timeout: float = 20.0) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "controller.cli", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def started_tail(*args: str) -> asyncio.subprocess.Process:
    """``tablectl tail``, once it is subscribed (the retained status has reached it)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "controller.cli", "tail", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=REPO,
    )  # fmt: skip
    stream = proc.stderr if "--json" in args else proc.stdout
    assert stream is not None
    line = await asyncio.wait_for(stream.readline(), 20)
    assert line.startswith(b"# status online"), line
    return proc


async def test_dealer_commands_and_a_json_tail_of_the_surveillance_stream(
    table: OpenTable,
) -> None:
    tail = await started_tail(*tail_target(table), "--secure", "--json", "--count", "3")
    code, out, err = await tablectl("dealer", *target(table), "start_hand")
    assert code == 0, err
    response = json.loads(out)
    assert response["status"] == "ok"
    assert [e["type"] for e in response["data"]["events"]] == [
        "hand.started",
        "betting.action",
        "betting.action",
    ]
    printed, _ = await asyncio.wait_for(tail.communicate(), 20)
    assert tail.returncode == 0
    events = [json.loads(line) for line in printed.decode().splitlines()]
    assert [e["type"] for e in events] == ["hand.started", "betting.action", "betting.action"]
    assert [e["seq"] for e in events] == [e["seq"] for e in response["data"]["events"]]
    assert {e["hand_id"] for e in events} == {"T9-00001"}
    assert events[1]["data"] == {
        "seat": 1, "action": "post", "blind": "small", "amount": 1, "stack": 99, "all_in": False,
    }  # fmt: skip


async def test_refused_commands_exit_1_with_the_reason(table: OpenTable) -> None:
    code, out, _ = await tablectl("dealer", *target(table), "action", "seat=3", "action=call")
    assert code == 1
    refused = json.loads(out)
    assert refused["status"] == "error"
    assert "no hand" in refused["error"]
    code, out, _ = await tablectl("dealer", *target(table), "action", "bogus=1")
    assert code == 1
    assert "bogus" in json.loads(out)["error"]
    code, _, err = await tablectl("dealer", *target(table), "action", "seat")
    assert code == 2
    assert "key=value" in err
    # the rig's tables take signed requests only
    code, out, _ = await tablectl("dealer", *tail_target(table), "start_hand")
    assert code == 1
    assert "unsigned" in json.loads(out)["error"]
    floor = table.rig.keys.key_file(Role.FLOOR)
    signed = ["--signing-key", str(floor), "--signing-key-id", "rig-dealer"]
    code, out, _ = await tablectl("dealer", *tail_target(table), *signed, "start_hand")
    assert code == 1
    assert "signature does not hold" in json.loads(out)["error"]


@pytest.mark.skipif(shutil.which("mosquitto_pub") is None, reason="mosquitto-clients missing")
async def test_a_request_printed_signed_is_sent_by_mosquitto_pub_and_answered(
    table: OpenTable,
) -> None:
    """``tablectl dealer --print`` writes the signed request; an independent client
    (mosquitto_pub) publishes it and the table runs it, answering on the response topic."""
    assert table.broker is not None
    host, port = table.broker.url.removeprefix("mqtt://").rsplit(":", 1)
    key = table.rig.keys.key_file(Role.DEALER)
    code, body, err = await tablectl(
        "dealer", "--table", "T9", "--signing-key", str(key), "--print",
        "--transaction", "by-mosquitto-pub", "start_hand",
    )  # fmt: skip
    assert code == 0, err
    request = json.loads(body)
    assert request["transaction"] == "by-mosquitto-pub"
    assert request["auth"]["sig"]  # signed, as the rig's tables require
    answer = await asyncio.create_subprocess_exec(
        "mosquitto_sub", "-h", host, "-p", port, "-V", "mqttv5", "-C", "1", "-W", "30",
        "-t", "cli/T9/response/start_hand",
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert answer.stdout is not None
    # The response is not retained: one sent before mosquitto_sub subscribed would be missed.
    # The same transaction is answered again with the stored response and runs nothing
    # (docs/mqtt.md, "At most once"), so the request goes again until the answer is heard.
    async with asyncio.timeout(60):
        while True:
            sent = await asyncio.create_subprocess_exec(
                "mosquitto_pub", "-h", host, "-p", port, "-V", "mqttv5", "-q", "1",
                "-t", "cli/T9/request/start_hand", "-s",
                stdin=asyncio.subprocess.PIPE,
            )  # fmt: skip
            await sent.communicate(body.encode())
            assert sent.returncode == 0
            try:
                out = await asyncio.wait_for(answer.stdout.readline(), 2.0)
                break
            except TimeoutError:
                continue
    await answer.communicate()  # (its pipe read to its end: its transport closes)
    response = json.loads(out)
    assert (response["transaction"], response["status"]) == ("by-mosquitto-pub", "ok")
    assert response["data"]["events"][0]["type"] == "hand.started"
    # unsigned, the same request is refused: --print signs only with --signing-key
    code, body, _ = await tablectl("dealer", "--table", "T9", "--print", "start_hand")
    assert code == 0
    assert "auth" not in json.loads(body)


async def test_a_pretty_tail_of_the_public_stream(table: OpenTable) -> None:
    code, _, err = await tablectl("dealer", *target(table), "start_hand")
    assert code == 0, err
    tail = await started_tail(*tail_target(table), "--count", "1")
    code, _, err = await tablectl("dealer", *target(table), "misdeal", "reason=cards flashed")
    assert code == 0, err
    printed, _ = await asyncio.wait_for(tail.communicate(), 20)
    line = printed.decode().strip()
    seq, hand, kind, rules, data = line.split(maxsplit=4)
    assert (hand, kind) == ("T9-00001", "hand.misdeal")
    assert "MD-REDEAL" in rules.split(",")
    assert json.loads(data)["reason"] == "cards flashed"
    assert int(seq) > 3


@pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed")
async def test_on_the_rigs_own_broker_the_clients_need_the_login_the_rig_names(
    tmp_path: Path,
) -> None:
    async with Rig(RigOptions(broker=AUTO, prefix="cli", directory=tmp_path)) as rig:
        table = await rig.open_table(TableSetup(id="T9", stacks={1: 100, 2: 100}, button=2))
        assert rig.address is not None
        login = rig.address.console
        assert login is not None
        assert f"user {login.username}, password in {login.password_file}" in rig.broker_note
        # without it, the broker's ACL refuses: one line saying so, not a traceback
        for verb in (["dealer", *target(table), "start_hand"], ["tail", *tail_target(table)]):
            code, out, err = await tablectl(*verb)
            assert (code, out) == (2, ""), err
            assert "Not authorized" in err, err
            assert "--username" in err
            assert "Traceback" not in err
        user = ["--username", login.username, "--password-file", str(login.password_file)]
        tail = await started_tail(*tail_target(table), *user, "--secure", "--json", "--count", "1")
        code, out, err = await tablectl("dealer", *target(table), *user, "start_hand")
        assert code == 0, err
        assert json.loads(out)["status"] == "ok"
        printed, _ = await asyncio.wait_for(tail.communicate(), 20)
        assert tail.returncode == 0
        assert json.loads(printed.decode().splitlines()[0])["type"] == "hand.started"

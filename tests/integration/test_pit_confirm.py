"""The pit tells a table how far its journal is stored: signed ``stored`` requests on the table's
request topic, with the contiguous watermark, never past a gap; again when the table comes back
online; a refusal is counted, never fatal."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from controller.authority import Role
from controller.keyring import Keyring, load_keyring
from controller.signing import canonical, signature_holds
from simulators.rig.keys import RigKeys
from tests.integration.broker import Broker
from tests.integration.pit import PitProcess
from tests.waiting import until

pytestmark = [pytest.mark.broker]

TABLE, EPOCH = "T9", "e1"
BASE = f"tables/{TABLE}"


def envelope(seq: int) -> bytes:
    body = {
        "schema": "tablectl.event/1",
        "table_id": TABLE,
        "epoch": EPOCH,
        "seq": seq,
        "event_id": f"{TABLE}:{EPOCH}:{seq}",
        "historical": False,
        "ts": f"2026-01-01T00:00:{seq:02d}.000Z",
        "hand_id": None,
        "type": "device.status",
        "rules": [],
        "severity": "info",
        "needs_confirm": False,
        "data": {},
    }
    return json.dumps(body).encode()


def status(state: str, bdseq: int) -> bytes:
    body = {"state": state, "bdseq": bdseq, "ts": "2026-01-01T00:00:00Z", "version": "test"}
    return json.dumps({**body, "simulated": True, "require_signed": True}).encode()


def verified(keyring: Keyring, body: dict[str, Any]) -> dict[str, Any]:
    """The fields of a ``stored`` request whose signature holds for a pit key of the keyring."""
    auth = body["auth"]
    entry = keyring.keys[auth["key"]]
    assert Role.PIT.value in entry.roles
    fields = {k: v for k, v in body.items() if k not in ("transaction", "auth")}
    message = canonical(
        "stored", TABLE, body["transaction"], fields, auth["ts"], auth["nonce"], None
    )
    assert signature_holds(entry.raw_public_key, auth["sig"], message), body
    return fields


async def test_the_watermark_stops_below_a_gap_advances_once_repaired_and_is_signed(
    tmp_path: Path, broker: Broker
) -> None:
    keys = RigKeys.create(tmp_path / "keys")
    keyring = load_keyring(keys.keyring)
    pit = PitProcess(
        tmp_path / "pit",
        broker,
        key=keys.key_file(Role.PIT),
        repair_after=0.3,
        confirm_interval=0.3,
    )
    confirmed: list[int] = []
    replays: list[dict[str, Any]] = []
    try:
        pit.start()
        async with aiomqtt.Client(
            "127.0.0.1", broker.port, protocol=aiomqtt.ProtocolVersion.V5
        ) as table:
            await table.subscribe(f"{BASE}/request/#", qos=1)

            async def answer() -> None:
                async for message in table.messages:
                    verb = message.topic.value.rsplit("/", 1)[1]
                    body = json.loads(message.payload)
                    if verb == "replay":
                        replays.append(body)
                        continue
                    fields = verified(keyring, body)
                    assert fields == {"pit": "pit-1", "epoch": EPOCH, "seq": fields["seq"]}
                    confirmed.append(fields["seq"])
                    # the first is refused, as a table that cannot take it would: never fatal
                    refused = len(confirmed) == 1
                    response = {
                        "transaction": body["transaction"],
                        "status": "error" if refused else "ok",
                        "data": {},
                        "error": "not now" if refused else None,
                    }
                    await table.publish(
                        f"{BASE}/response/stored", json.dumps(response).encode(), qos=1
                    )

            answering = asyncio.create_task(answer())
            try:
                await table.publish(f"{BASE}/status", status("online", 1), qos=1, retain=True)
                for seq in (*range(1, 11), *range(16, 21)):  # 11-15 held back
                    await table.publish(f"{BASE}/events", envelope(seq), qos=1)
                await until(lambda: 10 in confirmed, 60, "the watermark at 10")
                await until(lambda: bool(replays), 60, "the pit to ask for the gap")
                assert (replays[0]["from_seq"], replays[0]["to_seq"]) == (11, 15)
                seen = len(confirmed)
                # the gap stays: the pit goes on scanning, and no confirmation passes it
                await until(lambda: len(replays) >= 2, 60, "the gap asked for again")
                assert max(confirmed) == 10, confirmed
                assert len(confirmed) == seen  # nothing advanced: nothing sent again
                for seq in range(11, 16):  # the replay, as the table would answer it
                    await table.publish(f"{BASE}/replay/pit-1", envelope(seq), qos=1)
                await until(lambda: 20 in confirmed, 60, "the watermark at 20 once repaired")
                assert all(seq <= 10 or seq == 20 for seq in confirmed), confirmed
                assert confirmed == sorted(confirmed)
                # the table comes back online: told at once though nothing advanced
                count = len(confirmed)
                await table.publish(f"{BASE}/status", status("offline", 1), qos=1, retain=True)
                await table.publish(f"{BASE}/status", status("online", 2), qos=1, retain=True)
                await until(lambda: len(confirmed) > count, 60, "a confirmation after the birth")
                assert confirmed[count] == 20
            finally:
                answering.cancel()
                await asyncio.gather(answering, return_exceptions=True)
        metrics = pit.get("/metrics", auth=False)[1].decode()
        assert 'tablectl_pit_confirms_answered_total{status="error"} 1.0' in metrics
        assert pit.health().get("status") == "ok"
    finally:
        pit.close()

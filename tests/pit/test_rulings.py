"""The console's rulings: signed by the pit's key for the person, matched to the table's answer."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from controller.mqtt import MqttError
from controller.pit.rulings import RulingError, Rulings
from controller.signing import Signer, canonical, new_key, signature_holds


async def test_an_override_is_signed_for_the_person_and_gets_the_table_s_answer() -> None:
    private, public = new_key()
    sent: list[tuple[str, dict[str, Any]]] = []
    rulings: Rulings

    async def publish(topic: str, payload: bytes) -> None:
        body = json.loads(payload)
        sent.append((topic, body))
        rulings.on_response("T1", {"transaction": "someone else's", "status": "error"})
        rulings.on_response("T1", {"transaction": body["transaction"], "status": "ok"})

    rulings = Rulings("tables", publish, Signer(private, "pit", ""), timeout=5)
    fields = {"rule": "SEAT-COUNT", "decision": "misdeal"}
    answer = await rulings.send("T1", "override", fields, "ann")
    assert answer["status"] == "ok"
    ((topic, body),) = sent
    assert topic == "tables/T1/request/floor_override"
    auth = body["auth"]
    assert (auth["key"], auth["on_behalf_of"]) == ("pit", "ann")
    message = canonical(
        "floor_override", "T1", body["transaction"], fields, auth["ts"], auth["nonce"], "ann"
    )
    assert signature_holds(base64.b64decode(public), auth["sig"], message)


async def test_no_key_no_answer_and_no_broker_are_each_one_clear_error() -> None:
    async def silent(topic: str, payload: bytes) -> None:
        return None

    async def away(topic: str, payload: bytes) -> None:
        raise MqttError("not connected to the broker")

    with pytest.raises(RulingError, match="no signing key"):
        await Rulings("tables", silent, None, 1).send("T1", "confirm", {"hold": "h"}, "ann")
    signer = Signer(new_key()[0], "pit", "")
    with pytest.raises(RulingError, match="did not answer"):
        await Rulings("tables", silent, signer, 0.05).send("T1", "confirm", {"hold": "h"}, "ann")
    with pytest.raises(RulingError, match="not sent"):
        await Rulings("tables", away, signer, 1).send("T1", "reject", {"hold": "h"}, "ann")

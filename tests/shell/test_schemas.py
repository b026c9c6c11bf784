"""The generated contracts are current, and real events match them."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from controller.envelope import envelope
from controller.shell.models import EVENT_DATA, Envelope, request_model
from controller.shell.schemas import ROOT, documents, stale
from controller.table.inputs import COMMANDS
from simulators.autoplay import AutoDealer, Style, random_table
from tests.helpers import SCENARIOS, run_file


def test_generated_files_are_current() -> None:
    out_of_date = stale()
    assert not out_of_date, (
        f"stale generated contracts: {', '.join(out_of_date)}; "
        "regenerate with: .venv/bin/python -m controller.shell.schemas"
    )


def all_envelopes() -> list[dict[str, Any]]:
    events = []
    for path in sorted(SCENARIOS.glob("*.toml")):
        events += run_file(path.name).events
    rng = random.Random(5)
    for _ in range(10):
        dealer = AutoDealer(random_table(rng), rng, Style(muck_loser=0.3))
        for _ in range(4):
            if not dealer.play_hand():
                break
        events += dealer.run.events
    out = []
    for seq, event in enumerate(events, start=1):
        for secure in (False, True):
            body = envelope(event, table_id="T", epoch="e", seq=seq, secure=secure)
            out.append(json.loads(json.dumps(body)))
    return out


def test_real_events_match_the_envelope_and_their_data_models() -> None:
    seen = set()
    for body in all_envelopes():
        Envelope.model_validate(body)
        model = EVENT_DATA.get(body["type"])
        assert model is not None, (
            f"event type {body['type']!r} has no data model: add it to EVENT_DATA in "
            "controller/shell/models.py and regenerate the schemas"
        )
        model.model_validate(body["data"])
        seen.add(body["type"])
    for common in ("hand.started", "betting.action", "deal.group.delivered", "pot.awarded"):
        assert common in seen


def test_every_command_has_a_request_schema_file() -> None:
    files = documents()
    for verb in COMMANDS:
        assert f"schemas/commands/{verb}.schema.json" in files
    schema = json.loads(files["schemas/commands/action.schema.json"])
    assert {"transaction", "seat", "action"} <= set(schema["required"])
    assert "ts" not in schema["properties"]
    request_model("action").model_validate({"transaction": "t", "seat": 1, "action": "call"})
    with pytest.raises(ValueError, match="transaction"):
        request_model("action").model_validate({"seat": 1, "action": "call"})


def test_asyncapi_refers_to_files_that_exist_and_covers_every_topic() -> None:
    doc = json.loads((ROOT / "asyncapi.json").read_text())
    assert doc["asyncapi"] == "3.0.0"
    refs = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                refs.append(node["$ref"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(doc)
    for ref in refs:
        if ref.startswith("#/"):
            target: Any = doc
            for part in ref[2:].split("/"):
                target = target[part]
        else:
            assert (ROOT / ref).is_file(), ref
    addresses = {c["address"] for c in doc["channels"].values()}
    for tail in (
        "status",
        "events",
        "secure/events",
        "state",
        "devices/{device}",
        "request/{command}",
        "response/{command}",
    ):
        assert "{prefix}/{table}/" + tail in addresses
    used = {op["channel"]["$ref"] for op in doc["operations"].values()}
    assert used >= {f"#/channels/{name}" for name in doc["channels"] if name != "response"}
    assert Path(ROOT / "schemas" / "event.schema.json").is_file()

"""Generate the published contracts into ``config/``: JSON Schemas and the AsyncAPI document.

``python -m controller.shell.schemas`` writes them; a test regenerates them in memory and fails
when the files in the repository are stale.

* ``config/schemas/config.schema.json`` — the table config;
* ``config/schemas/event.schema.json`` — the envelope, with the ``data`` of each event type;
* ``config/schemas/commands/<command>.schema.json`` — each dealer request;
* ``config/schemas/{response,status,head,state,device}.schema.json``;
* ``config/schemas/snapshot.schema.json`` — the table between hands in the journal (the format
  of ``controller/shell/checkpoint.py``, ``docs/snapshots.md``);
* ``config/asyncapi.json`` — the topics (AsyncAPI 3.0), referring to those schemas.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from controller import __version__
from controller.config import config_schema
from controller.shell.checkpoint import schema as snapshot_schema
from controller.shell.maintenance import REQUESTS
from controller.shell.models import (
    EVENT_DATA,
    DeviceTopic,
    Envelope,
    Head,
    Response,
    StateSnapshot,
    Status,
    request_model,
)
from controller.shell.replay import VERB as REPLAY
from controller.shell.replay import ReplayRequest

#: Every request verb: the core's commands, maintenance's and the shell's replay.
VERBS = sorted((*REQUESTS, REPLAY))

ROOT = Path(__file__).resolve().parents[2] / "config"
SCHEMA_ID = "urn:tablectl:schema:"
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _schema(model: type[BaseModel], name: str, title: str) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True)
    return {"$schema": DRAFT, "$id": f"{SCHEMA_ID}{name}", **schema, "title": title}


def event_schema() -> dict[str, Any]:
    """The envelope, and for each known type the schema of its ``data``."""
    schema = _schema(Envelope, "event", "tablectl event envelope (tablectl.event/1)")
    defs: dict[str, Any] = schema.setdefault("$defs", {})
    conditions = []
    for event_type, model in sorted(EVENT_DATA.items()):
        data = model.model_json_schema(ref_template="#/$defs/{model}")
        defs.update(data.pop("$defs", {}))
        defs[model.__name__] = data
        conditions.append(
            {
                "if": {"properties": {"type": {"const": event_type}}},
                "then": {"properties": {"data": {"$ref": f"#/$defs/{model.__name__}"}}},
            }
        )
    schema["allOf"] = conditions
    schema["properties"]["type"]["examples"] = sorted(EVENT_DATA)
    return schema


def documents() -> dict[str, str]:
    """Every generated file: path relative to ``config/`` → text."""
    files: dict[str, Any] = {
        "schemas/config.schema.json": config_schema(),
        "schemas/event.schema.json": event_schema(),
        "schemas/response.schema.json": _schema(Response, "response", "response to a request"),
        "schemas/status.schema.json": _schema(Status, "status", "birth and Last Will"),
        "schemas/head.schema.json": _schema(Head, "head", "the last event published"),
        "schemas/state.schema.json": _schema(StateSnapshot, "state", "public table snapshot"),
        "schemas/device.schema.json": _schema(DeviceTopic, "device", "device health"),
        "schemas/snapshot.schema.json": snapshot_schema(),
    }
    for verb in VERBS:
        files[f"schemas/commands/{verb}.schema.json"] = _schema(
            request_model(verb), f"command:{verb}", f"request {verb}"
        )
    files["asyncapi.json"] = asyncapi()
    return {
        path: json.dumps(body, indent=2, ensure_ascii=False) + "\n" for path, body in files.items()
    }


def _ref(path: str) -> dict[str, str]:
    return {"$ref": path}


def asyncapi() -> dict[str, Any]:
    """The AsyncAPI 3.0 document of one table's topics."""
    parameters = {
        "prefix": {"description": "topic prefix (broker.prefix)", "default": "tables"},
        "table": {"description": "table id (table.id)"},
    }

    def channel(address: str, messages: dict[str, Any], description: str, **extra: Any) -> Any:
        params = dict(parameters)
        for name, text in extra.items():
            params[name] = {"description": text}
        return {
            "address": "{prefix}/{table}/" + address,
            "description": description,
            "parameters": params,
            "messages": messages,
        }

    def message(name: str, schema: str, summary: str) -> dict[str, Any]:
        return {
            "name": name,
            "summary": summary,
            "contentType": "application/json",
            "payload": _ref(f"schemas/{schema}"),
        }

    docs = {verb: cls.__doc__ or "" for verb, cls in REQUESTS.items()}
    docs[REPLAY] = ReplayRequest.__doc__ or ""
    commands = {
        verb: {
            **message(verb, f"commands/{verb}.schema.json", docs[verb].split("\n")[0]),
            "correlationId": {"location": "$message.payload#/transaction"},
        }
        for verb in VERBS
    }

    def qos(retain: bool) -> dict[str, Any]:
        return {"mqtt": {"qos": 1, "retain": retain, "bindingVersion": "0.2.0"}}

    def op(action: str, name: str, retain: bool, summary: str, **extra: Any) -> dict[str, Any]:
        return {
            "action": action,
            "channel": _ref(f"#/channels/{name}"),
            "summary": summary,
            "bindings": qos(retain),
            **extra,
        }

    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "tablectl table controller",
            "version": __version__,
            "description": (
                "The MQTT topics of one table. On every connect the controller publishes its "
                "birth, republishes the retained state and devices, subscribes to requests, "
                "then publishes the events still in its outbox, in order, marked historical "
                "when late. Consumers de-duplicate on event_id."
            ),
        },
        "defaultContentType": "application/json",
        "servers": {
            "pit": {
                "host": "localhost:1883",
                "protocol": "mqtt",
                "protocolVersion": "5",
                "description": "the pit broker (broker.host, broker.port; TLS when enabled)",
                "bindings": {
                    "mqtt": {
                        "clientId": "tablectl-{table}",
                        "cleanSession": True,
                        "keepAlive": 15,
                        "lastWill": {
                            "topic": "{prefix}/{table}/status",
                            "qos": 1,
                            "message": '{"state": "offline", "bdseq": …}',
                            "retain": True,
                        },
                        "bindingVersion": "0.2.0",
                    }
                },
            }
        },
        "channels": {
            "status": channel(
                "status",
                {"status": message("status", "status.schema.json", "birth or Last Will")},
                "Retained online/offline; the offline one is also the Last Will.",
            ),
            "head": channel(
                "head",
                {"head": message("head", "head.schema.json", "the last event published")},
                "Retained: the last event published and its place in the journal's hash "
                "chain, published before the events up to it; read back on every connect.",
            ),
            "events": channel(
                "events",
                {"event": message("event", "event.schema.json", "a table event, public view")},
                "Every table event without its secret fields, in order, one envelope each.",
            ),
            "secureEvents": channel(
                "secure/events",
                {"event": message("event", "event.schema.json", "surveillance view")},
                "Every event with card identities not yet public (ACL-protected).",
            ),
            "state": channel(
                "state",
                {"state": message("state", "state.schema.json", "public snapshot")},
                "Retained public snapshot: hand, phase, button, seats, board, pot.",
            ),
            "device": channel(
                "devices/{device}",
                {"device": message("device", "device.schema.json", "health and identity")},
                "Retained health and identity of one device.",
                device="device id (devices.<id> in the config)",
            ),
            "request": channel(
                "request/{command}",
                commands,
                "Dealer and pit requests; each runs at most once per transaction.",
                command="command verb",
            ),
            "replay": channel(
                "replay/{pit}",
                {"event": message("event", "event.schema.json", "a replayed event, public view")},
                "The events a replay request asked for, from the journal, historical.",
                pit="the asking pit's id (the request's pit field)",
            ),
            "secureReplay": channel(
                "secure/replay/{pit}",
                {"event": message("event", "event.schema.json", "a replayed event, secure view")},
                "A replay of the secure stream (surveillance only, ACL-protected).",
                pit="the asking pit's id (the request's pit field)",
            ),
            "response": channel(
                "response/{command}",
                {"response": message("response", "response.schema.json", "the answer")},
                "The answer to a request, echoing its transaction and correlation data.",
                command="command verb",
            ),
        },
        "operations": {
            "publishStatus": op("send", "status", True, "birth on connect; Will on loss"),
            "publishHead": op("send", "head", True, "before each batch of events"),
            "publishEvents": op("send", "events", False, "every event, QoS 1, in seq order"),
            "publishSecureEvents": op("send", "secureEvents", False, "the surveillance stream"),
            "publishState": op("send", "state", True, "on change and on every connect"),
            "publishDevice": op("send", "device", True, "on change and on every connect"),
            "publishReplay": op("send", "replay", False, "the events a pit asked for again"),
            "publishSecureReplay": op("send", "secureReplay", False, "a secure replay"),
            "receiveRequest": op(
                "receive",
                "request",
                False,
                "a dealer request",
                reply={"channel": _ref("#/channels/response")},
            ),
        },
    }


def write(root: Path = ROOT) -> list[Path]:
    """Write every generated file under ``root``; return the paths written."""
    written = []
    for relative, text in documents().items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def stale(root: Path = ROOT) -> list[str]:
    """The generated files that are missing or differ from what the models give."""
    out = []
    for relative, text in documents().items():
        path = root / relative
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            out.append(relative)
    return out


if __name__ == "__main__":
    for written in write():
        print(written, file=sys.stderr)

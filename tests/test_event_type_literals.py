"""Events are read as types: no module outside the event definitions writes an event type as a
string literal (docs/architecture.md, "An event type").

A reader asks ``isinstance(decode(envelope), HandHold)`` (controller/table/decoder.py) or
compares with ``HandHold.TYPE``; it never writes ``"hand.hold"``, so a renamed or removed type
is an import error in every reader, not a comparison that quietly stops matching. The one place
such a literal may stand is a log call's message (``log.warning("journal.accepted", ...)``), the
name of a log line that happens to share the event's.
"""

from __future__ import annotations

import ast
from pathlib import Path

from controller.table.decoder import RECORDS

ROOT = Path(__file__).resolve().parents[1]
#: Where the event types are defined, each once.
DEFINITIONS = "controller/table/event_types/"
LOG_CALLS = frozenset({"debug", "info", "warning", "error", "exception", "critical", "msg"})


def literals(source: str, file: str) -> list[str]:
    """``file:line: "type"`` for each event-type literal in ``source`` outside a log message."""
    tree = ast.parse(source, filename=file)
    log_messages = {
        id(node.args[0])
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in LOG_CALLS
        and node.args
    }
    return [
        f"{file}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in RECORDS
        and id(node) not in log_messages
    ]


def test_no_module_outside_the_event_definitions_writes_an_event_type_as_a_string() -> None:
    found = []
    for top in ("controller", "drivers", "simulators"):
        for path in sorted((ROOT / top).rglob("*.py")):
            file = path.relative_to(ROOT).as_posix()
            if not file.startswith(DEFINITIONS):
                found += literals(path.read_text("utf-8"), file)
    assert not found, (
        "read the record (controller/table/decoder.py) or compare with the record's TYPE:\n"
        + "\n".join(found)
    )


def test_the_check_sees_comparisons_sets_and_dispatch_tables_but_not_log_names() -> None:
    source = (
        'if e.type == "hand.hold":\n'
        "    pass\n"
        'ENDS = ("hand.void", "hand.misdeal")\n'
        'HANDLERS = {"pot.awarded": f}\n'
        'log.warning("journal.accepted", by=x)\n'
        'log.info("hand.started")\n'
        'x = "not.an.event"\n'
    )
    assert literals(source, "m.py") == [
        "m.py:1: 'hand.hold'",
        "m.py:3: 'hand.void'",
        "m.py:3: 'hand.misdeal'",
        "m.py:4: 'pot.awarded'",
    ]

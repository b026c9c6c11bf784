"""Log lines: journald priority prefix and JSON off a terminal, context on every line, no locals."""

from __future__ import annotations

import io
import json

import structlog

from controller.shell import logging as shell_logging


def lines(stream: io.StringIO) -> list[tuple[int, dict[str, object]]]:
    out = []
    for line in stream.getvalue().splitlines():
        assert line.startswith("<")
        assert ">" in line
        prio, _, body = line[1:].partition(">")
        out.append((int(prio), json.loads(body)))
    return out


def test_json_lines_with_priorities_and_context() -> None:
    stream = io.StringIO()
    shell_logging.configure("debug", "auto", stream)  # a StringIO is not a terminal
    shell_logging.CONTEXT.table = "T7"
    shell_logging.CONTEXT.hand = "T7-00003"
    log = structlog.get_logger("test")
    log.info("hand.going", seat=3)
    log.warning("device.slow")
    log.error("journal.trouble")
    shell_logging.bind_device("shuffler")
    log.debug("device.ping")
    structlog.contextvars.clear_contextvars()
    found = lines(stream)
    assert [p for p, _ in found] == [6, 4, 3, 7]
    first = found[0][1]
    assert first["event"] == "hand.going"
    assert first["table"] == "T7"
    assert first["hand"] == "T7-00003"
    assert first["device"] is None
    assert found[3][1]["device"] == "shuffler"
    assert "timestamp" in first


def test_tracebacks_carry_no_locals() -> None:
    stream = io.StringIO()
    shell_logging.configure("info", "json", stream)
    password = "hunter2-broker-secret"
    try:
        raise RuntimeError("broker refused")
    except RuntimeError:
        structlog.get_logger("test").exception("mqtt.failed", note=len(password))
    text = stream.getvalue()
    assert "broker refused" in text
    assert "hunter2" not in text
    prio, body = lines(stream)[0]
    assert prio == 3
    assert body["exception"]


def test_console_format_is_plain_text() -> None:
    stream = io.StringIO()
    shell_logging.configure("info", "console", stream)
    structlog.get_logger("test").info("daemon.ready")
    text = stream.getvalue()
    assert "daemon.ready" in text
    assert not text.startswith("<")


def teardown_module() -> None:
    structlog.reset_defaults()

"""structlog for the daemon: JSON lines for journald, readable lines on a terminal.

Off a terminal every line is one JSON object prefixed with its syslog priority (``<6>{…}``),
which journald turns into the entry's priority, so ``journalctl -p warning`` works. On a
terminal the lines are coloured text. Every line carries ``table``, ``hand`` and ``device``
(null where they do not apply): ``table`` and ``hand`` come from :data:`CONTEXT`, which the
daemon keeps current, ``device`` from the context variables a device task binds.
Tracebacks are rendered without local variables: locals hold broker passwords and card UIDs.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any, TextIO

import structlog
from structlog.tracebacks import ExceptionDictTransformer
from structlog.typing import EventDict, Processor, WrappedLogger

_PRIORITY = {"critical": 2, "error": 3, "warning": 4, "warn": 4, "info": 6, "debug": 7}


class LogContext:
    """The table and the hand in progress, for every log line."""

    def __init__(self) -> None:
        self.table: str | None = None
        self.hand: str | None = None


CONTEXT = LogContext()


def _table_fields(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    event_dict.setdefault("table", CONTEXT.table)
    event_dict.setdefault("hand", CONTEXT.hand)
    event_dict.setdefault("device", None)
    return event_dict


def journal_json(_: WrappedLogger, __: str, event_dict: EventDict) -> str:
    """Render a line as ``<priority>{json}``."""
    priority = _PRIORITY.get(str(event_dict.get("level", "info")), 6)
    return f"<{priority}>" + json.dumps(event_dict, default=str, separators=(",", ":"))


def configure(level: str = "info", fmt: str = "auto", stream: TextIO | None = None) -> None:
    """Configure structlog for the process (``fmt``: auto, json or console)."""
    out = stream or sys.stdout
    console = fmt == "console" or (fmt == "auto" and out.isatty())
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        _table_fields,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: list[Processor]
    if console:
        renderer = [
            structlog.dev.ConsoleRenderer(exception_formatter=structlog.dev.plain_traceback)
        ]
    else:
        renderer = [
            structlog.processors.ExceptionRenderer(ExceptionDictTransformer(show_locals=False)),
            journal_json,
        ]
    root = logging.getLogger()
    root.handlers = [_LibraryLogs()]
    root.setLevel(logging.WARNING)  # a library's debug chatter is not the table's business
    structlog.configure(
        processors=[*shared, *renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.WriteLoggerFactory(out),
        cache_logger_on_first_use=False,
    )


class _LibraryLogs(logging.Handler):
    """Lines that libraries (paho, asyncio) log through the standard logging module."""

    def emit(self, record: logging.LogRecord) -> None:
        structlog.get_logger(record.name).log(
            record.levelno, "library.log", logger=record.name, message=record.getMessage()
        )


def bind_device(device: str) -> Any:
    """Bind ``device`` for the lines of the current task (and the tasks it starts)."""
    return structlog.contextvars.bind_contextvars(device=device)

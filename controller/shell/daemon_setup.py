"""What the daemon is made from: the table's journal, opened (on a full disk, once there is room),
and its parts' settings read from the table's config (controller/shell/daemon.py puts the daemon
together).
"""

from __future__ import annotations

import asyncio
import sqlite3

import structlog

from controller.config import SecuritySection, TableConfig
from controller.shell.gate import Limits, Policy
from controller.shell.intake import Rates
from controller.shell.journal import Journal
from controller.shell.notify import notify
from controller.shell.retention import RetentionConfig
from controller.shell.space import SpaceConfig, free_bytes, is_full

log = structlog.get_logger("tablectl.daemon")


def open_journal(config: TableConfig) -> Journal:
    """The table's journal (created on the first start)."""
    table = config.table
    journal = Journal.open(config.journal.path, table_id=table.id, genesis=table.genesis())
    if config.journal.max_pages is not None:
        journal.cap_pages(config.journal.max_pages)
    return journal


async def open_when_room(config: TableConfig) -> Journal:
    """:func:`open_journal`; while the disk has no room for it, again every ``[journal]
    disk_poll`` seconds, saying so in ``STATUS=`` and extending systemd's start timeout."""
    path = config.journal.path
    poll = config.journal.disk_poll
    waiting = False
    while True:
        try:
            journal = open_journal(config)
        except (sqlite3.Error, OSError) as exc:
            if not is_full(exc, path.parent):
                raise
            free = free_bytes(path.parent)
            if not waiting:
                log.error("journal.full_at_start", error=str(exc), free_bytes=free)
                waiting = True
            notify(
                f"STATUS=DEGRADED: journal disk full ({free} bytes free); waiting for space "
                "to open the journal",
                f"EXTEND_TIMEOUT_USEC={int(poll * 3 * 1_000_000)}",
                "WATCHDOG=1",
            )
            await asyncio.sleep(poll)
            continue
        if waiting:
            log.warning("journal.opened_after_full")
        return journal


def space_config(config: TableConfig) -> SpaceConfig:
    """The disk watch's settings from ``[journal]``."""
    return SpaceConfig(config.journal.low_disk_bytes, config.journal.disk_poll)


def retention_config(config: TableConfig) -> RetentionConfig:
    """Retention's settings from ``[journal]``."""
    journal = config.journal
    return RetentionConfig(
        live_hands=journal.live_hands,
        keep_days=journal.keep_days,
        max_bytes=journal.max_bytes,
        archive_dir=journal.archive_dir,
        interval=journal.retention_interval,
        inbox_seconds=journal.inbox_seconds,
    )


def policy_of(security: SecuritySection) -> Policy:
    """The gate's policy from ``[security]``."""
    return Policy(
        require_signed=security.require_signed,
        clock_skew=security.clock_skew,
        unsigned_roles=frozenset(security.unsigned_roles),
        limits=Limits(
            security.max_request_bytes,
            security.max_depth,
            security.max_int_digits,
            security.max_string,
        ),
    )


def rates_of(security: SecuritySection) -> Rates:
    """The intake's rate limits from ``[security]``."""
    return Rates(
        per_key=security.rate_per_key,
        per_key_burst=security.rate_per_key_burst,
        anonymous=security.rate_anonymous,
        anonymous_burst=security.rate_anonymous_burst,
        total=security.rate_total,
        total_burst=security.rate_total_burst,
        replays=security.rate_replays,
        replays_burst=security.rate_replays_burst,
        queue_limit=security.queue_limit,
    )

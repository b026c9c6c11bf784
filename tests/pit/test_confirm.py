"""Storage confirmation (controller/pit/confirm.py): a round's requests go out together."""

from __future__ import annotations

import asyncio
from pathlib import Path

from controller.pit.config import PitConfig
from controller.pit.confirm import Confirmer
from controller.pit.metrics import PitMetrics
from controller.pit.store import Store
from controller.pit.worker import StoreWorker
from tests.pit.test_store import envelope, event_in

TABLES = [f"T{n}" for n in range(5)]


async def stored_two_events_a_table(tmp_path: Path) -> tuple[PitConfig, StoreWorker]:
    """A store holding events 1 and 2 of each of ``TABLES`` (their watermark 2), and the
    repair's worker on it (open: the caller closes it)."""
    url = f"sqlite:///{tmp_path / 'pit.sqlite'}"
    store = Store(url)
    store.migrate()
    store.ingest([event_in(envelope(s, table=t, hand=None)) for t in TABLES for s in (1, 2)])
    store.advance([(t, "e1", "public", 2) for t in TABLES])
    store.close()
    worker = StoreWorker(url, "repair")
    await worker.open()
    return PitConfig(pit={"id": "pit-1"}, store={"url": url}), worker


async def test_a_round_sends_every_table_its_request_before_waiting_for_any_answer(
    tmp_path: Path,
) -> None:
    """Each table whose watermark advanced is sent its request, and the broker's
    acknowledgements are waited for together: a request waits for its PUBACK here until every
    request of the round is out, which a round sending them one after the other never gets
    past. What was sent is remembered: the next round, with nothing advanced, sends nothing."""
    config, worker = await stored_two_events_a_table(tmp_path)
    sent_to: list[str] = []
    every_one_out = asyncio.Event()

    async def publish(topic: str, _payload: bytes) -> None:
        sent_to.append(topic)
        if len(sent_to) == len(TABLES):
            every_one_out.set()
        await every_one_out.wait()  # the PUBACK

    confirmer = Confirmer(config, worker, PitMetrics("pit-1"), publish, None)
    try:
        async with asyncio.timeout(30):
            assert await confirmer.confirm_once() == len(TABLES)
            assert await confirmer.confirm_once() == 0
    finally:
        await worker.close()
    prefix = config.broker.prefix
    assert sorted(sent_to) == [f"{prefix}/{t}/request/stored" for t in TABLES]


async def test_advances_go_out_for_this_member_s_tables_and_births_for_every_table(
    tmp_path: Path,
) -> None:
    """In a share group a member sends the advances of the tables presence names it for; a
    table that came online is told at once by whichever member saw its birth."""
    config, worker = await stored_two_events_a_table(tmp_path)
    sent_to: list[str] = []

    async def publish(topic: str, _payload: bytes) -> None:
        sent_to.append(topic.split("/")[-3])

    mine = {"T1", "T3"}
    confirmer = Confirmer(
        config, worker, PitMetrics("pit-1"), publish, None, mine=lambda table: table in mine
    )
    try:
        async with asyncio.timeout(30):
            assert await confirmer.confirm_once() == 2
            assert sorted(sent_to) == ["T1", "T3"]
            sent_to.clear()
            assert await confirmer.confirm_once(due={"T2"}, advanced=False) == 1
            assert sent_to == ["T2"]
            sent_to.clear()
            mine.add("T4")  # a member went: its tables are this one's now, told at once
            assert await confirmer.confirm_once() == 1
            assert sent_to == ["T4"]
    finally:
        await worker.close()

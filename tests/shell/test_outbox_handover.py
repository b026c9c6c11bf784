"""The journal's writer hands the outbox rows it wrote to the broker link, which keeps a bounded
number of them: a table whose broker is down (or disabled) does not grow without end."""

from __future__ import annotations

from pathlib import Path

from controller.config import BrokerSection
from controller.mqtt import Message, Topic
from controller.shell.journal import Journal, NewEvent
from controller.shell.mqtt import FRESH_MAX, MqttLink
from controller.shell.topics import Topics
from controller.shell.writer import JournalWriter


async def test_rows_nobody_takes_are_left_to_the_journal(tmp_path: Path) -> None:
    journal = Journal.open(tmp_path / "journal.sqlite", table_id="T1")
    writer = JournalWriter(journal)
    link = MqttLink(
        BrokerSection(enabled=False),
        Topics("tables", "T1"),
        writer,
        client_id="test",
        simulated=True,
        historical_after=5.0,
    )
    written = 0
    for _ in range(FRESH_MAX):  # two messages an event: twice the bound
        appended = await writer.call(
            journal.append, input_row=None, events=[NewEvent("x", None, "{}")]
        )
        written += len(appended.outbox)
        assert len(link._fresh) <= FRESH_MAX
    assert written == 2 * FRESH_MAX
    assert not link._caught_up  # the next connection reads the outbox from the journal
    assert len(journal.pending(10 * FRESH_MAX)) == written  # where every row still is
    await writer.close()


async def test_a_request_whose_properties_do_not_decode_is_still_taken(tmp_path: Path) -> None:
    """A PUBLISH's properties are decoded when read (controller/mqtt/codec.py); malformed ones
    (property 0x7f does not exist) must not end the link's receive loop: the request goes on
    to the intake, answered without a correlation."""
    journal = Journal.open(tmp_path / "journal.sqlite", table_id="T1")
    writer = JournalWriter(journal)
    topics = Topics("tables", "T1")
    link = MqttLink(
        BrokerSection(enabled=False),
        topics,
        writer,
        client_id="test",
        simulated=True,
        historical_after=5.0,
    )
    taken: list[tuple[str, bytes]] = []
    link.on_request = lambda verb, data, reply, retained: taken.append((verb, data))
    link.accept_requests = True
    message = Message(Topic(topics.request("start_hand")), b"{}", 1, False, 7, b"\x7f\x00")
    link._take(None, message)  # type: ignore[arg-type]  # no client: nothing retained to clear
    assert taken == [("start_hand", b"{}")]
    await writer.close()

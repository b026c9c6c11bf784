"""Pit presence: each process's status and Will, what the others make of them, and the takeover
of an away member's share (its claimed gaps, its holes, its events) by the repair."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.mqtt import Message, Topic
from controller.pit.config import PitConfig
from controller.pit.ingest import Ingest, Route, route
from controller.pit.metrics import PitMetrics
from controller.pit.presence import (
    Connection,
    Members,
    Presence,
    member_of,
    parse_presence,
    presence_filter,
    presence_topic,
)
from controller.pit.published import RejectedError
from controller.pit.repair import Repairer
from controller.pit.store import Store
from controller.pit.worker import StoreWorker
from tests.pit.test_store import envelope, event_in

PREFIX = "tables"


def said(
    pit: str,
    state: str,
    connected: str = "2026-12-04T10:00:00.000Z",
    incarnation: str = "aaa",
    *,
    group: str = "pit",
    expiry: int | None = 3600,
    **extra: Any,
) -> bytes:
    """A member's status message, as a pit process publishes it."""
    body: dict[str, Any] = {
        "pit": pit,
        "state": state,
        "group": group,
        "connected": connected,
        "incarnation": incarnation,
        "ts": connected,
        "version": "0",
        **extra,
    }
    if expiry is not None:
        body["session_expiry"] = expiry
    return json.dumps(body).encode()


def test_a_status_topic_names_its_member_and_nothing_else() -> None:
    assert presence_topic(PREFIX, "pit-2") == "tables/_pit/pit-2/status"
    assert presence_filter(PREFIX) == "tables/_pit/+/status"
    assert member_of("tables/_pit/pit-2/status", PREFIX) == "pit-2"
    for other in ("tables/_pit/status", "tables/_pit//status", "tables/_pit/a/b/status"):
        assert member_of(other, PREFIX) is None
    assert route("tables/_pit/pit-2/status", PREFIX, "pit-1") == Route("presence", verb="pit-2")
    # the level is no table's: its other topics are nothing the pit reads
    assert route("tables/_pit/status", PREFIX, "pit-1") == Route("other")
    assert route("tables/_pit/pit-2/events", PREFIX, "pit-1") == Route("other")
    assert route("tables/T1/status", PREFIX, "pit-1") == Route("status", "T1")


def test_a_connection_s_messages_read_back_and_its_will_names_it() -> None:
    connection = Connection("pit-1", "pit", 86_400)
    online = parse_presence("pit-1", connection.message("online"))
    offline = parse_presence("pit-1", connection.message("offline"))
    assert (online.state, offline.state) == ("online", "offline")
    assert online.incarnation == offline.incarnation == connection.incarnation
    assert online.connected == offline.connected == connection.connected
    assert json.loads(connection.message("offline"))["ts"] == connection.connected
    assert online.session_expiry == 86_400
    assert Connection("pit-1", "pit", 1).incarnation != connection.incarnation


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (b"not json", "not JSON"),
        (b"[1, 2]", "object"),
        (said("pit-9", "offline"), "on the status topic of 'pit-2'"),
        (said("pit-2", "dead"), "state"),
        (said("pit-2", "offline", group=""), "group"),
        (said("pit-2", "offline", connected="yesterday"), "connected"),
        (said("pit-2", "offline", incarnation="a/b"), "incarnation"),
        (said("pit-2", "offline", expiry=-1), "session_expiry"),
        (json.dumps({"pit": True}).encode(), "pit"),
        (b'{"pit": "pit-2", "state": NaN}', "not JSON"),
    ],
)
def test_what_is_not_a_member_s_status_is_refused(payload: bytes, problem: str) -> None:
    with pytest.raises(RejectedError, match=problem):
        parse_presence("pit-2", payload)


def test_a_will_makes_a_member_away_and_its_next_connection_brings_it_back() -> None:
    members = Members("pit-1", "pit", grace=3.0)
    assert members.observe("pit-2", said("pit-2", "online"), 0.0) is None
    assert members.away(0.0) == []
    lost = members.observe("pit-2", said("pit-2", "offline"), 1.0)
    assert lost is not None
    assert (lost.pit, lost.kind) == ("pit-2", "lost")
    assert members.away(2.0) == ["pit-2"]
    assert members.observe("pit-2", said("pit-2", "offline"), 2.0) is None  # said again
    # the ended connection cannot come back: only a newer one can
    assert members.observe("pit-2", said("pit-2", "online"), 2.5) is None
    assert members.away(2.5) == ["pit-2"]
    back = members.observe("pit-2", said("pit-2", "online", "2026-12-04T10:05:00.000Z", "bbb"), 3.0)
    assert back is not None
    assert back.kind == "back"
    assert members.away(3.0) == []
    assert members.catching_up(5.9) == ["pit-2"]
    assert members.catching_up(6.0) == []


@given(st.lists(st.text("ABCDEFGHT0123456789-", min_size=1, max_size=12), min_size=1, unique=True))
def test_each_table_is_told_what_is_stored_by_one_live_member_whoever_works_it_out(
    tables: list[str],
) -> None:
    """Every member names the same confirmer for a table, one of the live ones; a member that
    goes hands on only its own tables, and one that comes back takes the same ones again."""
    pits = ["pit-1", "pit-2", "pit-3"]
    views = {own: Members(own, "pit", grace=3.0) for own in pits}
    for own, members in views.items():
        for other in pits:
            if other != own:
                members.observe(other, said(other, "online"), 0.0)
    before = {t: {m.confirmer_of(t) for m in views.values()} for t in tables}
    assert all(len(named) == 1 and named <= set(pits) for named in before.values())
    for own in ("pit-1", "pit-2"):  # pit-3's Will
        views[own].observe("pit-3", said("pit-3", "offline"), 1.0)
    for table in tables:
        (was,) = before[table]
        now = {views[own].confirmer_of(table) for own in ("pit-1", "pit-2")}
        assert len(now) == 1
        assert now == {was} if was != "pit-3" else now <= {"pit-1", "pit-2"}
    for own in ("pit-1", "pit-2"):  # pit-3 back on a new connection
        views[own].observe("pit-3", said("pit-3", "online", "2026-12-04T11:00:00.000Z", "b"), 2.0)
    assert {t: {views[o].confirmer_of(t) for o in ("pit-1", "pit-2")} for t in tables} == before


def test_a_member_alone_confirms_every_table() -> None:
    alone = Members("pit-1", "pit", grace=3.0)
    assert {alone.confirmer_of(f"T{n}") for n in range(50)} == {"pit-1"}
    alone.observe("pit-2", said("pit-2", "online"), 0.0)
    assert {alone.confirmer_of(f"T{n}") for n in range(50)} == {"pit-1", "pit-2"}


def test_a_late_will_of_an_older_connection_changes_nothing() -> None:
    members = Members("pit-1", "pit", grace=3.0)
    newer = said("pit-2", "online", "2026-12-04T10:05:00.000Z", "bbb")
    assert members.observe("pit-2", newer, 0.0) is None
    # the broker found the old connection dead only after the process connected again
    assert members.observe("pit-2", said("pit-2", "offline", incarnation="aaa"), 1.0) is None
    assert members.away(1.0) == []


def test_a_member_first_heard_away_is_taken_over_and_its_session_expires() -> None:
    members = Members("pit-1", "pit", grace=3.0)
    lost = members.observe("pit-2", said("pit-2", "offline", expiry=100), 10.0)
    assert lost is not None
    assert lost.kind == "lost"  # a retained Will heard at this process's start
    assert members.away(109.0) == ["pit-2"]
    assert members.takes_over(109.0)
    assert members.away(110.0) == []  # its session is gone, and its share with it
    assert not members.takes_over(110.0)


def test_foreign_own_and_cleared_statuses_change_nothing_of_the_others() -> None:
    members = Members("pit-1", "pit", grace=3.0)
    assert members.observe("pit-9", said("pit-9", "offline", group="other"), 0.0) is None
    assert members.observe("pit-1", said("pit-1", "offline"), 0.0) is None  # its own
    assert members.away(0.0) == []
    members.observe("pit-2", said("pit-2", "offline"), 0.0)
    assert members.away(0.0) == ["pit-2"]
    with pytest.raises(RejectedError):
        members.observe("pit-2", b"{}", 0.5)
    assert members.away(0.5) == ["pit-2"]  # a malformed message left it as it was
    assert members.observe("pit-2", b"", 1.0) is None  # cleared: taken out of service
    assert members.away(1.0) == []


def test_the_live_member_that_sorts_first_takes_over_until_the_away_one_caught_up() -> None:
    views = {name: Members(name, "pit", grace=3.0) for name in ("pit-1", "pit-2", "pit-3")}
    for view in views.values():
        for other in views:
            view.observe(other, said(other, "online"), 0.0)
    assert not any(view.takes_over(0.0) for view in views.values())
    for view in views.values():
        view.observe("pit-1", said("pit-1", "offline"), 1.0)
    assert [name for name, view in views.items() if view.takes_over(1.0)] == ["pit-2"]
    later = said("pit-1", "online", "2026-12-04T10:01:00.000Z", "bbb")
    for view in views.values():
        view.observe("pit-1", later, 2.0)
    # pit-1 is back but catching up on what its session kept: pit-2 goes on
    assert [name for name, view in views.items() if view.takes_over(4.9)] == ["pit-2"]
    assert not any(view.takes_over(5.0) for view in views.values())


class Heard:
    """What a :class:`Presence` asked for."""

    def __init__(self) -> None:
        self.lost: list[str] = []
        self.direct: list[bool] = []
        self.announced = 0
        self.now = 0.0

    def presence(self, pit: str = "pit-1") -> Presence:
        return Presence(
            pit,
            "pit",
            3600,
            3.0,
            on_lost=self.lost.append,
            direct=self.direct.append,
            announce=self._announce,
            clock=lambda: self.now,
        )

    def _announce(self) -> None:
        self.announced += 1


def test_a_will_asks_for_the_repair_and_the_takeover_and_a_return_ends_it() -> None:
    heard = Heard()
    presence = heard.presence()
    presence.take("pit-2", said("pit-2", "online"))
    assert (heard.lost, heard.direct) == ([], [])
    presence.take("pit-2", said("pit-2", "offline"))
    assert (heard.lost, heard.direct) == (["pit-2"], [True])
    assert presence.away() == ["pit-2"]
    heard.now = 10.0
    presence.take("pit-2", said("pit-2", "online", "2026-12-04T10:09:00.000Z", "bbb"))
    assert heard.direct == [True]  # it catches up first
    heard.now = 13.0
    presence.evaluate()
    assert heard.direct == [True, False]
    assert heard.lost == ["pit-2"]


def test_malformed_and_foreign_statuses_change_nothing() -> None:
    heard = Heard()
    presence = heard.presence()
    for member, payload in (
        ("pit-2", b"\xff\xfe"),
        ("pit-2", said("pit-3", "offline")),  # another member's name on pit-2's topic
        ("pit-2", said("pit-2", "offline", group="elsewhere")),
        ("pit-2", said("pit-2", "gone")),
    ):
        presence.take(member, payload)
    assert (heard.lost, heard.direct, heard.announced) == ([], [], 0)
    assert presence.away() == []
    assert presence.refused == 3


def test_its_own_status_is_announced_again_unless_it_is_this_connection_s() -> None:
    heard = Heard()
    presence = heard.presence()
    connection = presence.connect()
    presence.take("pit-1", connection.message("online"))
    assert heard.announced == 0
    old = Connection("pit-1", "pit", 3600)
    presence.take("pit-1", old.message("offline"))  # a late Will of an older connection
    presence.take("pit-1", b"")  # cleared by hand
    presence.take("pit-1", b"garbage")
    assert heard.announced == 3
    assert heard.lost == []


def test_the_ingest_hands_presence_to_the_presence_and_acknowledges_at_once(
    tmp_path: Any,
) -> None:
    config = PitConfig(pit={"id": "pit-1"}, store={"url": f"sqlite:///{tmp_path / 's.db'}"})
    ingest = Ingest(config, StoreWorker(config.store.url, "ingest"), PitMetrics("pit-1"))
    heard = Heard()
    ingest.presence = heard.presence()
    topic = Topic(presence_topic(PREFIX, "pit-2"))
    assert ingest.take(Message(topic, said("pit-2", "offline"), 1, True, 7, None))
    assert heard.lost == ["pit-2"]
    assert ingest.take(Message(topic, b"not json", 1, True, 8, None))
    ingest.presence = None  # a process that hears no presence drops it all the same
    assert ingest.take(Message(topic, said("pit-2", "online"), 1, True, 9, None))


# ---------------------------------------------------------------------- the repair's share


async def scanner(store_url: str) -> tuple[Repairer, StoreWorker, list[tuple[str, bytes]]]:
    """pit-1's gap repair on ``store_url`` (unsigned, ``after`` and ``retry`` 600 s), its open
    worker, and the requests it publishes (topic, payload)."""
    config = PitConfig(
        pit={"id": "pit-1", "confirm": False},
        store={"url": store_url},
        repair={"after": 600.0, "retry": 600.0},
    )
    worker = StoreWorker(store_url, "repair")
    await worker.open()
    sent: list[tuple[str, bytes]] = []

    async def publish(topic: str, payload: bytes) -> None:
        sent.append((topic, payload))

    return Repairer(config, worker, PitMetrics("pit-1"), publish, None), worker, sent


async def test_an_away_member_s_claims_and_holes_are_asked_for_at_once(store_url: str) -> None:
    store = Store(store_url)
    store.migrate()
    now = time.time()
    store.ingest([event_in(envelope(s)) for s in (1, 2, 5, 6)])
    store.record_state("T1", {"epoch": "e1", "seq": 8, "hand": None}, now, ["public"])
    # pit-2 made 3-4 a gap and claimed it: its replay goes to tables/T1/replay/pit-2
    gap = store.track_holes("T1", "e1", "public", [(3, 4)], now - 1.0)[0]
    assert store.claim_gap(gap, "pit-2", now - 1.0, retry=600.0)
    store.close()
    repairer, worker, sent = await scanner(store_url)
    metrics = repairer.metrics
    away: list[str] = []
    repairer.away = lambda: list(away)
    try:
        # everyone present: 7-8 may be late at pit-2, and 3-4 is pit-2's to ask for
        assert await repairer.scan_once() == []
        away.append("pit-2")
        repairer.member_lost("pit-2")
        asks = await repairer.scan_once()
        assert sorted((a.from_seq, a.to_seq) for a in asks) == [(3, 4), (7, 8)]
        assert {topic for topic, _ in sent} == {"tables/T1/request/replay"}
        asked = [json.loads(payload) for _, payload in sent]
        assert sorted((b["from_seq"], b["to_seq"], b["pit"]) for b in asked) == [
            (3, 4, "pit-1"),
            (7, 8, "pit-1"),
        ]
        assert metrics.registry.get_sample_value("tablectl_pit_gaps_released_total") == 1
        gaps = await worker.call(Store.open_gaps, "T1")
        assert {(g.from_seq, g.state, g.attempts) for g in gaps} == {
            (3, "asked", 2),
            (7, "asked", 1),
        }
        # asked: not again before [repair] retry, away or not
        assert await repairer.scan_once() == []
        # back: a new hole waits [repair] after again
        away.clear()
        await worker.call(
            lambda s: s.record_state("T1", {"epoch": "e1", "seq": 9, "hand": None}, now, ["public"])
        )
        assert await repairer.scan_once() == []
    finally:
        await worker.close()

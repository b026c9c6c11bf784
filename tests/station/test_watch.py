"""Following the table over the console socket (``watch``): the view first, then each commit as
a few bytes of merge patch and the events, badge reads kept from the core, a reader that falls
behind resynced instead of queued, and who may watch."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.station_watch import Follower, play
from controller.aio import cancel_and_wait
from controller.authority import Role
from controller.cards import Card
from controller.config import TableConfig, parse_config
from controller.shell.daemon import Daemon
from controller.shell.merge_patch import apply
from controller.shell.watch import MAX_WATCHERS, Watchers
from controller.signing import Signer
from controller.table.inputs import TagArrived, Zone
from simulators.rig.keys import RigKeys
from tests.shell.inprocess import Running, config_for
from tests.waiting import until

BADGE = "04a1b2c3d4e5f6"


def watched_config(tmp_path: Path, **security: Any) -> TableConfig:
    """A virtual table with a console socket and its enroll zone as the badge zone."""
    data = config_for(tmp_path).model_dump(mode="json")
    data["daemon"]["console"] = str(tmp_path / "console.sock")
    data["station"]["badge_zone"] = "enroll"
    data["security"].update(security)
    return parse_config(data)


class Line:
    """One connection to the console socket, read a JSON line at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def send(self, body: dict[str, Any]) -> None:
        self.writer.write(json.dumps(body).encode() + b"\n")
        await self.writer.drain()

    async def read(self, timeout: float = 10.0) -> dict[str, Any]:
        line = await asyncio.wait_for(self.reader.readline(), timeout)
        assert line, "the daemon closed the connection"
        body: dict[str, Any] = json.loads(line)
        return body

    async def badge(self) -> dict[str, Any]:
        """The next badge line, past the view's changes that may come first (the broker's
        link going down while the daemon tries it, a device's health)."""
        while (body := await self.read())["watch"] != "badge":
            assert body["watch"] == "change", body
        return body


@asynccontextmanager
async def connected(daemon: Daemon) -> AsyncIterator[Line]:
    assert daemon.config.daemon.console is not None
    reader, writer = await asyncio.open_unix_connection(str(daemon.config.daemon.console))
    try:
        yield Line(reader, writer)
    finally:
        writer.close()


async def test_watch_sends_the_view_then_each_change_as_a_merge_patch(tmp_path: Path) -> None:
    async with Running(watched_config(tmp_path)) as daemon, connected(daemon) as watch:
        await watch.send({"command": "watch", "transaction": "w-1"})
        answer = await watch.read()
        assert answer["status"] == "ok"
        assert answer["transaction"] == "w-1"
        first = await watch.read()
        assert first["watch"] == "view"
        view = first["view"]
        assert view["table"]["seats"]["1"] == {"stack": 50, "status": "out"}
        assert "hand" not in view["table"]
        async with connected(daemon) as requests:
            await requests.send({"command": "start_hand", "transaction": "t-1"})
            assert (await requests.read())["status"] == "ok"
        # follow the patches until the hand's first betting round is open, as a station would
        seen: list[str] = []
        while view["table"].get("hand", {}).get("phase") != "betting":
            change = await watch.read()
            assert change["watch"] == "change"
            seen += [e["type"] for e in change["events"]]
            view = apply(view, change["view"])
        assert view == daemon.watchers.view
        hand = view["table"]["hand"]
        assert hand["to_act"] == 3  # three seats, button 3: seat 3 acts first preflop
        assert hand["options"]["call_to"] == 2
        # the core's menu (controller/rules/menu.py): what the seat may enter, the quick sizes
        assert hand["menu"]["seat"] == 3
        assert hand["menu"]["actions"] == ["fold", "call", "raise", "allin"]
        assert hand["menu"]["quick"][0] == {"label": "minimum", "to": 4}
        assert hand["pot"] == 3
        assert {"hand.started", "betting.action", "deal.group.delivered"} <= set(seen)
        assert view["table"]["seats"]["1"]["bet"] == 1  # the small blind
        assert view["table"]["seats"]["2"]["bet"] == 2
        assert view["table"]["seats"]["1"]["cards"] == 2
        assert "shown" not in view["table"]["seats"]["1"]  # no hole card before it is tabled


async def test_a_badge_read_goes_to_the_watchers_never_to_the_core_foul_foreign(
    tmp_path: Path,
) -> None:
    async with Running(watched_config(tmp_path)) as daemon, connected(daemon) as watch:
        await watch.send({"command": "watch", "transaction": "w-1", "events": False})
        assert (await watch.read())["status"] == "ok"
        assert (await watch.read())["watch"] == "view"
        before = daemon.runner.last_seq
        enroll = Zone.parse("enroll")
        await daemon.devices.sink(TagArrived(datetime.now(UTC), "reader", enroll, BADGE))
        badge = await watch.badge()
        assert badge == {"watch": "badge", "uid": BADGE, "card": False, "ts": badge["ts"]}
        # a playing card of the deck laid on the badge reader is said to be one
        card_uid = daemon.runner.state.manifest.uid(Card("As"))
        await daemon.devices.sink(TagArrived(datetime.now(UTC), "reader", enroll, card_uid))
        card = await watch.badge()
        assert card["card"] is True
        assert daemon.runner.last_seq == before  # nothing journaled: no FOUL-FOREIGN alarm


async def test_an_unsigned_watch_is_refused_on_a_table_that_takes_signed_requests(
    tmp_path: Path,
) -> None:
    keys = RigKeys.create(tmp_path / "keys")
    config = watched_config(tmp_path, require_signed=True, keyring=str(keys.keyring))
    async with Running(config) as daemon:
        async with connected(daemon) as watch:
            await watch.send({"command": "watch", "transaction": "w-1"})
            answer = await watch.read()
            assert answer["status"] == "error"
            assert "unsigned" in answer["error"]
        async with connected(daemon) as watch:  # the pit's key may not watch
            await watch.send({"command": "watch", **signed(keys, Role.PIT, "w-2")})
            answer = await watch.read()
            assert answer["status"] == "error"
            assert "may not watch" in answer["error"]
        dealer = {"command": "watch", **signed(keys, Role.DEALER, "w-3")}
        async with connected(daemon) as watch:
            await watch.send(dealer)
            assert (await watch.read())["status"] == "ok"
            assert (await watch.read())["watch"] == "view"
        async with connected(daemon) as again:  # the same signed request again: a replay
            await again.send(dealer)
            answer = await again.read()
            assert answer["status"] == "error"
            assert "nonce" in answer["error"]


def signed(keys: RigKeys, role: Role, transaction: str) -> dict[str, Any]:
    """A watch request signed with the rig's key of ``role`` for table T1."""
    signer = keys.signers[role]
    return Signer(signer.private, signer.key_id, "T1").sign("watch", {"transaction": transaction})


async def test_a_watcher_that_falls_behind_is_resynced_not_queued() -> None:
    version = {"seq": 0}
    hub = Watchers(lambda: {"seq": version["seq"]}, limit=3)
    watcher = hub.follow()
    lines = await watcher.lines()
    assert lines is not None
    assert json.loads(lines[0]) == {"watch": "view", "view": {"seq": 0}}
    for seq in range(1, 11):  # ten commits while the reader reads nothing
        version["seq"] = seq
        hub.events(functools.partial(lambda n: [{"type": "betting.action", "seq": n}], seq))
    assert len(watcher.pending) <= 3
    lines = await watcher.lines()
    assert lines is not None
    resync = json.loads(lines[0])
    assert resync["watch"] == "view"
    assert resync["resync"] is True
    assert resync["view"] == {"seq": 10}
    assert resync["dropped"] + len(watcher.pending) >= 8
    hub.events(lambda: [{"type": "hand.completed", "seq": 11}])
    lines = await watcher.lines()
    assert lines is not None
    assert json.loads(lines[0])["events"] == [{"type": "hand.completed", "seq": 11}]


async def test_the_stream_ends_when_the_daemon_stops(tmp_path: Path) -> None:
    running = Running(watched_config(tmp_path))
    daemon = await running.__aenter__()
    async with connected(daemon) as watch:
        await watch.send({"command": "watch", "transaction": "w-1"})
        assert (await watch.read())["status"] == "ok"
        assert (await watch.read())["watch"] == "view"
        await running.__aexit__(None, None, None)
        assert await asyncio.wait_for(watch.reader.read(), 10) == b""
    await until(lambda: not daemon.watchers.watchers, what="the watcher to leave")


async def test_a_reader_that_stops_reading_never_holds_the_table(tmp_path: Path) -> None:
    data = watched_config(tmp_path).model_dump(mode="json")
    data["table"]["house_rules"] = {"dealer_may_confirm": ["RR-SD-4"]}
    data["table"]["stacks"] = {"1": 10_000, "2": 10_000, "3": 10_000}
    data["security"].update(rate_anonymous=10_000, rate_anonymous_burst=10_000)
    data["security"].update(rate_total=10_000, rate_total_burst=10_000)
    async with Running(parse_config(data)) as daemon:
        path = tmp_path / "console.sock"
        # a watcher that asks for everything and then reads nothing at all
        stalled_reader, stalled = await asyncio.open_unix_connection(str(path))
        stalled.write(b'{"command": "watch", "transaction": "w-stalled"}\n')
        await stalled.drain()
        station = Follower(path, events=False)
        following = asyncio.create_task(station.run())
        await play(path, station, hands=25)  # every request answered, every hand played
        slow = [w for w in daemon.watchers.watchers if w.wants_events]
        assert len(slow) == 1
        assert len(slow[0].pending) <= slow[0].limit
        assert slow[0].dropped > 0 or slow[0].sent is None  # it lost what it could not take
        # once it reads again it is given the whole view, said to be a resync
        seen_resync = False
        while not seen_resync:
            line = json.loads(await asyncio.wait_for(stalled_reader.readline(), 30))
            seen_resync = line.get("watch") == "view" and line.get("resync") is True
        stalled.close()
        await cancel_and_wait([following])


async def test_the_view_says_what_the_pit_has_stored(tmp_path: Path) -> None:
    data = watched_config(tmp_path).model_dump(mode="json")
    data["security"]["unsigned_roles"] = ["dealer", "floor", "pit"]
    async with Running(parse_config(data)) as daemon, connected(daemon) as watch:
        await watch.send({"command": "watch", "transaction": "w-1", "events": False})
        assert (await watch.read())["status"] == "ok"
        view = (await watch.read())["view"]
        assert view["link"]["broker"] == "down"  # nobody listens on its port
        assert "pit" not in view["link"]
        async with connected(daemon) as requests:
            await requests.send({"command": "start_hand", "transaction": "t-1"})
            assert (await requests.read())["status"] == "ok"
            stored = {"pit": "pit-1", "epoch": view["epoch"], "seq": 2}
            await requests.send({"command": "stored", "transaction": "s-1", **stored})
            assert (await requests.read())["status"] == "ok"
        while "pit" not in view["link"]:
            view = apply(view, (await watch.read())["view"])
        assert view["link"]["pit"]["pit"] == "pit-1"
        assert view["link"]["pit"]["seq"] == 2


async def test_at_most_sixteen_consoles_watch_at_once(tmp_path: Path) -> None:
    async with Running(watched_config(tmp_path)) as daemon, contextlib.AsyncExitStack() as stack:
        for n in range(MAX_WATCHERS):
            watch = await stack.enter_async_context(connected(daemon))
            await watch.send({"command": "watch", "transaction": f"w-{n}", "events": False})
            assert (await watch.read())["status"] == "ok"
        extra = await stack.enter_async_context(connected(daemon))
        await extra.send({"command": "watch", "transaction": "w-more"})
        answer = await extra.read()
        assert answer["status"] == "error"
        assert answer["transaction"] == "w-more"
        assert answer["error"] == "16 consoles watch the table already"
        assert len(daemon.watchers.watchers) == MAX_WATCHERS

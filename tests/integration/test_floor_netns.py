"""A floor on a LAN of network namespaces (tests/netns.py): a table cut off from the broker for
60 s and back, a pit host cut off and back meanwhile; every event each table journaled is stored
exactly once, and the console shows the cut table offline, then online and caught up.

The hosts, each a namespace of its own on one switch (the test's process sits on the switch too,
to read the pits' API, the store and the broker):

* ``broker``: a real mosquitto, listening on the host's address (the production config's
  ``max_queued_messages 20000``);
* ``db``: PostgreSQL (tests/postgres.py), the one store of both pits;
* ``pit-1``, ``pit-2``: ``tablectl pit run``, one share group, confirming what they stored;
* ``table-1``, ``table-2``: ``tablectl run`` daemons with virtual shufflers, each played by a
  dealer on the table's own console socket (``[daemon] console``: a Unix socket, no network),
  so that a table goes on playing and journaling while its link is cut, as a table whose
  broker is away does.

The MQTT keep-alive is 3 s for every process, so the broker finds a cut connection gone after
4.5 s (MQTT 5 §3.1.2.10: one and a half keep-alives; mosquitto 2.0 counts whole seconds and
looks every 6 s, so 4 to 11 s) and publishes its Last Will.

The table's cut lasts 60 s; the pit host's cut begins once the table shows offline and lasts
15 s, inside the table's. While pit-2 is cut its Will reaches pit-1, which takes over its share
(docs/pit.md, "Presence and failover"). After both are back, the dealers play a last hand live
and stop, and the test waits until the pits' storage confirmations reach each journal's last
event; then every table's journal (``tablectl journal export``) is compared with the store,
event by event.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from controller.authority import Role
from controller.mqtt import Client, MqttError
from controller.shell.snapshot import snapshot
from controller.table.event_types import HandCompleted
from simulators.rig.console import SocketConsole
from simulators.rig.keys import RigKeys
from simulators.rig.mirror import Mirror, MirrorError, open_reader
from tests.integration.broker import Broker, mosquitto_available
from tests.integration.conftest import DaemonProcess
from tests.integration.pit import PitProcess
from tests.integration.test_pit_failover import logged
from tests.netns import Host, Namespace, Network, ip, namespaces, remove_stale, unavailable
from tests.postgres import PostgresServer, binaries
from tests.waiting import until

REPO = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.broker,
    pytest.mark.skipif(unavailable() is not None, reason=unavailable() or ""),
]

TABLE_CUT = 60.0  # seconds the table's link is cut (the figure the floor asks to survive)
PIT_CUT = 15.0  # seconds the pit host's link is cut, within the table's cut
KEEPALIVE = 3  # seconds: the broker finds a cut connection gone 4-11 s after
MQTT_PORT = 1883  # the broker's host is a machine of its own: its port is free
PACE = 0.05  # seconds a dealer takes between two requests (a busy table, not a flood)
TABLES = ("T1", "T2")
HOSTS = ("broker", "db", "pit-1", "pit-2", "table-1", "table-2")


# --------------------------------------------------------------------------- the hosts' processes


class FloorTable(DaemonProcess):
    """``tablectl run`` on a table host: the broker at the broker host's address, its dealer's
    console on a Unix socket."""

    def __init__(self, directory: Path, broker: Broker, host: Host, address: str, table: str):
        self.host = host
        self.console = Path(tempfile.mkdtemp(prefix="tc")) / "console.sock"
        super().__init__(
            directory,
            broker,
            table=table,
            stacks="{ 1 = 1000000, 2 = 1000000, 3 = 1000000 }",
            broker_port=MQTT_PORT,
            broker_extra="plain_tcp = true\n",  # a closed test network: no TLS
            environment={
                "TABLECTL_BROKER__HOST": address,
                "TABLECTL_BROKER__KEEPALIVE": str(KEEPALIVE),
            },
            sections=f'[daemon]\nconsole = "{self.console}"\n',
        )

    def launch(self) -> None:
        """Start the daemon on its host (``ip netns exec``), without waiting for READY."""
        env = {
            **os.environ,
            "NOTIFY_SOCKET": str(self.notify_path),  # a Unix socket: no network needed
            "PYTHONUNBUFFERED": "1",
            **self.environment,
        }
        argv = [sys.executable, "-m", "controller.cli", "run", "--config", str(self.config)]
        with self._heard:
            self._mark = len(self.messages)
        with (self.directory / "daemon.log").open("ab") as log:
            # a Popen has every method of the launcher's process the harness calls
            self.proc = subprocess.Popen(  # type: ignore[assignment]
                self.host.command(*argv), env=env, stdout=log, stderr=log, cwd=REPO
            )
        self.starts += 1

    def close(self) -> None:
        super().close()
        self.console.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.console.parent.rmdir()


class FloorPit(PitProcess):
    """``tablectl pit run`` on a pit host: its API on the host's address."""

    def __init__(
        self, directory: Path, broker: Broker, host: Host, address: str, **kwargs: Any
    ) -> None:
        super().__init__(directory, broker, pit_id=host.role, **kwargs)
        self.host = host
        self.broker_address = address

    @property
    def url(self) -> str:
        """The API's base URL, on the pit host's address."""
        return f"http://{self.host.address}:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        """Start the process on its host and wait until its API answers /healthz with ok."""
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "TABLECTL_BROKER__HOST": self.broker_address,
            "TABLECTL_BROKER__PORT": str(MQTT_PORT),
            "TABLECTL_BROKER__KEEPALIVE": str(KEEPALIVE),
            "TABLECTL_BROKER__PLAIN_TCP": "true",  # a closed test network: no TLS
            "TABLECTL_WEB__LISTEN": f"{self.host.address}:{self.port}",
        }
        argv = [sys.executable, "-m", "controller.cli", "pit", "run", "--config", str(self.config)]
        with (self.directory / "pit.log").open("ab") as log:
            self.proc = subprocess.Popen(
                self.host.command(*argv), env=env, stdout=log, stderr=log, cwd=REPO
            )
        deadline = time.monotonic() + timeout
        while self.health().get("status") != "ok":
            assert self.proc.poll() is None, f"the pit exited:\n{self.log()}"
            assert time.monotonic() < deadline, f"the pit is not healthy:\n{self.log()}"
            time.sleep(0.05)

    def metric(self, name: str) -> float | None:
        """One of its metrics (None: it does not answer, or has no such sample)."""
        try:
            status, body = self.get("/metrics", auth=False)
        except OSError:
            return None
        if status != 200:
            return None
        for line in body.decode().splitlines():
            if line.startswith((name + " ", name + "{")):
                return float(line.rsplit(" ", 1)[1])
        return None

    def online(self, table: str) -> bool | None:
        """Whether the floor map shows ``table`` online, as its tile and ``GET /api/tables``
        both say (None: they disagree, the table is on neither, or the pit does not answer:
        a pit back from a cut connects to its store again)."""
        page, api = self.get("/"), self.get("/api/tables")
        if page[0] != 200 or api[0] != 200:
            return None
        tile = re.search(rf'data-table="{table}" data-state="(\w+)"', page[1].decode())
        rows = {row["table_id"]: row for row in json.loads(api[1])}
        if tile is None or table not in rows:
            return None
        if (tile.group(1) == "online") != rows[table]["online"]:
            return None
        return bool(rows[table]["online"])


# --------------------------------------------------------------------------- the dealers


def next_request(snap: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """What a dealer asks for next at the table ``snap`` shows (None: the devices deal), as
    :class:`simulators.dealer_console.AutoConsole` decides, with no end to the hands."""
    hand = snap.get("hand")
    if hand is None:
        return "start_hand", {}
    if hand.get("holds"):
        return "confirm", {"hold": hand["holds"][0]["id"]}
    if hand["phase"] == "betting" and hand["to_act"] is not None:
        return "action", {"seat": hand["to_act"], "action": "call" if hand["to_call"] else "check"}
    if hand["phase"] == "showdown":
        for seat in hand["showdown_order"]:
            if snap["seats"][str(seat)].get("status") == "live" and seat not in hand["tabled"]:
                return "table", {"seat": seat}
    if hand["phase"] == "award":
        return "award", {}
    return None


@dataclass
class Dealer:
    """Plays hands at a table over its console socket until stopped, reading the table from its
    journal (:class:`~simulators.rig.mirror.Mirror`): it needs no network, so the table plays on
    while its link is cut."""

    table: FloorTable
    completed: int = 0
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        mirror = Mirror(await open_reader(self.table.journal))
        console = SocketConsole(self.table.console, self.table.sign, timeout=60.0)
        try:
            while not self.stop.is_set():
                mirror.catch_up()
                self.completed = sum(1 for e in mirror.run.events if e.type == HandCompleted.TYPE)
                step = next_request(snapshot(mirror.state, seq=mirror.last_seq, epoch=""))
                if step is None:  # the shuffler deals: wait for its events
                    with contextlib.suppress(MirrorError):
                        await mirror.wait_seq(mirror.last_seq + 1, 1.0)
                    continue
                answer = await console.send(*step)
                with contextlib.suppress(MirrorError):
                    await mirror.wait_seq(int(answer["data"].get("last_seq") or 0), 15.0)
                await asyncio.sleep(PACE)  # the dealer's pace, not a wait for anything
        finally:
            await console.close()
            mirror.close()


# --------------------------------------------------------------------------- watching


@dataclass
class Statuses:
    """Every status the broker relays, the tables' and the pits' (their births and Wills)."""

    seen: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    async def watch(self, address: str, connected: asyncio.Event) -> None:
        async with Client(address, MQTT_PORT, keepalive=KEEPALIVE) as client:
            await client.subscribe("tables/+/status", qos=1)
            await client.subscribe("tables/_pit/+/status", qos=1)
            connected.set()
            async for message in client.messages:
                payload = message.payload if isinstance(message.payload, bytes) else b""
                with contextlib.suppress(ValueError):
                    self.seen.append((message.topic.value, json.loads(payload)))

    def states(self, topic: str) -> list[str]:
        """The ``state`` of each status on ``topic``, in order, repeats collapsed."""
        found: list[str] = []
        for seen, body in self.seen:
            if seen == topic and (not found or found[-1] != body.get("state")):
                found.append(str(body.get("state")))
        return found


async def eventually(check: Callable[[], object], timeout: float, what: str) -> None:
    """Wait until ``check`` (run in a thread: it does I/O) is true, at most ``timeout`` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await asyncio.to_thread(check):
        if loop.time() > deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}")
        await asyncio.sleep(0.1)


def stored(url: str, table: str) -> list[tuple[str, int, str]]:
    """Every public view of ``table``'s events in the store: (epoch, seq, type), one per row."""
    with psycopg.connect(url, connect_timeout=5) as conn:
        rows = conn.execute(
            "SELECT epoch, seq, type FROM events WHERE table_id = %s AND public IS NOT NULL",
            (table,),
        ).fetchall()
    return [(str(epoch), int(seq), str(kind)) for epoch, seq, kind in rows]


def journaled(daemon: FloorTable) -> list[tuple[str, int, str]]:
    """Every event of the table's journal, from ``tablectl journal export`` (live rows and
    archive segments): (epoch, seq, type)."""
    done = subprocess.run(
        [sys.executable, "-m", "controller.cli", "journal", "export", "--config", daemon.config],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "pruned" not in done.stderr, done.stderr  # nothing may be missing from the journal
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return [(e["epoch"], int(e["seq"]), e["type"]) for e in events]


def confirmed(daemon: FloorTable) -> dict[str, int]:
    """The highest seq of each epoch the pits told the table they stored."""
    with contextlib.closing(
        sqlite3.connect(f"file:{daemon.journal}?mode=ro", uri=True, timeout=5)
    ) as conn:
        return {str(e): int(s) for e, s in conn.execute("SELECT epoch, seq FROM confirmations")}


def last_journaled(daemon: FloorTable) -> tuple[str, int]:
    """The journal's epoch now and its last seq."""
    with contextlib.closing(
        sqlite3.connect(f"file:{daemon.journal}?mode=ro", uri=True, timeout=5)
    ) as conn:
        epoch = conn.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()[0]
        last = conn.execute("SELECT MAX(seq) FROM events").fetchone()[0]
    return str(epoch), int(last or 0)


# --------------------------------------------------------------------------- the floor


@dataclass
class Floor:
    network: Network
    url: str
    broker: Broker
    pits: dict[str, FloorPit]
    tables: dict[str, FloorTable]


@pytest.fixture
def lan() -> Iterator[Network]:
    """The hosts on their switch; removed at the end, whatever happened."""
    with Network(HOSTS) as network:
        yield network


@pytest.fixture
async def floor(lan: Network, tmp_path: Path) -> AsyncIterator[Floor]:
    """Every process of the floor running on its host; all stopped at the end."""
    if not mosquitto_available():
        pytest.skip("mosquitto is not installed")
    if binaries() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    broker_address = lan["broker"].address
    stops: list[Callable[[], object]] = []
    try:
        server = PostgresServer(listen=lan["db"].address)
        stops.append(server.stop)
        (tmp_path / "broker").mkdir()
        broker = Broker(
            tmp_path / "broker",
            head=f"listener {MQTT_PORT} {broker_address}\n",
            extra="persistence false\nmax_queued_messages 20000\n",
        )
        stops.append(broker.stop)
        await asyncio.gather(  # each host starts its own at once
            asyncio.to_thread(lan["db"].call, server.start),
            asyncio.to_thread(lan["broker"].call, broker.start),
        )
        url = await asyncio.to_thread(server.new_database)

        keys = RigKeys.create(tmp_path / "keys")  # one keyring for the floor: one pit key
        pits = {}
        for role in ("pit-1", "pit-2"):
            pit = FloorPit(
                tmp_path / role,
                broker,
                lan[role],
                broker_address,
                store_url=url,
                key=keys.key_file(Role.PIT),
                confirm_interval=1.0,
            )
            stops.append(pit.close)
            pits[role] = pit
        await asyncio.to_thread(pits["pit-1"].add_user)
        await asyncio.gather(*(asyncio.to_thread(pit.start) for pit in pits.values()))

        tables = {}
        for number, table in enumerate(TABLES, start=1):
            daemon = FloorTable(
                tmp_path / table, broker, lan[f"table-{number}"], broker_address, table
            )
            for path in keys.directory.iterdir():
                (daemon.keys.directory / path.name).write_bytes(path.read_bytes())
            daemon.keys = keys
            stops.append(daemon.close)
            tables[table] = daemon
        await asyncio.gather(*(asyncio.to_thread(d.start, 90.0) for d in tables.values()))
        yield Floor(lan, url, broker, pits, tables)
    finally:
        for stop in reversed(stops):
            with contextlib.suppress(Exception):
                await asyncio.to_thread(stop)


# --------------------------------------------------------------------------- the tests


@pytest.mark.slow(weight=4)  # 60 s of its minute and a half are the cut: started first
@pytest.mark.timeout(240)
async def test_a_table_and_a_pit_host_cut_off_lose_nothing_and_store_nothing_twice(
    floor: Floor,
) -> None:
    network, pit1, pit2 = floor.network, floor.pits["pit-1"], floor.pits["pit-2"]
    cut_table = floor.tables["T1"]
    statuses = Statuses()
    connected = asyncio.Event()
    watching = asyncio.create_task(statuses.watch(network["broker"].address, connected))
    dealers = {table: Dealer(daemon) for table, daemon in floor.tables.items()}
    playing = [asyncio.create_task(dealer.run()) for dealer in dealers.values()]
    timeline: dict[str, float] = {}
    try:
        async with asyncio.timeout(10):
            await connected.wait()
        for table in TABLES:  # both tables play, and both pits store
            await eventually(
                lambda t=table: len(stored(floor.url, t)) >= 50,  # type: ignore[misc]
                60,
                f"{table}'s first events stored",
            )
        await eventually(
            lambda: all(pit1.online(t) for t in TABLES), 30, "both tables online on the floor map"
        )
        assert (pit1.metric("tablectl_pit_events_stored_total") or 0) > 0
        assert (pit2.metric("tablectl_pit_events_stored_total") or 0) > 0  # the group shares

        # --- table-1 is cut off for TABLE_CUT s
        table_cut = time.monotonic()

        def mark(what: str) -> None:
            timeline[what] = time.monotonic() - table_cut

        network.cut("table-1")
        journal_at_cut = last_journaled(cut_table)[1]
        await eventually(lambda: pit1.online("T1") is False, 30, "T1 offline on pit-1's floor map")
        mark("T1 offline on pit-1")
        await eventually(lambda: pit2.online("T1") is False, 30, "T1 offline on pit-2's floor map")
        mark("T1 offline on pit-2")
        assert pit1.online("T2") is True

        # --- meanwhile pit-2's host is cut off for PIT_CUT s; pit-1 takes over its share
        pit_cut = time.monotonic()
        network.cut("pit-2")
        mark("pit-2 cut")
        t2_at_cut = last_journaled(floor.tables["T2"])[1]
        await eventually(
            lambda: statuses.states("tables/_pit/pit-2/status")[-1:] == ["offline"],
            30,
            "pit-2's Last Will",
        )
        mark("pit-2's Will")
        await eventually(
            lambda: pit1.metric("tablectl_pit_takeover") == 1, 30, "pit-1 to take over"
        )
        mark("pit-1 takes over")
        # every event of T2 stored, with no hole, well past where it was when pit-2 went: the
        # share the broker keeps giving pit-2's session reached the store all the same
        await eventually(
            lambda: stored_seq(pit1, "T2") >= t2_at_cut + 50, 30, "T2 stored on while pit-2 is cut"
        )
        mark("T2 stored 50 past the pit cut")
        assert network.is_cut("pit-2")
        await asyncio.sleep(max(0.0, pit_cut + PIT_CUT - time.monotonic()))  # the cut itself
        assert pit1.online("T1") is False  # still cut
        network.restore("pit-2")
        mark("pit-2 restored")
        await eventually(
            lambda: statuses.states("tables/_pit/pit-2/status")[-1:] == ["online"],
            90,
            "pit-2 back on the broker",
        )
        mark("pit-2 online again")
        await eventually(
            lambda: pit1.metric("tablectl_pit_members_away") == 0, 60, "pit-1 to hear pit-2 back"
        )
        await eventually(lambda: pit2.health().get("status") == "ok", 60, "pit-2 healthy again")
        mark("pit-2 healthy")

        # --- the rest of table-1's cut; it played on, into its journal alone
        await asyncio.sleep(max(0.0, table_cut + TABLE_CUT - time.monotonic()))  # the cut itself
        assert pit1.online("T1") is False
        assert pit2.online("T1") is False
        assert last_journaled(cut_table)[1] > journal_at_cut + 100  # it played on, cut off
        network.restore("table-1")
        mark("T1 restored")
        await eventually(lambda: pit1.online("T1") is True, 60, "T1 online again on pit-1")
        mark("T1 online on pit-1")
        await eventually(lambda: pit2.online("T1") is True, 60, "T1 online again on pit-2")
        mark("T1 online on pit-2")
        await eventually(
            lambda: stored_seq(pit1, "T1") >= last_journaled(cut_table)[1] - 50,
            60,
            "T1's cut-off events stored",
        )
        mark("T1 caught up")

        # --- a hand more at each table, live; then the dealers stop and the pits catch up
        after = {table: dealer.completed for table, dealer in dealers.items()}

        def played_on() -> bool:
            for task in playing:
                if task.done():
                    task.result()  # a dealer that stopped says why
            return all(d.completed > after[t] for t, d in dealers.items())

        await until(played_on, 60, "a hand completed at each table after the cuts", every=0.1)
        for dealer in dealers.values():
            dealer.stop.set()
        async with asyncio.timeout(60):
            await asyncio.gather(*playing)

        def confirmed_to_the_end() -> bool:
            for daemon in floor.tables.values():
                epoch, last = last_journaled(daemon)
                if confirmed(daemon).get(epoch, 0) < last:
                    return False
            return True

        await eventually(confirmed_to_the_end, 90, "every journal confirmed to its last event")
        mark("every journal confirmed")
    finally:
        for dealer in dealers.values():
            dealer.stop.set()
        for task in [*playing, watching]:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, MqttError, Exception):
                await task

    # --- every event journaled is stored exactly once, per table, epoch and seq
    counted = {}
    for table, daemon in floor.tables.items():
        journal = await asyncio.to_thread(journaled, daemon)
        rows = await asyncio.to_thread(stored, floor.url, table)
        counts = Counter((epoch, seq) for epoch, seq, _ in rows)
        twice = sorted(key for key, n in counts.items() if n > 1)
        in_journal = {(epoch, seq): kind for epoch, seq, kind in journal}
        in_store = {(epoch, seq): kind for epoch, seq, kind in rows}
        lost = sorted(set(in_journal) - set(in_store))
        foreign = sorted(set(in_store) - set(in_journal))
        assert (lost, twice, foreign) == ([], [], []), f"{table}: lost, twice, not journaled"
        assert in_store == in_journal  # the same event under each id
        epoch, last = last_journaled(daemon)
        assert sorted(in_journal) == [(epoch, seq) for seq in range(1, last + 1)]
        row = table_row(pit1, table)
        assert (row["online"], row["epoch"], row["stored_seq"]) == (True, epoch, last)
        counted[table] = len(rows)
    # the cut table's Will and its new birth; pit-2's Will and its return
    assert statuses.states("tables/T1/status")[-2:] == ["offline", "online"]
    assert statuses.states("tables/_pit/pit-2/status")[-2:] == ["offline", "online"]
    assert (pit1.metric("tablectl_pit_members_lost_total") or 0) >= 1
    # the pit that stayed never failed a repair scan nor refused a batch (a lock pit-2's cut
    # left behind, two pits tracking one stream's gaps at once: tests/pit/test_pits_together.py)
    assert logged(pit1, "pit.repair.scan_failed") == []
    assert logged(pit1, "pit.batch_refused") == []
    print(
        "\nfloor: "
        + ", ".join(f"{what} {at:.1f} s" for what, at in timeline.items())
        + "; events stored once: "
        + ", ".join(f"{table} {n}" for table, n in counted.items())
    )


def table_row(pit: FloorPit, table: str) -> dict[str, Any]:
    """The table's row of the pit's ``GET /api/tables``."""
    rows: list[dict[str, Any]] = pit.json("/api/tables")
    return next(row for row in rows if row["table_id"] == table)


def stored_seq(pit: FloorPit, table: str) -> int:
    """The pit's watermark of the table's epoch now: every seq up to it is stored (-1: the pit
    does not answer)."""
    status, body = pit.get("/api/tables")
    if status != 200:
        return -1
    rows = [row for row in json.loads(body) if row["table_id"] == table]
    return int(rows[0]["stored_seq"] or 0) if rows else -1


# --------------------------------------------------------------------------- the helper itself


def test_a_cut_host_is_unreachable_until_its_link_is_restored() -> None:
    with (
        Network(["a", "b"]) as network,
        socket.create_server(("127.0.0.1", 0)) as machine,  # in the machine's own namespace
    ):
        a, b = network["a"], network["b"]
        assert {a.name, b.name, network.switch.name} <= set(namespaces())
        with b.call(lambda: socket.create_server((b.address, 0))) as server:
            port = server.getsockname()[1]
            assert reachable(b.address, port)  # from the test's own process, on the switch
            assert a.call(lambda: reachable(b.address, port))  # host to host
            network.cut("b")
            assert network.is_cut("b")
            assert not reachable(b.address, port, 1.0)
            assert not a.call(lambda: reachable(b.address, port, 1.0))
            network.restore("b")
            assert not network.is_cut("b")
            assert a.call(lambda: reachable(b.address, port))
        # a host's loopback is its own, not the machine's
        assert not b.call(lambda: reachable("127.0.0.1", machine.getsockname()[1], 1.0))
    assert not {a.name, b.name, network.switch.name} & set(namespaces())
    assert network.uplink not in ip("-o", "link", "show")


def test_what_a_crashed_run_left_is_removed_and_a_live_run_s_is_kept() -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()  # its pid stands for a test run that crashed
    left = f"tablectl-{gone.pid}-1-switch"
    ip("netns", "add", left)
    try:
        with Namespace("mine") as ours:  # making one removes what crashed runs left
            assert left not in namespaces()
            assert ours.name in namespaces()
            assert ours.name not in remove_stale()  # this process is alive
            assert ours.name in namespaces()
    finally:
        ip("netns", "delete", left, check=False)
    with pytest.raises(ValueError, match="role"):
        Namespace("Bad Name")


def reachable(address: str, port: int, timeout: float = 5.0) -> bool:
    """Whether a TCP connection to ``address:port`` is accepted within ``timeout``."""
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return True
    except OSError:
        return False

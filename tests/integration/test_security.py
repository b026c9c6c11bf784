"""Authority against a real mosquitto (docs/security.md).

* The shipped broker setup (``config/mosquitto/users.example.toml`` through ``tablectl broker
  setup``): every denial of docs/security.md tried and refused.
* A table on an open broker: what its keyring does not allow is ``command.rejected`` and changes
  nothing (unsigned, a dealer's key giving a floor command, a nonce used twice, an old ``ts``, a
  revoked key).
* Hostile input: fuzzed requests of every kind are each answered, change nothing when refused,
  leave the journal verifiable and the memory bounded; a flood does not hold a signed dealer back.
* A daemon that ends other than by an ordered stop leaves ``status`` offline.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import pwd
import shutil
import socket
import sqlite3
import ssl
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from controller.authority import Role
from controller.broker_setup import BrokerSetupError, load_users, write_setup
from controller.broker_tls import certificate_names, ensure_tls
from controller.config import parse_config
from controller.shell.daemon import Daemon
from controller.shell.topics import Topics
from controller.signing import canonical, load_private_key, new_key, save_private_key, sign_request
from controller.table.inputs import COMMANDS
from tests.integration.broker import MOSQUITTO, Broker, free_port, mosquitto_available, wait_port
from tests.integration.conftest import DaemonProcess
from tests.integration.requester import Requester

REPO = Path(__file__).resolve().parents[2]
TABLECTL = [sys.executable, "-m", "controller.cli"]
USERS = REPO / "config" / "mosquitto" / "users.example.toml"

pytestmark = pytest.mark.skipif(not mosquitto_available(), reason="mosquitto is not installed")


# --------------------------------------------------------------------------- the broker's wall


class SecuredBroker:
    """mosquitto with the files ``tablectl broker setup`` writes for the shipped users: TLS on
    one port (the network's), plain TCP on loopback on another, client ids bound to users."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.plain_port, self.port = free_port(), free_port()
        user = pwd.getpwuid(os.geteuid()).pw_name
        self.tls = ensure_tls(directory / "tls", ["localhost", "127.0.0.1"])
        write_setup(
            load_users(USERS),
            directory,
            listener=f"{self.plain_port} 127.0.0.1",
            tls_listener=f"{self.port} 127.0.0.1",
            tls=self.tls,
            run_as=user,
        )
        with (directory / "mosquitto.conf").open("a") as conf:
            conf.write("persistence false\nlog_dest stderr\nlog_type error\n")
        with (directory / "mosquitto.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [MOSQUITTO, "-c", str(directory / "mosquitto.conf")],
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        wait_port(self.port)
        wait_port(self.plain_port)

    def password(self, user: str) -> str:
        return (self.directory / "passwords" / user).read_text().strip()

    def client(
        self,
        user: str | None,
        password: str | None = None,
        *,
        identifier: str | None = None,
        clean_start: Any = True,
        properties: Properties | None = None,
        tls: bool = True,
        will: aiomqtt.Will | None = None,
    ) -> aiomqtt.Client:
        """A client over TLS (the network's way in), or plain TCP on loopback."""
        return aiomqtt.Client(
            "localhost" if tls else "127.0.0.1",
            self.port if tls else self.plain_port,
            username=user,
            password=password if password is not None else (self.password(user) if user else None),
            identifier=identifier,
            clean_start=clean_start,
            properties=properties,
            protocol=aiomqtt.ProtocolVersion.V5,
            tls_params=aiomqtt.TLSParameters(ca_certs=str(self.tls.ca_file)) if tls else None,
            will=will,
        )

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[SecuredBroker]:
    broker = SecuredBroker(tmp_path / "broker")
    yield broker
    broker.stop()


async def next_state(watcher: aiomqtt.Client, timeout: float) -> str | None:
    """The state of the next status message other than ``online`` (None: none came in time)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            async for message in watcher.messages:
                payload = message.payload if isinstance(message.payload, bytes) else b"{}"
                state = str(json.loads(payload).get("state"))
                if state != "online":
                    return state
    return None


async def received(client: aiomqtt.Client, seconds: float) -> list[tuple[str, bytes]]:
    """What ``client`` receives in the next ``seconds``."""
    got: list[tuple[str, bytes]] = []
    try:
        async with asyncio.timeout(seconds):
            async for message in client.messages:
                payload = message.payload if isinstance(message.payload, bytes) else b""
                got.append((message.topic.value, payload))
    except TimeoutError:
        pass
    return got


async def test_the_shipped_acl_refuses_every_denial_the_security_doc_lists(
    secured: SecuredBroker,
) -> None:
    # no anonymous client, no wrong password
    for user, password in ((None, None), ("dealer-T7", "wrong")):
        with pytest.raises(aiomqtt.MqttError):
            async with secured.client(user, password):
                pass
    base = "tables/T7"
    async with (
        secured.client("T7") as table,
        secured.client("dealer-T7") as dealer,
        secured.client("surveillance") as surveillance,
        secured.client("pit") as pit,
    ):
        for client in (dealer, surveillance, pit):
            await client.subscribe(f"{base}/#", qos=1)
        await table.subscribe(f"{base}/request/#", qos=1)
        # the table's own topics: only the table publishes them
        for intruder in (dealer, surveillance, pit):
            for topic in ("status", "head", "events", "secure/events", "state", "devices/shuffler"):
                await intruder.publish(
                    f"{base}/{topic}", b"forged", qos=1, retain=topic in ("status", "head")
                )
        await table.publish(f"{base}/secure/events", b"hole cards", qos=1)
        await table.publish(f"{base}/events", b"public", qos=1)
        await dealer.publish(f"{base}/request/start_hand", b"request", qos=1)
        await surveillance.publish(f"{base}/request/start_hand", b"not surveillance's", qos=1)
        # each login publishes only the commands its role may give: none can flood another's
        await pit.publish(f"{base}/request/round_closed", b"not the pit's", qos=1)
        await dealer.publish(f"{base}/request/replay", b"not the dealer's", qos=1)
        await dealer.publish(f"{base}/request/floor_override", b"not the dealer's", qos=1)
        seen = {
            name: await received(client, 1.0)
            for name, client in (("dealer", dealer), ("surveillance", surveillance), ("pit", pit))
        }  # what did not arrive in a second never will: the broker refused it
        table_got = await received(table, 0.2)
    assert all(payload != b"forged" for got in seen.values() for _, payload in got)
    # only surveillance reads the secure stream
    assert (f"{base}/secure/events", b"hole cards") in seen["surveillance"]
    assert all(topic != f"{base}/secure/events" for topic, _ in seen["dealer"] + seen["pit"])
    assert (f"{base}/events", b"public") in seen["dealer"]
    # consoles publish the requests of their roles' commands; surveillance only holds
    assert table_got == [(f"{base}/request/start_hand", b"request")]
    # no forged retained status or head either
    async with secured.client("pit") as late:
        await late.subscribe(f"{base}/status", qos=1)
        await late.subscribe(f"{base}/head", qos=1)
        assert await received(late, 0.5) == []


async def test_no_login_takes_over_a_tables_or_the_pits_client_id(
    secured: SecuredBroker, tmp_path: Path
) -> None:
    # the table, a real daemon, connects as the shipped config has it: its own user, over TLS
    daemon = DaemonProcess(
        tmp_path / "T7",
        Broker(tmp_path),
        table="T7",
        broker_port=secured.port,
        broker_extra=(
            'username = "T7"\n'
            f'password_file = "{secured.directory / "passwords" / "T7"}"\n'
            f'tls = {{ enabled = true, ca_file = "{secured.tls.ca_file}" }}\n'
        ),
    )
    session = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
    session.SessionExpiryInterval = 3600
    try:
        # one connection per user: surveillance watches, the pit keeps a session
        async with secured.client("surveillance") as watcher:
            await watcher.subscribe("tables/T7/status", qos=1)
            daemon.start()
            assert await next_online(watcher, 60)
            # the pit keeps a persistent session, as the pit process does (docs/pit.md)
            async with secured.client("pit", clean_start=False, properties=session) as pit:
                await pit.subscribe("tables/T7/events", qos=1)
            # a dealer console's login connects a dozen times with the table's and the pit's ids
            for identifier in ["tablectl-T7", "T7", "pit"] * 4:
                async with secured.client(
                    "dealer-T7", identifier=identifier, clean_start=False
                ) as intruder:
                    await intruder.subscribe("tables/T7/#", qos=1)
            # the table was never knocked off: no Last Will, no second birth
            assert await next_state(watcher, 2.0) is None
            # and the pit's session is the pit's: what the table sent meanwhile waits for it
            async with secured.client("floor-podium-1") as console:
                answer = await console_request(console, daemon)
            assert answer["status"] == "ok"
            async with secured.client("pit", clean_start=False, properties=session) as pit:
                kept = await received(pit, 2.0)
            assert any(topic == "tables/T7/events" for topic, _ in kept), kept
    finally:
        daemon.close()


async def next_online(watcher: aiomqtt.Client, timeout: float) -> bool:
    """Whether an ``online`` status comes within ``timeout`` seconds."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            async for message in watcher.messages:
                payload = message.payload if isinstance(message.payload, bytes) else b"{}"
                if json.loads(payload).get("state") == "online":
                    return True
    return False


async def console_request(console: aiomqtt.Client, daemon: DaemonProcess) -> dict[str, Any]:
    """A signed start_hand from a console, and its answer."""
    async with Requester(console, daemon.topics) as requests:
        return await requests.request_raw(
            "start_hand", signed(daemon, Role.DEALER, "start_hand", {"transaction": "t7-1"})
        )


def test_plain_tcp_listens_on_loopback_only_and_tls_is_on_by_default(tmp_path: Path) -> None:
    users = load_users(USERS)
    for listener in ("1883", "1883 0.0.0.0", "1883 10.1.2.3", "1883 pit-broker.local"):
        with pytest.raises(BrokerSetupError, match="loopback only"):
            write_setup(users, tmp_path / "x", listener=listener, tls_listener=None)
    out = tmp_path / "broker"
    done = subprocess.run(
        [*TABLECTL, "broker", "setup", str(USERS), "--out", str(out), "--hostname", "pit.floor"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    conf = (out / "mosquitto.conf").read_text()
    assert "listener 1883 127.0.0.1\n" in conf
    assert "listener 8883\n" in conf
    assert f"certfile {out / 'tls' / 'server.crt'}" in conf
    assert "tls_version tlsv1.2" in conf
    assert "use_username_as_clientid true" in conf
    assert certificate_names(out / "tls" / "server.crt") == ["pit.floor"]
    assert oct((out / "tls" / "server.key").stat().st_mode & 0o777) == "0o600"
    # run again: nothing changes; --renew-server-cert: a new certificate from the same CA
    ca, cert = (out / "tls" / "ca.crt").read_bytes(), (out / "tls" / "server.crt").read_bytes()
    again = [*TABLECTL, "broker", "setup", str(USERS), "--out", str(out)]
    subprocess.run(again, check=True, capture_output=True)
    assert (out / "tls" / "server.crt").read_bytes() == cert
    subprocess.run(
        [*again, "--renew-server-cert", "--hostname", "b"], check=True, capture_output=True
    )
    assert (out / "tls" / "ca.crt").read_bytes() == ca
    assert (out / "tls" / "server.crt").read_bytes() != cert
    # --renew-ca: clients trust the old CA and the new one until the old one is removed
    subprocess.run([*again, "--renew-ca", "--hostname", "b"], check=True, capture_output=True)
    bundle = (out / "tls" / "ca.crt").read_bytes()
    assert bundle.count(b"BEGIN CERTIFICATE") == 2
    assert bundle.endswith(ca)


def test_the_broker_is_reached_over_tls_with_the_floors_ca_only(secured: SecuredBroker) -> None:
    with socket.create_connection(("127.0.0.1", secured.port), timeout=10) as raw:
        trusting = ssl.create_default_context(cafile=str(secured.tls.ca_file))
        with trusting.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.version() in ("TLSv1.2", "TLSv1.3")
    with socket.create_connection(("127.0.0.1", secured.port), timeout=10) as raw:
        system_cas_only = ssl.create_default_context()
        with pytest.raises(ssl.SSLCertVerificationError):
            system_cas_only.wrap_socket(raw, server_hostname="localhost")


async def test_the_pit_shares_the_events_and_reads_only_its_public_replays(
    secured: SecuredBroker,
) -> None:
    base = "tables/T7"
    async with (
        secured.client("T7") as table,
        secured.client("surveillance") as surveillance,
        secured.client("pit") as pit,
    ):
        await pit.subscribe("$share/pit/tables/+/events", qos=1)
        await pit.subscribe("tables/+/replay/pit-1", qos=1)
        await pit.subscribe("tables/+/secure/replay/pit-1", qos=1)
        await surveillance.subscribe(f"{base}/secure/replay/#", qos=1)
        await pit.publish(f"{base}/replay/pit-1", b"forged", qos=1)
        await table.publish(f"{base}/events", b"live", qos=1)
        await table.publish(f"{base}/replay/pit-1", b"replayed", qos=1)
        await table.publish(f"{base}/secure/replay/pit-1", b"replayed hole cards", qos=1)
        pit_got = await received(pit, 1.0)
        surveillance_got = await received(surveillance, 0.2)
    assert sorted(pit_got) == [(f"{base}/events", b"live"), (f"{base}/replay/pit-1", b"replayed")]
    assert surveillance_got == [(f"{base}/secure/replay/pit-1", b"replayed hole cards")]


async def test_the_pits_announce_themselves_with_a_will_and_only_they_do(
    secured: SecuredBroker,
) -> None:
    own = "tables/_pit/pit-1/status"
    will = aiomqtt.Will(own, b"offline", qos=1, retain=True)
    async with (
        secured.client("pit", will=will) as pit,  # the Will's topic is the pit's to write
        secured.client("T7") as table,
        secured.client("dealer-T7") as dealer,
        secured.client("surveillance") as surveillance,
    ):
        await pit.subscribe("tables/_pit/+/status", qos=1)
        for intruder in (table, dealer, surveillance):
            await intruder.publish("tables/_pit/pit-2/status", b"forged", qos=1, retain=True)
        await pit.publish(own, b"online", qos=1, retain=True)
        got = await received(pit, 1.0)
    assert got == [(own, b"online")]


# --------------------------------------------------------------------------- an open broker


@pytest.fixture
def open_broker(tmp_path: Path) -> Iterator[Broker]:
    # Queue every request for the daemon however far behind a busy machine leaves it (the
    # default, 1000, drops the rest of a flood: they would never be answered).
    broker = Broker(tmp_path / "open", extra="persistence false\nmax_queued_messages 10000")
    (tmp_path / "open").mkdir()
    broker.start()
    yield broker
    broker.stop()


@pytest.fixture
async def table(tmp_path: Path, open_broker: Broker) -> AsyncIterator[DaemonProcess]:
    daemon = DaemonProcess(tmp_path / "daemon", open_broker)
    # a key the keyring names but revokes, beside the rig's keys
    private, public = new_key()
    save_private_key(private, daemon.keys.directory / "old.key")
    with daemon.keys.keyring.open("a") as keyring:
        keyring.write(
            f'\n[keys.old]\nperson = "Someone Gone"\nroles = ["floor"]\n'
            f'public_key = "{public}"\nrevoked = true\n'
        )
    daemon.start()
    yield daemon
    daemon.close()


def signed(daemon: DaemonProcess, role: Role, verb: str, body: dict[str, Any], **kw: Any) -> bytes:
    key_id = f"rig-{role.value}"
    private = load_private_key(daemon.keys.key_file(role))
    return json.dumps(sign_request(private, key_id, verb, daemon.table, body, **kw)).encode()


def with_nonce(daemon: DaemonProcess, verb: str, body: dict[str, Any], nonce: str) -> bytes:
    """A request signed by the dealer's key with a nonce of our choosing (a faulty console)."""
    private = load_private_key(daemon.keys.key_file(Role.DEALER))
    ts = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    fields = {k: v for k, v in body.items() if k != "transaction"}
    message = canonical(verb, daemon.table, body["transaction"], fields, ts, nonce)
    sig = base64.b64encode(private.sign(message)).decode()
    return json.dumps(
        {**body, "auth": {"key": "rig-dealer", "ts": ts, "nonce": nonce, "sig": sig}}
    ).encode()


def journal_types(daemon: DaemonProcess) -> list[str]:
    with sqlite3.connect(daemon.journal) as conn:
        return [r[0] for r in conn.execute("SELECT type FROM events ORDER BY seq")]


async def test_what_the_keyring_does_not_allow_is_rejected_and_changes_nothing(
    table: DaemonProcess, open_broker: Broker
) -> None:
    async with (
        aiomqtt.Client(
            "127.0.0.1", open_broker.port, protocol=aiomqtt.ProtocolVersion.V5
        ) as client,
        Requester(client, table.topics) as requests,
    ):
        override = {"transaction": "o1", "rule": "MD-CUTOFF", "decision": "void"}
        answers = {
            "unsigned": await requests.request("floor_override", override),
            "dealer's key": await requests.request_raw(
                "floor_override", signed(table, Role.DEALER, "floor_override", override)
            ),
            "old ts": await requests.request_raw(
                "start_hand",
                signed(
                    table,
                    Role.DEALER,
                    "start_hand",
                    {"transaction": "s1"},
                    now=datetime.now(UTC) - timedelta(seconds=90),
                ),
            ),
        }
        private = load_private_key(table.keys.directory / "old.key")
        revoked = sign_request(private, "old", "start_hand", table.table, {"transaction": "s2"})
        answers["revoked key"] = await requests.request_raw(
            "start_hand", json.dumps(revoked).encode()
        )
        # a console that reuses a nonce: the second request is refused
        first = signed(table, Role.DEALER, "round_closed", {"transaction": "n1"})
        assert (await requests.request_raw("round_closed", first))["status"] == "error"
        nonce = json.loads(first)["auth"]["nonce"]
        answers["nonce used twice"] = await requests.request_raw(
            "round_closed", with_nonce(table, "round_closed", {"transaction": "n2"}, nonce)
        )
    reasons = {name: answer["error"] for name, answer in answers.items()}
    assert all(answer["status"] == "error" for answer in answers.values()), reasons
    assert "unsigned" in reasons["unsigned"]
    assert "may not give floor_override" in reasons["dealer's key"]
    assert "from the table's clock" in reasons["old ts"]
    assert "revoked" in reasons["revoked key"]
    assert "nonce was used before" in reasons["nonce used twice"]
    types = journal_types(table)
    assert "hand.started" not in types
    assert "hand.void" not in types
    assert types.count("command.rejected") >= len(answers)


# --------------------------------------------------------------------------- hostile input

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
VERBS = st.sampled_from([*sorted(COMMANDS), "dance", "x" * 70, "réserve"])


def _fields(verb: str) -> st.SearchStrategy[dict[str, Any]]:
    names = [
        "seat",
        "action",
        "amount",
        "card",
        "rule",
        "decision",
        "hold",
        "reason",
        "button",
        "seats",
        "target",
        "cards",
        "by",
        "left_table",
        "oversized_chip",
    ]
    return st.dictionaries(st.sampled_from(names), JSON, max_size=4)


PAYLOADS = st.one_of(
    st.binary(max_size=200),
    JSON.map(lambda value: json.dumps(value).encode()),
    st.integers(1, 3000).map(
        lambda d: b'{"transaction": "d", "seat": ' + b"[" * d + b"]" * d + b"}"
    ),
    st.integers(19, 5000).map(lambda n: b'{"transaction": "i", "amount": 1' + b"0" * n + b"}"),
    st.integers(1025, 300_000).map(
        lambda n: json.dumps({"transaction": "s", "x": "a" * n}).encode()
    ),
    st.sampled_from(
        [
            b'{"transaction": "u", "x": "\\udfff"}',
            b'{"\\ud800": 1, "transaction": "u"}',
            b'{"transaction": "u", "seat": true, "action": "call"}',
            b"\xff\xfe{}",
        ]
    ),
)


@pytest.fixture(scope="module")
def fuzz_table(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    directory = tmp_path_factory.mktemp("fuzz")
    broker = Broker(directory / "broker")
    (directory / "broker").mkdir()
    broker.start()
    daemon = DaemonProcess(directory / "daemon", broker)
    daemon.start()
    yield daemon
    daemon.close()
    broker.stop()


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    raw=st.lists(st.tuples(VERBS, PAYLOADS), min_size=10, max_size=30),
    commands=st.lists(st.tuples(VERBS, st.data()), min_size=5, max_size=15),
)
def test_fuzzed_requests_are_each_answered_and_refused_ones_change_nothing(
    fuzz_table: DaemonProcess, raw: list[tuple[str, bytes]], commands: list[tuple[str, Any]]
) -> None:
    signed_requests = []
    for number, (verb, data) in enumerate(commands):
        fields = data.draw(_fields(verb))
        body = {**fields, "transaction": f"f{os.getpid()}-{id(data)}-{number}"}
        role = data.draw(st.sampled_from([Role.DEALER, Role.FLOOR, Role.SURVEILLANCE]))
        signed_requests.append((verb, signed(fuzz_table, role, verb, body)))

    async def play() -> dict[bytes, dict[str, Any]]:
        async with (
            aiomqtt.Client(
                "127.0.0.1", fuzz_table.broker.port, protocol=aiomqtt.ProtocolVersion.V5
            ) as client,
            Requester(client, fuzz_table.topics) as requests,
        ):
            sent = [
                await requests.send(verb, payload) for verb, payload in [*raw, *signed_requests]
            ]
            return await requests.wait(sent, 60)

    assert fuzz_table.proc is not None
    answers = asyncio.run(play())
    for answer in answers.values():
        assert answer["status"] in ("ok", "error")
        if answer["status"] == "error":
            caused = {e["type"] for e in (answer.get("data") or {}).get("events", [])}
            assert caused <= {"command.rejected"}, answer  # a refusal changes nothing
        assert len(json.dumps(answer)) < 4096  # never an echo of the request
    assert fuzz_table.proc.poll() is None  # still running
    check = subprocess.run(
        [*TABLECTL, "journal", "verify", "--journal", str(fuzz_table.journal)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert check.returncode == 0, check.stderr
    assert rss_kib(fuzz_table.proc.pid) < 200 * 1024


async def test_a_flood_of_garbage_does_not_hold_a_signed_dealer_back(
    table: DaemonProcess, open_broker: Broker
) -> None:
    async with (
        aiomqtt.Client(
            "127.0.0.1", open_broker.port, protocol=aiomqtt.ProtocolVersion.V5
        ) as flooder,
        aiomqtt.Client(
            "127.0.0.1", open_broker.port, protocol=aiomqtt.ProtocolVersion.V5
        ) as console,
        Requester(flooder, table.topics) as flood,
        Requester(console, table.topics) as dealer,
    ):
        garbage = [
            await flood.send("action", b'{"transaction": "g", "seat": "x"}') for _ in range(1500)
        ]
        answers = [
            await dealer.request_raw(
                "round_closed", signed(table, Role.DEALER, "round_closed", {"transaction": f"d{n}"})
            )
            for n in range(10)
        ]
        flooded = await flood.wait(garbage, 120)
    # the dealer's requests were each answered (no hand: the core refuses round_closed) ...
    assert all("no hand" in (answer["error"] or "") for answer in answers), answers
    # ... and every garbage request the broker delivered was answered too, run or shed
    assert len(flooded) == len(garbage)
    reasons = {answer["error"].split(":")[0] for answer in flooded.values()}
    assert reasons <= {"unsigned", "rate limited", "overloaded"}


async def test_replayed_copies_of_a_dealers_request_do_not_starve_the_dealer(
    table: DaemonProcess, open_broker: Broker
) -> None:
    captured = signed(
        table,
        Role.DEALER,
        "round_closed",
        {"transaction": "captured"},
        now=datetime.now(UTC) - timedelta(minutes=10),
    )
    async with (
        aiomqtt.Client("127.0.0.1", open_broker.port, protocol=aiomqtt.ProtocolVersion.V5) as fc,
        aiomqtt.Client("127.0.0.1", open_broker.port, protocol=aiomqtt.ProtocolVersion.V5) as dc,
        Requester(fc, table.topics) as flood,
        Requester(dc, table.topics) as dealer,
    ):

        async def replaying() -> list[bytes]:
            return [await flood.send("round_closed", captured) for _ in range(600)]

        async def dealing() -> list[dict[str, Any]]:
            answers = []
            for n in range(45):  # beyond the dealer key's burst, while the replays pour in
                body = signed(table, Role.DEALER, "round_closed", {"transaction": f"d{n}"})
                answers.append(await dealer.request_raw("round_closed", body))
            return answers

        sent, answers = await asyncio.gather(replaying(), dealing())
        replays = await flood.wait(sent, 120)
    # every dealer request was run by the table (no hand: the core refuses round_closed) ...
    assert all("no hand" in (answer["error"] or "") for answer in answers), answers
    # ... every copy was answered, and none in the dealer's name when it was shed
    assert len(replays) == len(sent)
    reasons = {str(a["error"]).split(":")[0] for a in replays.values()}
    assert reasons <= {"rate limited", "auth.ts is 600 s from the table's clock (at most 30 s)"}
    shed = [a for a in replays.values() if str(a["error"]).startswith("rate limited")]
    assert {a["transaction"] for a in shed} <= {None}
    # the stale request was journaled once (beside the core's refusal of each dealer request):
    # its later copies got the stored answer
    assert journal_types(table).count("command.rejected") == 1 + len(answers)


async def test_a_retained_request_is_refused_not_run_and_cleared_from_the_broker(
    table: DaemonProcess, open_broker: Broker
) -> None:
    request = signed(table, Role.DEALER, "start_hand", {"transaction": "kept"})
    async with (
        aiomqtt.Client("127.0.0.1", open_broker.port, protocol=aiomqtt.ProtocolVersion.V5) as c,
        Requester(c, table.topics) as console,
    ):
        sent = await console.send("start_hand", request, retain=True)
        answer = (await console.wait([sent], 60))[sent]
    assert answer["error"].startswith("retained"), answer
    assert "hand.started" not in journal_types(table)
    assert journal_types(table).count("command.rejected") == 1
    # the broker no longer holds it: a later connection of the table would not get it again
    async with aiomqtt.Client("127.0.0.1", open_broker.port) as late:
        await late.subscribe(table.topics.request(), qos=1)
        assert await received(late, 0.5) == []


async def test_a_daemon_that_dies_of_a_bug_leaves_its_status_offline(
    table: DaemonProcess, open_broker: Broker
) -> None:
    topics = Topics("tables", table.table)
    async with aiomqtt.Client(
        "127.0.0.1", open_broker.port, protocol=aiomqtt.ProtocolVersion.V5
    ) as watcher:
        await watcher.subscribe(topics.status, qos=1)
        states: list[str] = []

        async def watch() -> None:
            async for message in watcher.messages:
                payload = message.payload if isinstance(message.payload, bytes) else b"{}"
                states.append(json.loads(payload)["state"])

        reader = asyncio.create_task(watch())
        try:
            async with asyncio.timeout(10):
                while "online" not in states:
                    await asyncio.sleep(0.02)
            table.kill(6)  # SIGABRT: the process dies without any orderly step
            async with asyncio.timeout(20):  # keepalive 5 s: the broker notices within 1.5 × that
                while states[-1] != "offline":
                    await asyncio.sleep(0.05)
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)


async def test_a_daemon_that_ends_on_an_unhandled_error_leaves_its_status_offline(
    tmp_path: Path, open_broker: Broker
) -> None:
    config = parse_config(
        {
            "table": {"id": "T5", "stacks": {"1": 50, "2": 50}, "button": 1, "blinds": [1, 2]},
            "security": {"require_signed": False},
            "broker": {"host": "127.0.0.1", "port": open_broker.port, "keepalive": 5},
            "journal": {"path": str(tmp_path / "journal.sqlite")},
        }
    )
    daemon = Daemon(config)
    topics = Topics("tables", "T5")
    async with aiomqtt.Client(
        "127.0.0.1", open_broker.port, protocol=aiomqtt.ProtocolVersion.V5
    ) as watcher:
        await watcher.subscribe(topics.status, qos=1)
        run = asyncio.create_task(daemon.run())
        async with asyncio.timeout(10):
            await daemon.ready.wait()
            await daemon.link.connected.wait()

        async def broken(*args: object) -> None:
            raise RuntimeError("a bug")

        # a bug in one of the daemon's tasks (here: journaling the shed requests) ends it
        daemon.runner.record_rejection = broken  # type: ignore[method-assign,assignment]
        daemon.intake.shed["rate limited"] += 1
        with pytest.raises(ExceptionGroup) as ended:
            async with asyncio.timeout(10):
                await run
        assert ended.group_contains(RuntimeError, match="a bug")
        # the Will (the connection was dropped, not closed cleanly), within the keepalive
        assert await next_state(watcher, 8.0) == "offline"


async def test_nobody_can_pre_empt_a_consoles_transaction(
    table: DaemonProcess, open_broker: Broker
) -> None:
    async with (
        aiomqtt.Client("127.0.0.1", open_broker.port, protocol=aiomqtt.ProtocolVersion.V5) as c,
        Requester(c, table.topics) as requests,
    ):
        # an attacker takes the transaction id first: unsigned, then with another valid key
        unsigned = await requests.request("start_hand", {"transaction": "pre-1"})
        other_key = await requests.request_raw(
            "start_hand", signed(table, Role.SURVEILLANCE, "start_hand", {"transaction": "pre-1"})
        )
        # the console's own request with that id still runs
        real = await requests.request_raw(
            "start_hand", signed(table, Role.DEALER, "start_hand", {"transaction": "pre-1"})
        )
    assert "unsigned" in unsigned["error"]
    assert "may not give start_hand" in other_key["error"]
    assert real["status"] == "ok", real
    assert real["data"]["events"][0]["type"] == "hand.started"


@pytest.mark.skipif(os.geteuid() != 0, reason="mosquitto drops to its own user only as root")
async def test_the_setup_runs_as_debian_runs_mosquitto_included_from_conf_d() -> None:
    # Debian's mosquitto.conf includes /etc/mosquitto/conf.d; mosquitto starts as root and
    # drops to its own user, who must still read the password file, the ACL and the key
    base = Path(tempfile.mkdtemp(prefix="tablectl-broker-"))
    base.chmod(0o755)
    try:
        out, conf_d = base / "tablectl", base / "conf.d"
        conf_d.mkdir()
        plain, tls = free_port(), free_port()
        done = subprocess.run(
            [*TABLECTL, "broker", "setup", str(USERS), "--out", str(out), "--hostname",
             "localhost", "--listener", f"{plain} 127.0.0.1", "--tls-listener", f"{tls} 127.0.0.1"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        (conf_d / "tablectl.conf").symlink_to(out / "mosquitto.conf")
        lib = base / "lib"  # Debian's /var/lib/mosquitto, the mosquitto user's
        lib.mkdir()
        shutil.chown(lib, "mosquitto", "mosquitto")
        main = base / "mosquitto.conf"  # as Debian's, but for the paths
        main.write_text(
            f"persistence true\npersistence_location {lib}/\nlog_dest stderr\n"
            f"include_dir {conf_d}\n"
        )
        with (base / "mosquitto.log").open("wb") as log:
            broker = subprocess.Popen([MOSQUITTO, "-c", str(main)], stdout=log, stderr=log)
        try:
            wait_port(tls)
            client = aiomqtt.Client(
                "localhost",
                tls,
                username="pit",
                password=(out / "passwords" / "pit").read_text().strip(),
                protocol=aiomqtt.ProtocolVersion.V5,
                tls_params=aiomqtt.TLSParameters(ca_certs=str(out / "tls" / "ca.crt")),
            )
            async with client:
                await client.subscribe("tables/+/status", qos=1)
            assert (out / "passwd").owner() == "mosquitto"
        finally:
            broker.terminate()
            broker.wait(10)
        assert "Error" not in (base / "mosquitto.log").read_text()
    finally:
        shutil.rmtree(base, ignore_errors=True)

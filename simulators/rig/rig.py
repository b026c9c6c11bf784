"""The rig: the whole table on one machine, as processes, and the dealer's hands on it.

A :class:`Rig` session holds the broker (one given by URL, a mosquitto of its own, or none), an
MQTT client and the bench: the TSP/1 shuffler simulator and the TSP/1 reader simulator (an
antenna under each seat, the board, the burn, the muck and the shuffler's input), each a
``tablectl sim`` process on a pty. :meth:`Rig.open_table` starts a table on the bench:
``tablectl run`` with a generated config pointing at the simulators, a fresh journal and a local
console socket. The bench is reused from one table to the next (its antennas emptied, its faults
cleared) unless a table left it in a state that cannot be undone; then it is started afresh.

The dealer acts on an :class:`OpenTable` through :attr:`~OpenTable.shuffler` (the shuffler's
buttons and faults), :attr:`~OpenTable.tags` (cards on the antennas) and
:attr:`~OpenTable.console` (dealer commands, over MQTT or the console socket); what the table
made of it is in the daemon's journal (:mod:`simulators.rig.mirror`) and on the broker.

Every child is stopped when the table or the session closes, whatever happened: SIGTERM, then
SIGKILL if it does not go.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from controller.mqtt import MqttError
from controller.shell.topics import Topics
from simulators.rig.bench import Bench
from simulators.rig.broker import (
    AUTO,
    NONE,
    BrokerAddress,
    LocalBroker,
    can_connect,
    mosquitto_binary,
    parse_broker,
)
from simulators.rig.children import Child, tablectl
from simulators.rig.console import Console, MqttConsole, SocketConsole
from simulators.rig.errors import RigError
from simulators.rig.keys import RigKeys
from simulators.rig.link import BrokerLink, NotifySocket
from simulators.rig.setup import ReaderKind, RigPaths, TableSetup, daemon_config


@dataclass(frozen=True)
class RigOptions:
    """How the rig is built."""

    # "auto", "none", mqtt://host:port (a broker that takes the rig without a login), or the
    # address of another rig's broker with the logins the rig has there (rigs sharing an ACL'd
    # broker: the jobs of ``run_files``)
    broker: str | BrokerAddress = AUTO
    prefix: str = "tables"  # rigs sharing a broker need prefixes of their own
    directory: Path | None = None  # keep the files here (default: a temporary directory)
    shuffle_time: float = 0.05
    start_timeout: float = 30.0
    reader: ReaderKind = "tsp"  # feig: the FEIG reader simulator, its crosstalk arbitrated
    crosstalk: float = 0.1  # feig: how often an antenna hears a neighbour's card


class Rig:
    """Broker, simulators, daemon and the dealer's access to them."""

    def __init__(self, options: RigOptions = RigOptions()) -> None:
        self.options = options
        self.address: BrokerAddress | None = None
        self.broker_note = ""
        self.local_broker: LocalBroker | None = None
        self.link: BrokerLink | None = None
        self._own_directory = options.directory is None
        self.directory = options.directory or Path(tempfile.mkdtemp(prefix="tablectl-rig-"))
        self.directory.mkdir(parents=True, exist_ok=True)
        self._tables = 0
        self.table: OpenTable | None = None
        self.bench: Bench | None = None
        self.keys = RigKeys.create(self.directory / "keys")  # its tables take signed requests

    # ------------------------------------------------------------------ session

    async def __aenter__(self) -> Rig:
        try:
            await self.start()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Find or start the broker."""
        choice = self.options.broker
        if choice == NONE:
            self.broker_note = "no broker (--broker none): the events stay in the journal"
        elif choice == AUTO:
            binary = mosquitto_binary()
            if binary is None:
                self.broker_note = "mosquitto is not installed: the events stay in the journal"
            else:
                broker_dir = self.directory / "broker"
                broker_dir.mkdir(exist_ok=True)
                self.local_broker = LocalBroker(binary, broker_dir)
                await self.local_broker.start()
                self.address = self.local_broker.address
                self.broker_note = f"a mosquitto of its own at {self.address.url}"
                login = self.address.console
                if login is not None:  # its ACL takes no anonymous client: say whom it takes
                    self.broker_note += (
                        f" (user {login.username}, password in {login.password_file})"
                    )
        else:
            self.address = choice if isinstance(choice, BrokerAddress) else parse_broker(choice)
            if not await can_connect(self.address):
                raise RigError(f"cannot reach the broker at {self.address.url}")
            self.broker_note = f"the broker at {self.address.url}"

    async def close(self) -> None:
        """Close the table, the bench, the MQTT client and the broker; remove a temporary
        directory."""
        with contextlib.suppress(Exception):
            await self.close_table()
        if self.bench is not None:
            await self.bench.stop()
            self.bench = None
        if self.link is not None:
            with contextlib.suppress(Exception):
                await self.link.stop()
            self.link = None
        if self.local_broker is not None:
            await self.local_broker.stop()
            self.local_broker = None
        if self._own_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    # ------------------------------------------------------------------ a table

    async def open_table(self, setup: TableSetup, *, unapproved: bool = False) -> OpenTable:
        """Start the simulators and a daemon on a fresh journal for ``setup``.

        ``unapproved`` plugs in a shuffler whose firmware is not on the approved list.
        """
        await self.close_table()
        self._tables += 1
        directory = self.directory / f"table-{self._tables:03d}"
        directory.mkdir(parents=True, exist_ok=True)
        bench = await self._bench(unapproved)
        paths = RigPaths(directory, bench.sockets, Path(tempfile.mkdtemp(prefix="rig")))
        if self.address is not None and (self.link is None or self.link.topics.table != setup.id):
            if self.link is not None:
                await self.link.stop()
            self.link = BrokerLink(
                self.address,
                Topics(self.options.prefix, setup.id),
                f"tablectl-rig-{os.getpid()}-{id(self):x}-{self._tables}",
            )
            try:
                await self.link.start()
            except MqttError as exc:
                self.link = None
                raise RigError(f"the broker at {self.address.url}: {exc}") from None
        table = OpenTable(self, setup, paths, bench)
        self.table = table
        await table.start()
        return table

    async def close_table(self) -> None:
        """Stop the table's daemon; the bench is tidied for the next table."""
        if self.table is not None:
            table, self.table = self.table, None
            await table.stop()

    async def _bench(self, unapproved: bool) -> Bench:
        """The bench for the next table: the last one tidied, or a fresh one."""
        bench = self.bench
        if bench is not None and bench.unapproved == unapproved and await bench.reusable():
            return bench
        if bench is not None:
            await bench.stop()
        self.bench = None
        o = self.options
        bench = Bench(
            self.directory,
            o.shuffle_time,
            unapproved=unapproved,
            reader=o.reader,
            crosstalk=o.crosstalk,
        )
        await bench.start(self.options.start_timeout)
        self.bench = bench
        return bench


class OpenTable:
    """One running table: its daemon on the bench, and the dealer's access to them."""

    def __init__(self, rig: Rig, setup: TableSetup, paths: RigPaths, bench: Bench) -> None:
        self.rig = rig
        self.setup = setup
        self.paths = paths
        self.bench = bench
        self.daemon: Child | None = None
        self.notify: NotifySocket | None = None
        self.shuffler = bench.shuffler
        self.tags = bench.tags
        sign = functools.partial(rig.keys.sign, setup.id)
        self.console: Console = (
            MqttConsole(rig.link.dealer, sign)
            if rig.link is not None and rig.link.dealer is not None
            else SocketConsole(paths.console, sign)
        )

    @property
    def journal(self) -> Path:
        """The daemon's journal."""
        return self.paths.journal

    @property
    def broker(self) -> BrokerAddress | None:
        """The broker the daemon publishes to (None: the journal alone)."""
        return self.rig.address

    async def start(self) -> None:
        """Write the daemon's config and start it on a fresh journal.

        On a host-paced table the shuffler's tray is gated: a group the daemon asks for waits
        until the dealer takes it, so the scenario decides when (and how many cards) it comes.
        """
        await self.shuffler.tray(self.setup.dispense == "host")
        address = self.rig.address
        self.paths.config.write_text(
            daemon_config(
                self.setup,
                self.paths,
                (address.host, address.port) if address else None,
                prefix=self.rig.options.prefix,
                keyring=self.rig.keys.keyring,
                login=address.table if address else None,
                reader=self.rig.options.reader,
            )
        )
        await self.start_daemon()

    async def start_daemon(self) -> None:
        """Start ``tablectl run`` (again, on the same journal) and wait for READY=1."""
        if self.notify is None:
            self.notify = NotifySocket(self.paths.notify)
        mark = len(self.notify.lines)
        self.daemon = Child(
            "daemon",
            tablectl("run", "--config", str(self.paths.config)),
            self.paths.directory,
            env={"NOTIFY_SOCKET": str(self.notify.path)},
        )
        await self.daemon.start()
        try:
            await self.notify.wait("READY=1", mark, self.rig.options.start_timeout)
        except TimeoutError:
            raise RigError(f"the daemon did not get ready: {self.daemon.tail()}") from None

    async def stop_daemon(self) -> int | None:
        """Stop the daemon the way systemd does (SIGTERM: an orderly shutdown)."""
        if self.daemon is None:
            return None
        await self.console.close()
        return await self.daemon.stop()

    async def restart_daemon(self) -> None:
        """Stop the daemon and start it again on the same journal (the controller restarts)."""
        await self.stop_daemon()
        await self.start_daemon()

    async def stop(self) -> None:
        """Tidy the bench while the daemon still runs (what it reports is no longer anyone's
        concern), then stop the daemon."""
        await self.bench.tidy()
        if self.daemon is not None and self.daemon.running and not await self.bench.settled():
            self.bench.spoiled = True
        with contextlib.suppress(Exception):
            await self.console.close()
        if self.daemon is not None:
            await self.daemon.stop()
        if self.notify is not None:
            self.notify.close()
            self.notify = None
        shutil.rmtree(self.paths.sockets, ignore_errors=True)

    def logs(self) -> dict[str, str]:
        """The end of each child's log (for a failure report)."""
        children = (self.daemon, self.bench.shuffler_sim, self.bench.reader_sim)
        return {child.name: child.tail(1500) for child in children if child is not None}

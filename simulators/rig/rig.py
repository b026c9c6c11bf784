"""The rig: the whole table on one machine, as processes, and the dealer's hands on it.

A :class:`Rig` session holds the broker (one given by URL, a mosquitto of its own, or none) and
an MQTT client. :meth:`Rig.open_table` starts a table: the TSP/1 shuffler simulator and the TSP/1
reader simulator (an antenna under each seat, the board, the burn, the muck and the shuffler's
input) as processes on ptys, and ``tablectl run`` with a generated config pointing at them, a
fresh journal and a local console socket. The dealer then acts through :attr:`Rig.shuffler` (the
shuffler's buttons and faults), :attr:`Rig.tags` (cards on the antennas) and :attr:`Rig.console`
(dealer commands, over MQTT or the console socket); what the table made of it is in the daemon's
journal (:mod:`simulators.rig.mirror`) and on the broker.

Every child is stopped when the table or the session closes, whatever happened: SIGTERM, then
SIGKILL if it does not go.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from controller.shell.topics import Topics
from simulators.control_client import ControlClient
from simulators.rig.broker import (
    AUTO,
    NONE,
    BrokerAddress,
    LocalBroker,
    mosquitto_binary,
    parse_broker,
)
from simulators.rig.children import Child, ChildError, tablectl
from simulators.rig.console import Console, MqttConsole, SocketConsole
from simulators.rig.link import BrokerLink, NotifySocket
from simulators.rig.setup import RigPaths, TableSetup, daemon_config
from simulators.rig.world import ShufflerUnit, TableTags


class RigError(RuntimeError):
    """The rig could not build or run the table."""


@dataclass(frozen=True)
class RigOptions:
    """How the rig is built."""

    broker: str = AUTO  # "auto", "none" or mqtt://host:port
    prefix: str = "tables"
    directory: Path | None = None  # keep the files here (default: a temporary directory)
    shuffle_time: float = 0.05
    start_timeout: float = 30.0


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
        else:
            self.address = parse_broker(choice)
            self.broker_note = f"the broker at {self.address.url}"

    async def close(self) -> None:
        """Close the table, the MQTT client and the broker; remove a temporary directory."""
        with contextlib.suppress(Exception):
            await self.close_table()
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
        sockets = Path(tempfile.mkdtemp(prefix="rig"))
        paths = RigPaths(directory, sockets)
        if self.address is not None and (self.link is None or self.link.topics.table != setup.id):
            if self.link is not None:
                await self.link.stop()
            self.link = BrokerLink(
                self.address,
                Topics(self.options.prefix, setup.id),
                f"tablectl-rig-{directory.parent.name}-{self._tables}",
            )
            await self.link.start()
        table = OpenTable(self, setup, paths)
        self.table = table
        await table.start(unapproved=unapproved)
        return table

    async def close_table(self) -> None:
        """Stop the table's daemon and simulators."""
        if self.table is not None:
            table, self.table = self.table, None
            await table.stop()


class OpenTable:
    """One running table: its simulators, its daemon, and the dealer's access to them."""

    def __init__(self, rig: Rig, setup: TableSetup, paths: RigPaths) -> None:
        self.rig = rig
        self.setup = setup
        self.paths = paths
        self.shuffler_sim: Child | None = None
        self.reader_sim: Child | None = None
        self.daemon: Child | None = None
        self.notify: NotifySocket | None = None
        self.shuffler_control = ControlClient(paths.shuffler_control)
        self.reader_control = ControlClient(paths.reader_control)
        self.shuffler = ShufflerUnit(self.shuffler_control)
        self.tags = TableTags(self.reader_control)
        self.console: Console = (
            MqttConsole(rig.link.dealer)
            if rig.link is not None and rig.link.dealer is not None
            else SocketConsole(paths.console)
        )

    @property
    def journal(self) -> Path:
        """The daemon's journal."""
        return self.paths.journal

    @property
    def broker(self) -> BrokerAddress | None:
        """The broker the daemon publishes to (None: the journal alone)."""
        return self.rig.address

    async def start(self, *, unapproved: bool = False) -> None:
        """Start both simulators, then the daemon; wait until it says READY=1."""
        directory = self.paths.directory
        shuffler_args = [
            "sim", "shuffler",
            "--link", str(self.paths.shuffler_link),
            "--control", str(self.paths.shuffler_control),
            "--shuffle-time", str(self.rig.options.shuffle_time),
            "--baud", "0",
        ]  # fmt: skip
        if unapproved:
            shuffler_args.append("--unapproved")
        self.shuffler_sim = Child("shuffler", tablectl(*shuffler_args), directory)
        reader_args = [
            "sim", "rfid",
            "--link", str(self.paths.reader_link),
            "--control", str(self.paths.reader_control),
            "--antennas", "16",
            "--baud", "0",
        ]  # fmt: skip
        self.reader_sim = Child("reader", tablectl(*reader_args), directory)
        address = self.rig.address
        self.paths.config.write_text(
            daemon_config(self.setup, self.paths, (address.host, address.port) if address else None)
        )
        # All three at once: the daemon's drivers retry until the simulators' links appear,
        # and each process spends most of its start importing.
        timeout = self.rig.options.start_timeout
        try:
            await asyncio.gather(
                self.shuffler_sim.start(first_line=True, timeout=timeout),
                self.reader_sim.start(first_line=True, timeout=timeout),
                self.start_daemon(),
            )
        except ChildError as exc:
            raise RigError(str(exc)) from None
        await self.shuffler_control.connect()
        await self.reader_control.connect()

    async def start_daemon(self) -> None:
        """Start ``tablectl run`` (again, on the same journal) and wait for READY=1."""
        if self.notify is None:
            self.notify = NotifySocket(self.paths.sockets / "notify")
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
        """Stop the daemon, then the simulators; nothing is left running."""
        with contextlib.suppress(Exception):
            await self.console.close()
        for control in (self.shuffler_control, self.reader_control):
            with contextlib.suppress(Exception):
                await control.close()
        children = (self.daemon, self.shuffler_sim, self.reader_sim)
        await asyncio.gather(*(child.stop() for child in children if child is not None))
        if self.notify is not None:
            self.notify.close()
            self.notify = None
        shutil.rmtree(self.paths.sockets, ignore_errors=True)

    def logs(self) -> dict[str, Any]:
        """The end of each child's log (for a failure report)."""
        return {
            child.name: child.tail(1500)
            for child in (self.daemon, self.shuffler_sim, self.reader_sim)
            if child is not None
        }

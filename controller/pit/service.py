"""``tablectl pit run``: one pit process, wiring the store, the ingest, the repair and the API.

Start-up: migrate the store (every process may; the migrations are transactions), connect to the
broker, start the gap scan, the storage confirmations, the store's probe and the HTTP server.
Each connection announces the process on its own status topic, with a Last Will that says it
went (:mod:`controller.pit.presence`); when another member of the share group goes, this one
takes over its share.
Three store connections, each on its own thread: the ingest's commits, the repair's scans and
confirmations, the API's reads (and the probe). What the process has lost and since when, the
broker or the store, is kept in one :class:`~controller.pit.health.PitHealth` that /healthz and
the console read. SIGTERM or SIGINT stops it: the HTTP server first, then the broker connection
(its status says it is going, as its Will would; the messages not committed are not
acknowledged, and the broker keeps them for the session), then the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import Any

import structlog

from controller.aio import sleep_to_tick
from controller.pit.approved_builds import ApprovedBuilds, load_approved_builds
from controller.pit.changes import Announcer, ChangeFeed
from controller.pit.config import PitConfig
from controller.pit.confirm import Confirmer
from controller.pit.health import PROBE_LOST, PROBE_TIMEOUT, PROBE_UP, PitHealth
from controller.pit.http import listen, web_server
from controller.pit.ingest import Ingest
from controller.pit.live import LiveBoard, StreamLimits
from controller.pit.lockout import LockOut
from controller.pit.metrics import PitMetrics
from controller.pit.presence import Presence
from controller.pit.repair import Repairer
from controller.pit.reports.shuffler_audit import audit_of
from controller.pit.rulings import COMMANDS, Rulings
from controller.pit.store import Store
from controller.pit.worker import StoreLostError, StoreWorker
from controller.shell.notify import notify
from controller.signing import Signer, load_private_key

log = structlog.get_logger("tablectl.pit")

#: Seconds between two looks at the other members' states (and the metrics that show them).
MEMBERS_EVERY = 0.5


class PitService:
    """One pit process."""

    def __init__(self, config: PitConfig) -> None:
        self.config = config
        self.metrics = PitMetrics(config.pit.id)
        # what the process has lost and since when: the ingest and every store call report to
        # it, /healthz and the console read it
        self.health = PitHealth(follows_changes=config.web.enabled)
        url = config.store.url
        # what this process's transactions change is announced to every pit process of the
        # store, in the transaction (controller/pit/changes.py)
        self.announcer = Announcer()
        self.writer = StoreWorker(url, "ingest", self.health, self.announcer)
        self.scanner = StoreWorker(url, "repair", self.health, self.announcer)
        self.reader = StoreWorker(url, "api", self.health, self.announcer)
        signer = None
        security = config.security
        if security.key is not None:
            key_id = security.key_name()
            assert key_id is not None
            signer = Signer(load_private_key(security.key), key_id, "")
        self.ingest = Ingest(config, self.writer, self.metrics, health=self.health)
        self.repair = Repairer(config, self.scanner, self.metrics, self.ingest.publish, signer)
        self.audit = audit_of(config, self.scanner)
        self.ingest.on_response["replay"] = self.repair.on_response
        # the other members of the share group: one that goes has its share taken over
        self.presence = Presence(
            config.pit.id,
            config.pit.share_group,
            config.pit.session_expiry,
            config.repair.after,
            on_lost=self._member_lost,
            direct=self.ingest.want_direct,
            announce=self.ingest.announce,
        )
        self.ingest.presence = self.presence
        self.repair.away = self.presence.away
        self.ingest.on_commit.append(self.repair.on_commit)  # a commit may make a hole
        self.confirmer: Confirmer | None = None
        if config.pit.confirm:
            self.confirmer = Confirmer(
                config,
                self.scanner,
                self.metrics,
                self.ingest.publish,
                signer,
                mine=self.presence.confirms,
            )
            self.ingest.on_response["stored"] = self.confirmer.on_response
            self.ingest.on_commit.append(self.confirmer.on_commit)
        # the console: live pages wake on every commit (devices' health among what it stores);
        # the floor's rulings go out signed with the pit's key, for the person logged in
        self.board = LiveBoard()
        self.ingest.on_commit.append(self.board.touch)
        # … and on what the other pit processes of the store announce, with a periodic re-read
        self.changes = ChangeFeed(
            url,
            self.board,
            origin=self.announcer.origin,
            reread=config.web.live_reread,
            health=self.health,
        )
        self.rulings = Rulings(
            config.broker.prefix, self.ingest.publish, signer, config.web.ruling_timeout
        )
        for command in COMMANDS.values():
            self.ingest.on_response[command] = self.rulings.on_response
        self.stop_requested = asyncio.Event()
        self.ready = asyncio.Event()
        self.server: Any = None

    async def run(self) -> int:
        """Run until SIGTERM or SIGINT; the exit status."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop_requested.set)
        try:
            store = await self.writer.open()
            version = await self.writer.call(Store.migrate)
            log.info("pit.store.ready", schema=version, dialect=store.db.dialect)
            await self.scanner.open()
            await self.reader.open()
            tasks = [
                asyncio.create_task(self.ingest.run(), name="pit:ingest"),
                asyncio.create_task(self.repair.run(), name="pit:repair"),
                asyncio.create_task(self._probe_store(), name="pit:probe"),
                asyncio.create_task(self._members(), name="pit:members"),
                # SHF-RAND: the shuffler randomness audit, on the repair's connection
                asyncio.create_task(self.audit.run(), name="pit:audit"),
            ]
            if self.confirmer is not None:
                tasks.append(asyncio.create_task(self.confirmer.run(), name="pit:confirm"))
            if self.config.web.enabled:
                tasks.append(asyncio.create_task(self._serve(), name="pit:web"))
                tasks.append(asyncio.create_task(self.changes.run(), name="pit:changes"))
            stop = asyncio.create_task(self.stop_requested.wait(), name="pit:stop")
            # ready once connected (or after 10 s: the web console serves meanwhile); a stop
            # asked for meanwhile is not kept waiting
            connected = asyncio.create_task(self.ingest.connected.wait(), name="pit:connected")
            await asyncio.wait([connected, stop], timeout=10, return_when=asyncio.FIRST_COMPLETED)
            connected.cancel()
            self.ready.set()
            notify("READY=1", f"STATUS=pit {self.config.pit.id}")
            log.info("pit.ready", id=self.config.pit.id, web=self.config.web.listen)
            done, _ = await asyncio.wait([stop, *tasks], return_when=asyncio.FIRST_COMPLETED)
            failed = [t for t in done if t is not stop and t.exception() is not None]
            notify("STOPPING=1")
            await self.ingest.leave()  # the others take over this process's share at once
            self.board.close()  # the live pages' streams end, so the server can stop
            if self.server is not None:
                self.server.should_exit = True
            for task in [stop, *tasks]:
                task.cancel()
            await asyncio.gather(stop, *tasks, return_exceptions=True)
            for task in failed:
                log.error("pit.task_failed", task=task.get_name(), error=str(task.exception()))
            return 1 if failed else 0
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            for worker in (self.reader, self.scanner, self.writer):
                with contextlib.suppress(Exception):
                    await worker.close()
            log.info("pit.stopped")

    def _member_lost(self, pit: str) -> None:
        self.metrics.members_lost.inc()
        self.repair.member_lost(pit)

    async def _members(self) -> None:
        """Follow the other members as time passes (one back ends its catching up, an away
        one's session expires), and show them in the metrics."""
        while True:
            self.presence.evaluate()
            self.metrics.members_away.set(len(self.presence.away()))
            self.metrics.takeover.set(1 if self.presence.taking_over else 0)
            await sleep_to_tick(MEMBERS_EVERY)

    async def _probe_store(self) -> None:
        """Ask the store something every few seconds (more often while it is lost): a store
        that goes away while nobody reads is shown lost, and its return is shown without
        waiting for a request or a commit. The reader's worker reports each answer."""
        while True:
            try:
                async with asyncio.timeout(PROBE_TIMEOUT):
                    await self.reader.call(Store.schema_version)
            except TimeoutError:
                self.health.down("store", f"no answer in {PROBE_TIMEOUT:g} s")
            except StoreLostError:
                pass  # reported by the worker
            except Exception:
                log.exception("pit.store.probe_failed")  # a probe's bug must not stop the pit
            await sleep_to_tick(PROBE_UP if self.health.ok("store") else PROBE_LOST)

    async def _serve(self) -> None:
        from controller.pit.web.app import create_app  # noqa: PLC0415

        web = self.config.web
        app = create_app(
            self.reader,
            self.metrics,
            pit_id=self.config.pit.id,
            health=self.health,
            session_hours=web.session_hours,
            secure_cookie=web.secure_cookie,
            lockout=LockOut(web.lockout_attempts, web.lockout_minutes),
            rulings=self.rulings,
            board=self.board,
            streams=stream_limits(self.config),
            approved=approved_builds(self.config),
            time_zone=web.zone,
            report_settings=self.config.reports,
        )
        # The socket is ours: a port already taken is one clear error, not uvicorn's exit.
        listener = listen(web.host, web.port)
        self.server = web_server(
            app,
            header_timeout=web.header_timeout,
            keepalive_timeout=web.keepalive_timeout,
            trusted_proxies=web.trusted_proxies,
        )
        try:
            await self.server.serve(sockets=[listener])
        finally:
            listener.close()


def stream_limits(config: PitConfig) -> StreamLimits:
    """The live streams' limits of ``[web]``."""
    web = config.web
    return StreamLimits(
        per_session=web.streams_per_session,
        per_user=web.streams_per_user,
        total=web.streams_total,
        interval=web.live_interval,
        write_timeout=web.stream_write_timeout,
    )


async def run_pit(config: PitConfig) -> int:
    """Run the pit process of ``config`` until it is told to stop."""
    return await PitService(config).run()


def approved_builds(config: PitConfig) -> ApprovedBuilds | None:
    """The approved builds the config names (checked when the config was read)."""
    path = config.pit.approved_builds
    return None if path is None else load_approved_builds(path)

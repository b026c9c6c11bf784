"""``tablectl station run``: the station's web app on ``[station] listen``, following the table.

Three tasks until SIGTERM (or SIGINT): the watch of the table over the console socket (made
again whenever it breaks), the idle log-out, and the HTTP server (uvicorn, with the pit's
limits: a deadline for each request head, idle connections closed; controller/pit/http.py).
"""

from __future__ import annotations

import asyncio
import signal

import structlog

from controller.aio import cancel_and_wait
from controller.config import TableConfig
from controller.pit.http import WebListenError, listen, web_server
from controller.station.app import create_app
from controller.station.roster import RosterError, load_roster
from controller.station.settings import StationSetupError, keyring_problems, station_settings
from controller.station.station import Station

log = structlog.get_logger("tablectl.station")

HEADER_TIMEOUT = 10.0
KEEPALIVE_TIMEOUT = 30


async def run_station(config: TableConfig) -> int:
    """Serve the station of ``config`` until told to stop; the exit status."""
    try:
        settings = station_settings(config)
        roster = load_roster(settings.roster)
    except (StationSetupError, RosterError) as exc:
        log.error("station.cannot_start", error=str(exc))
        print(f"tablectl station: {exc}")
        return 2
    for person in roster.persons.values():
        for problem in keyring_problems(settings, person.id, person.roles):
            # logged, not fatal: the daemon refuses that person's requests with the reason
            log.warning("station.keyring", person=person.id, problem=problem)
    station = Station(settings)
    section = settings.section
    try:
        listener = listen(section.host, section.port)
    except WebListenError as exc:
        print(f"tablectl station: {exc}")
        return 2
    server = web_server(
        create_app(station),
        header_timeout=HEADER_TIMEOUT,
        keepalive_timeout=KEEPALIVE_TIMEOUT,
        trusted_proxies=[],
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    tasks = [
        asyncio.create_task(station.link.follow(), name="station:watch"),
        asyncio.create_task(station.idle_logout(), name="station:idle"),
        asyncio.create_task(server.serve(sockets=[listener]), name="station:web"),
    ]
    log.info("station.listening", listen=section.listen, console=str(settings.console))
    try:
        stopped = asyncio.create_task(stop.wait())
        done, _ = await asyncio.wait([stopped, *tasks], return_when=asyncio.FIRST_COMPLETED)
        failed = [t for t in done if t is not stopped and t.exception() is not None]
        server.should_exit = True  # uvicorn ends its connections, live streams included
        await asyncio.wait([tasks[2]], timeout=HEADER_TIMEOUT)
        await cancel_and_wait([stopped, *tasks])
    finally:
        listener.close()
        await station.link.close()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    if failed:
        log.error("station.failed", error=repr(failed[0].exception()))
        return 1
    log.info("station.stopped")
    return 0

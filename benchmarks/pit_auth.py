"""What a request costs the pit to know who is asking: HTTP Basic, a session cookie.

One pit app in this process (``create_app`` on a ``StoreWorker``, as ``tablectl pit run`` makes
it), on SQLite and on a throwaway PostgreSQL, asked ``GET /api/me`` over the ASGI interface (no
sockets: what is measured is the app and its store) by one client at a time:

* **Basic, known**: the same user's right password again and again, the API client's case (the
  argon2 check done once, then what each further request costs);
* **Basic, first**: a right password never checked before (the argon2 check each time);
* **session**: the session cookie ``POST /login`` set.

Reported per case: wall time per request (p50 and p95, µs) and the process's CPU per request
(µs, every thread: the store's, argon2's and the event loop's), the median of the case's
``--rounds`` and the least of them (the round least disturbed by the machine's other work).

    .venv/bin/python benchmarks/pit_auth.py [--requests 1000] [--rounds 5] [--code DIR]
                                            [--out FILE]

``--code DIR`` measures another checkout's pit (``git archive`` of an older commit, say).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PASSWORD = "a long enough benchmark password"


def header(name: str, password: str = PASSWORD) -> dict[str, str]:
    token = base64.b64encode(f"{name}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


#: A case: its name, the wall seconds of each request, the CPU seconds a request of each round.
Case = tuple[str, list[float], list[float]]


async def timed(client: Any, count: int, **kwargs: Any) -> tuple[list[float], float]:
    """Wall seconds of each request, and the CPU seconds of them all."""
    walls = []
    cpu = time.process_time()
    for _ in range(count):
        started = time.perf_counter()
        answer = await client.get("/api/me", **kwargs)
        walls.append(time.perf_counter() - started)
        assert answer.status_code == 200, answer.text
    return walls, time.process_time() - cpu


async def rounds(
    client: Any, requests: int, count: int, **kwargs: Any
) -> tuple[list[float], list[float]]:
    """``requests`` requests in ``count`` rounds: every wall time, each round's CPU a request."""
    walls: list[float] = []
    cpu: list[float] = []
    each = max(1, requests // count)
    for _ in range(count):
        some, spent = await timed(client, each, **kwargs)
        walls += some
        cpu.append(spent / each)
    return walls, cpu


async def measure(url: str, requests: int, count: int) -> list[Case]:
    # imported here: from the checkout --code names
    import httpx  # noqa: PLC0415

    from controller.pit.metrics import PitMetrics  # noqa: PLC0415
    from controller.pit.store import Store  # noqa: PLC0415
    from controller.pit.users import add_user  # noqa: PLC0415
    from controller.pit.web.app import create_app  # noqa: PLC0415
    from controller.pit.worker import StoreWorker  # noqa: PLC0415

    store = Store(url)
    store.migrate()
    firsts = max(20, requests // 50)  # argon2 is slow on purpose: fewer of them
    for n in range(firsts + 1):
        add_user(store, f"u{n}", ["floor"], PASSWORD)
    store.close()
    worker = StoreWorker(url, "api")
    await worker.open()
    app = create_app(worker, PitMetrics("bench"), pit_id="bench")
    transport = httpx.ASGITransport(app=app, client=("10.0.0.1", 40000))
    out = []
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://pit") as client:
            # warm: the first request of the user checks the password
            await timed(client, 1, headers=header("u0"))
            walls, cpu = await rounds(client, requests, count, headers=header("u0"))
            out.append(("Basic, known", walls, cpu))
            walls, cpu = [], []
            for n in range(1, firsts + 1):
                one, spent = await timed(client, 1, headers=header(f"u{n}"))
                walls += one
                cpu.append(spent)
            out.append(("Basic, first", walls, cpu))
            login = await client.post("/login", data={"username": "u0", "password": PASSWORD})
            assert login.status_code == 200, login.text
            walls, cpu = await rounds(client, requests, count)
            out.append(("session", walls, cpu))
    finally:
        await worker.close()
    return out


def rows(store: str, results: list[Case]) -> list[str]:
    lines = []
    for case, walls, cpu in results:
        ordered = sorted(walls)
        p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
        lines.append(
            f"| {store} | {case} | {len(walls)} | {statistics.median(walls) * 1e6:,.0f} "
            f"| {p95 * 1e6:,.0f} | {statistics.median(cpu) * 1e6:,.0f} "
            f"| {min(cpu) * 1e6:,.0f} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--code", type=Path, default=REPO, help="the checkout to measure")
    parser.add_argument("--out", type=Path, help="also write the table here")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))  # tests.postgres
    sys.path.insert(0, str(args.code.resolve()))
    from tests.postgres import PostgresServer, binaries  # noqa: PLC0415

    lines = [
        f"pit_auth: {args.requests} requests a case in {args.rounds} rounds, one client, "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs "
        f"(load {os.getloadavg()[0]:.1f}), code {args.code}",
        "",
        "| store | request | n | p50 µs | p95 µs | CPU µs/request | least round |",
        "|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as scratch:
        url = f"sqlite:///{Path(scratch) / 'pit.sqlite'}"
        lines += rows("SQLite", asyncio.run(measure(url, args.requests, args.rounds)))
    if binaries() is not None:
        server = PostgresServer()
        server.start()
        try:
            url = server.new_database()
            lines += rows("PostgreSQL", asyncio.run(measure(url, args.requests, args.rounds)))
        finally:
            server.stop()
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

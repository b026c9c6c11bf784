"""A pit process for the integration tests: ``tablectl pit run`` with its own config and store."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from controller.pit.store import Store
from tests.integration.broker import Broker, free_port, wait_port

REPO = Path(__file__).resolve().parents[2]
USER, PASSWORD = "floor-ann", "correct horse battery"


class PitProcess:
    """One pit process; ``store_url`` may be shared by several (a share group)."""

    def __init__(
        self,
        directory: Path,
        broker: Broker,
        *,
        pit_id: str = "pit-1",
        store_url: str | None = None,
        key: Path | None = None,
        repair_after: float = 1.0,
        confirm_interval: float | None = None,
        secure: bool = False,
        extra: str = "",
        prefix: str | None = None,
        live_reread: float | None = None,
        batch_wait: float = 0.02,
        web: str = "",
    ) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.broker = broker
        self.pit_id = pit_id
        self.store_url = store_url or f"sqlite:///{directory / 'pit.sqlite'}"
        self.port = free_port()
        self.config = directory / "pit.toml"
        security = f'[security]\nkey = "{key}"\n' if key is not None else ""
        # storage confirmations only where a test looks at them: a table that does not take
        # them journals each as a refused request, one event more for the pit to store
        confirm = (
            "confirm = false\n"
            if confirm_interval is None
            else f"confirm = true\nconfirm_interval = {confirm_interval}\n"
        )
        topics = f'prefix = "{prefix}"\n' if prefix is not None else ""
        reread = f"live_reread = {live_reread}\n" if live_reread is not None else ""
        self.config.write_text(
            f'[pit]\nid = "{pit_id}"\nshare_group = "pit"\nbatch_wait = {batch_wait}\n{confirm}'
            f"secure = {'true' if secure else 'false'}\n"
            f'[broker]\nhost = "127.0.0.1"\nport = {broker.port}\nkeepalive = 5\n'
            f"reconnect_min = 0.05\nreconnect_max = 0.5\n{topics}"
            f'[store]\nurl = "{self.store_url}"\n'
            f'[web]\nlisten = "127.0.0.1:{self.port}"\n{reread}{web}'
            f"[repair]\nafter = {repair_after}\nretry = 2.0\nscan = 0.2\n"
            f'{security}[log]\nformat = "json"\n{extra}'
        )
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The HTTP API's base URL."""
        return f"http://127.0.0.1:{self.port}"

    def add_user(
        self,
        name: str = USER,
        roles: tuple[str, ...] = ("floor", "surveillance"),
        password: str = PASSWORD,
    ) -> None:
        """A user of the pit (by default the test's floor user, also surveillance, to read hole
        cards)."""
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "controller.cli",
                "pit",
                "user",
                "add",
                name,
                *(part for role in roles for part in ("--role", role)),
                "--password-stdin",
                "--config",
                str(self.config),
            ],
            input=password.encode() + b"\n",
            capture_output=True,
            cwd=REPO,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode()

    def start(self, timeout: float = 20.0) -> None:
        """Start the process and wait until its API answers /healthz with ok."""
        log = (self.directory / "pit.log").open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "pit", "run", "--config", str(self.config)],
            stdout=log,
            stderr=log,
            cwd=REPO,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        log.close()
        wait_port(self.port, timeout)
        deadline = time.monotonic() + timeout
        while self.health().get("status") != "ok":
            assert self.proc.poll() is None, f"the pit exited:\n{self.log()}"
            assert time.monotonic() < deadline, f"the pit is not healthy:\n{self.log()}"
            time.sleep(0.05)

    def health(self) -> dict[str, Any]:
        """``GET /healthz`` (its body, whatever the status)."""
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=5) as response:
                body: dict[str, Any] = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            body = json.loads(exc.read())
        except OSError:
            return {}
        return body

    def get(self, path: str, *, auth: bool = True) -> tuple[int, bytes]:
        """``GET path`` with the test user's Basic credentials: status and body."""
        request = urllib.request.Request(f"{self.url}{path}")
        if auth:
            token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def json(self, path: str) -> Any:
        """``GET path`` as JSON (it must answer 200)."""
        status, body = self.get(path)
        assert status == 200, (status, body)
        return json.loads(body)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Stop the process; its exit status."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(20)

    def log(self) -> str:
        """The process's output so far."""
        path = self.directory / "pit.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def close(self) -> None:
        """Kill whatever runs."""
        if self.proc is not None and self.proc.poll() is None:
            self.stop(signal.SIGKILL)


def stored_seqs(url: str, table: str) -> dict[str, list[int]]:
    """Epoch → the seqs stored with their public view, in order."""
    store = Store(url)
    try:
        rows = store.db.all(
            "SELECT epoch, seq FROM events WHERE table_id = ? AND public IS NOT NULL "
            "ORDER BY epoch, seq",
            (table,),
        )
    finally:
        store.close()
    out: dict[str, list[int]] = {}
    for epoch, seq in rows:
        out.setdefault(epoch, []).append(int(seq))
    return out


async def wait_stored(url: str, table: str, epoch: str, seqs: list[int], timeout: float) -> None:
    """Wait until exactly ``seqs`` of the epoch are stored (and nothing else of it)."""
    deadline = time.monotonic() + timeout
    while True:
        got = (await asyncio.to_thread(stored_seqs, url, table)).get(epoch, [])
        if got == seqs:
            return
        if time.monotonic() > deadline:
            missing = sorted(set(seqs) - set(got))[:20]
            extra = sorted(set(got) - set(seqs))[:20]
            raise AssertionError(
                f"stored {len(got)} of {len(seqs)}: missing {missing} extra {extra}"
            )
        await asyncio.sleep(0.1)

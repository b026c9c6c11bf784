"""``tablectl pit user list`` and ``remove`` on a real PostgreSQL: the list shows what ``add``
made and what the pit recorded since (logins, sessions, lock-outs); removing a user ends their
sessions at once, their live pages and HTTP Basic credentials too; mistakes are one line."""

from __future__ import annotations

import io
import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from controller.cli import main
from controller.pit.console.streams import LOGIN_ENDED
from controller.pit.live import StreamLimits
from controller.pit.store import Store
from tests.pit.test_live import Stream, session
from tests.pit.web import basic, serve
from tests.postgres import PostgresServer

PASSWORD = "a long enough password"  # as tests.pit.web's


@dataclass
class Cli:
    """``tablectl pit user …`` on one config, its output captured."""

    config: Path
    url: str
    capsys: pytest.CaptureFixture[str]
    monkeypatch: pytest.MonkeyPatch

    def __call__(self, *args: str, stdin: str = "") -> tuple[int, str, str]:
        self.monkeypatch.setattr("sys.stdin", io.StringIO(stdin + "\n"))
        code = main(["pit", "user", *args, "--config", str(self.config)])
        out, err = self.capsys.readouterr()
        return code, out, err

    def add(self, name: str, *roles: str) -> None:
        flags = [part for role in roles for part in ("--role", role)]
        code, _, err = self("add", name, *flags, "--password-stdin", stdin=PASSWORD)
        assert code == 0, err


@pytest.fixture
def cli(
    tmp_path: Path,
    postgres: PostgresServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> Cli:
    url = postgres.new_database()
    config = tmp_path / "pit.toml"
    config.write_text(f'[pit]\nid = "p"\n[store]\nurl = "{url}"\n')
    return Cli(config, url, capsys, monkeypatch)


def stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def stamp_text(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_the_list_shows_what_add_made_and_what_the_pit_recorded_since(cli: Cli) -> None:
    before = time.time()
    cli.add("sam", "surveillance", "floor")
    cli.add("dan", "dealer")
    code, out, err = cli("list")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert [line.split("  ")[:2] for line in lines] == [
        ["dan", "dealer"],
        ["sam", "floor,surveillance"],
    ]
    assert lines[1].split("  ")[3:] == ["never logged in", "0 sessions open"]
    code, out, _ = cli("list", "--json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["name"], r["roles"]) for r in rows] == [
        ("dan", ["dealer"]),
        ("sam", ["floor", "surveillance"]),
    ]
    for row in rows:
        assert before - 1 <= stamp(row["created"]) <= time.time() + 1
        assert (row["last_login"], row["sessions"], row["locked_out"]) == (None, 0, [])
    # sam logs in twice; dan's password is guessed from one address until it is locked out
    # for ten minutes (the waits grow with each wrong password: test_lockout.py)
    async with serve(cli.url) as pit:
        for _ in range(2):
            await session(pit.url, "sam")
    store = Store(cli.url)
    until = time.time() + 600
    store.db.execute(
        "INSERT INTO login_failures (username, address, failures, first_at, last_at, "
        "locked_until) VALUES ('dan', '10.0.0.7', 14, ?, ?, ?)",
        (until - 700, until - 600, until),
    )
    store.close()
    code, out, _ = cli("list", "--json")
    dan, sam = (json.loads(line) for line in out.splitlines())
    # the list writes whole seconds: a log-in in the second "before" began in is not earlier
    assert before - 1 <= stamp(sam["last_login"]) <= time.time() + 1
    assert sam["sessions"] == 2
    assert (sam["locked_out"], dan["last_login"], dan["sessions"]) == ([], None, 0)
    assert dan["locked_out"] == [{"address": "10.0.0.7", "until": stamp_text(until)}]
    code, out, _ = cli("list")
    dan_line, sam_line = out.splitlines()
    assert f"last login {sam['last_login']}" in sam_line
    assert "2 sessions open" in sam_line
    assert dan_line.endswith(f"locked out from 10.0.0.7 until {stamp_text(until)}")


async def test_removing_a_user_ends_their_sessions_live_pages_and_basic_credentials_at_once(
    cli: Cli,
) -> None:
    cli.add("ann", "floor")
    cli.add("bob", "floor")
    async with serve(cli.url, streams=StreamLimits(recheck=0.1)) as pit:
        cookie = await session(pit.url, "ann")
        token = cookie.split("=", 1)[1]
        stream = await Stream.open(pit.port, "/api/live/floor", cookie)
        await stream.read_until(b"event: replace")
        async with (
            httpx.AsyncClient(base_url=pit.url, cookies={"tablectl_pit_session": token}) as page,
            httpx.AsyncClient(
                base_url=pit.url, headers={"Authorization": basic("ann", PASSWORD)}
            ) as api,
        ):
            assert (await page.get("/")).status_code == 200
            assert (await api.get("/api/me")).status_code == 200  # its credentials now cached
            bob = await session(pit.url, "bob")

            code, out, err = cli("remove", "ann")
            assert (code, err) == (0, "")
            assert out == "user ann removed: 1 session ended\n"

            # the browser's next request goes to the login page; the API refuses both
            answer = await page.get("/holds")
            assert answer.status_code == 303
            assert answer.headers["location"] == "/login?next=/holds"
            assert (await page.get("/api/me")).status_code == 401
            assert (await api.get("/api/me")).status_code == 401
            # the live page that was open is told, and ends
            await stream.read_until(b"event: gone", timeout=5)
            assert json.dumps(LOGIN_ENDED).encode() in stream.data
            stream.close()
            # bob was not touched
            async with httpx.AsyncClient(base_url=pit.url) as other:
                other.cookies.set("tablectl_pit_session", bob.split("=", 1)[1])
                assert (await other.get("/")).status_code == 200
    code, out, _ = cli("list")
    assert [line.split("  ")[0] for line in out.splitlines()] == ["bob"]


def test_mistakes_exit_2_with_one_line_and_no_traceback(
    cli: Cli, postgres: PostgresServer, tmp_path: Path
) -> None:
    cli.add("ann", "floor")
    code, out, err = cli("remove", "zed")
    assert (code, out, err) == (2, "", "tablectl pit user remove: no user 'zed'\n")
    # a database that is not there, one without the pit's schema, a SQLite file not there
    missing = postgres.url("no_such_database")
    empty = postgres.new_database()
    absent = tmp_path / "nowhere" / "pit.sqlite"
    for url, says in [
        (missing, 'database "no_such_database" does not exist'),
        (empty, "it holds no pit schema"),
        (f"sqlite:///{absent}", f"no store at {absent}"),
    ]:
        cli.config.write_text(f'[pit]\nid = "p"\n[store]\nurl = "{url}"\n')
        for args in (("list",), ("remove", "ann"), ("list", "--json")):
            code, out, err = cli(*args)
            assert code == 2, (url, args)
            assert out == ""
            assert err.count("\n") == 1, err
            assert err.startswith(f"tablectl pit user {args[0]}: ")
            assert says in err
            assert "Traceback" not in err
    assert not absent.parent.exists()  # nothing was made
    # a config that is not there is named as every pit verb names a config's problems
    cli.config = tmp_path / "missing.toml"
    code, out, err = cli("list")
    assert (code, out) == (2, "")
    assert err.startswith(f"tablectl pit user list: {cli.config}:")
    assert "Traceback" not in err

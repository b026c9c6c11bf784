"""A real PostgreSQL server for the tests: the installed binaries, a throwaway cluster, a free port.

The binaries are found on the PATH (``initdb``, ``pg_ctl``) or where Debian's ``postgresql``
package puts them (``/usr/lib/postgresql/<version>/bin``). PostgreSQL refuses to run as root:
as root (CI), the cluster belongs to the ``postgres`` user (or ``nobody``) and the server runs as
that user. ``fsync`` is off: a test's cluster does not outlive the test run.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

from tests.integration.broker import free_port

USER = "pit"


def binaries() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``, or None when PostgreSQL is absent."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return versions[-1].parent if versions else None


def _run_as() -> pwd.struct_passwd | None:
    """The user the server runs as when we are root (None: as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root, and no postgres or nobody user to run PostgreSQL as")


class PostgresServer:
    """One throwaway cluster and its server, listening on ``listen`` (an address of the host it
    runs on: loopback, or a network namespace's address for clients on other hosts)."""

    def __init__(self, listen: str = "127.0.0.1") -> None:
        bin_dir = binaries()
        if bin_dir is None:
            raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
        self.bin = bin_dir
        self.directory = Path(tempfile.mkdtemp(prefix="tablectl-pg-"))
        self.data = self.directory / "data"
        self.port = free_port()
        self.account = _run_as()
        self.listen = listen

    def _run(self, *args: str) -> None:
        kwargs: dict[str, Any] = {}
        if self.account is not None:
            kwargs = {"user": self.account.pw_uid, "group": self.account.pw_gid}
        done = subprocess.run(args, capture_output=True, check=False, cwd=self.directory, **kwargs)
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {done.stdout.decode()}{done.stderr.decode()}")

    def start(self) -> None:
        """initdb and start the server; wait until it accepts connections."""
        os.chmod(self.directory, 0o700)
        if self.account is not None:
            os.chown(self.directory, self.account.pw_uid, self.account.pw_gid)
        self._run(
            str(self.bin / "initdb"),
            "-D",
            str(self.data),
            "-U",
            USER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-locale",
        )
        if self.listen != "127.0.0.1":
            # initdb trusts loopback alone: let in the hosts of the listening address's network
            with (self.data / "pg_hba.conf").open("a") as hba:
                hba.write("host all all samenet trust\n")
        options = (
            f"-p {self.port} -k {self.directory} -c listen_addresses={self.listen} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.directory / "server.log"),
            "-w",
            "-t",
            "60",
            "start",
        )

    def url(self, database: str = "postgres") -> str:
        """The psycopg URL of a database of this server."""
        return f"postgresql://{USER}@{self.listen}:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh empty database; its URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        """Stop the server and remove the cluster."""
        try:
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

"""Build the sdist and the wheel, and install them into a virtual environment of their own.

Everything the packaging tests run, they run as a user of the wheel would: the venv's own
``bin/`` programs, from a working directory outside the checkout, with no ``PYTHONPATH`` and no
``TABLECTL_*`` variables, so nothing can come from the checkout by accident. pip's cache is the
user's usual one: after ``make test`` installed the dev environment, the dependencies come from
it rather than from the index.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "tablectl-example-driver"


def _outside_environment(venv: Path) -> dict[str, str]:
    """The caller's environment without anything that points Python at the checkout."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "TABLECTL_", "VIRTUAL_ENV", "NOTIFY_SOCKET"))
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


@dataclass(frozen=True)
class Dists:
    """The built source distribution and wheel."""

    sdist: Path
    wheel: Path

    @classmethod
    def found_in(cls, outdir: Path) -> Dists:
        """The sdist and the wheel :func:`build` wrote into ``outdir``."""
        (sdist,) = outdir.glob("tablectl-*.tar.gz")
        (wheel,) = outdir.glob("tablectl-*-py3-none-any.whl")
        return cls(sdist, wheel)


def build(outdir: Path) -> Dists:
    """``python -m build``: the sdist, then the wheel built from the sdist (not the checkout)."""
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(outdir), str(REPO)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, f"python -m build failed:\n{done.stdout}\n{done.stderr}"
    return Dists.found_in(outdir)


def source_digest() -> str:
    """A digest of the files a build of the checkout packs: git's tracked files and the others
    it does not ignore (hatchling packs by .gitignore too), names and contents. A build made
    once for a run is known by it: were a file changed meanwhile, the next test to ask for the
    build would get one of its own."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    digest = hashlib.sha256()
    for name in sorted({n for n in listed.stdout.decode().split("\0") if n}):
        path = REPO / name
        if path.is_file():  # (a tracked file deleted in the checkout is not packed)
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class Venv:
    """A virtual environment outside the checkout, and a working directory outside it too."""

    path: Path
    workdir: Path

    @classmethod
    def create(cls, path: Path, workdir: Path) -> Venv:
        """``python -m venv PATH`` (with pip, as a user makes one)."""
        for where in (path, workdir):
            assert REPO not in where.resolve().parents, f"{where} is inside the checkout"
        workdir.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=120)
        return cls(path, workdir)

    def bin(self, name: str) -> Path:
        """A program of the venv."""
        return self.path / "bin" / name

    @property
    def share(self) -> Path:
        """Where the wheel's data files land: ``<prefix>/share/tablectl``."""
        return self.path / "share" / "tablectl"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment the venv's programs run in."""
        return {**_outside_environment(self.path), **extra}

    def run(
        self,
        program: str,
        *args: str | Path,
        check: bool = True,
        timeout: float = 120,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a program of the venv from the working directory; fail with its output."""
        done = subprocess.run(
            [str(self.bin(program)), *map(str, args)],
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
            cwd=cwd or self.workdir,
            env=env or self.env(),
        )
        if check:
            assert done.returncode == 0, (
                f"{program} {' '.join(map(str, args))} exited {done.returncode}:\n"
                f"{done.stdout}\n{done.stderr}"
            )
        return done

    def pip_install(self, *args: str | Path) -> None:
        """``pip install ARGS`` into the venv (quietly; its output only on failure).

        Without compiling every installed module to bytecode up front: the tests import a few
        of them, and compiling them all is a third of pip's time on a busy machine."""
        self.run("pip", "install", "--quiet", "--no-compile", *args, timeout=600)

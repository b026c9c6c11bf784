"""A small file system of a test's own, to fill up for real (root only; skipped otherwise)."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.shell.space import free_bytes


@contextlib.contextmanager
def small_disk(mount: Path, size: str = "24m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``mount`` (made) for the block; skip without root."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root (the max_pages tests run instead)")
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(path: Path, leave: int) -> None:
    """Grow ``path`` until its file system has about ``leave`` bytes free (0: none at all)."""
    with path.open("ab", buffering=0) as filler:
        block = b"\0" * 65536
        while free_bytes(path.parent) > leave:
            size = min(len(block), max(free_bytes(path.parent) - leave, 4096))
            try:
                filler.write(block[:size])
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                return

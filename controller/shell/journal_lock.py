"""One daemon per journal: an exclusive lock, taken before the daemon touches anything.

Two ``tablectl run`` on one journal would each take the table's broker session from the other,
each publish the table's status (the one that stops publishes ``offline`` while the other still
runs), replace each other's console socket and append to one hash chain from two processes.
So ``run`` first takes an exclusive ``flock(2)`` on ``JOURNAL.lock`` beside the journal, and
writes its pid in it; a second ``run`` finds the lock held, reads the pid and exits with one line
naming it, having changed nothing: no broker connection, no socket, the journal not opened.

The lock is the kernel's: it goes with the process however it ends (a crash, SIGKILL), so a
stale lock file never keeps a table down. The descriptor is not inherited by child processes
(PEP 446), so a child cannot keep the lock once the daemon is gone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path


class JournalInUseError(RuntimeError):
    """Another process holds the journal's lock; ``pid`` is the one it wrote (None: unknown)."""

    def __init__(self, journal: Path, pid: int | None) -> None:
        who = f"pid {pid}" if pid is not None else "another process"
        super().__init__(
            f"{journal} is in use by {who} (a tablectl run of this table): "
            "nothing was changed; stop that one first"
        )
        self.pid = pid


def lock_path(journal: Path) -> Path:
    """The lock file of a journal: ``JOURNAL.lock`` beside it."""
    return journal.with_name(journal.name + ".lock")


class JournalLock:
    """The held lock of one journal, for as long as this object lives or until :meth:`release`."""

    def __init__(self, journal: Path) -> None:
        self.path = lock_path(journal)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _pid_in(fd)
            os.close(fd)
            raise JournalInUseError(journal, holder) from None
        except BaseException:
            os.close(fd)
            raise
        # The pid is for the message a second run prints, not for the lock: on a disk too full
        # to hold it the lock is still held, and the daemon goes on to wait for room.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        self.fd: int | None = fd

    def release(self) -> None:
        """Let the journal go (the process ending does the same)."""
        if self.fd is not None:
            fd, self.fd = self.fd, None
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # closing the last descriptor releases the flock

    def __enter__(self) -> JournalLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _pid_in(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None

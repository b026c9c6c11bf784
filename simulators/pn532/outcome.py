"""What a simulated PN532 command produces, and the status codes its answers carry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeVar

# Status bytes (UM0701-02 §7.1, error codes).
STATUS_OK: Final = 0x00
STATUS_TIMEOUT: Final = 0x01
STATUS_AUTH_ERROR: Final = 0x14
STATUS_NOT_ACCEPTABLE: Final = 0x27
STATUS_OVERCURRENT: Final = 0x2D


class SyntaxErrorReply:
    """The chip answers with the application-level error frame."""

    def __repr__(self) -> str:
        return "SYNTAX_ERROR"


SYNTAX_ERROR: Final = SyntaxErrorReply()


@dataclass(slots=True)
class Deferred:
    """A command still running.

    ``attempt`` is called whenever something may have changed (a tag placed, time passing); the
    command completes with its result. At ``deadline`` it completes with ``at_deadline`` instead;
    with no deadline it runs until the host aborts it.
    """

    code: int
    attempt: Callable[[], bytes | None]
    deadline: float | None = None
    at_deadline: bytes = b""


Outcome = bytes | SyntaxErrorReply | Deferred
"""Response data (the code + 1, then output parameters), the error frame, or still running."""

ChipT = TypeVar("ChipT")

Handler = Callable[[ChipT, bytes, float], Outcome]
"""Runs one command: the chip (as each command set describes what it uses of it, so that none of
them imports the chip, which imports them all), the command's input parameters, the time now."""

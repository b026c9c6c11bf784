"""The tag-bridge line protocol: what a reader vendor's bridge sends, one text line per message.

A bridge is a small program next to the vendor's SDK that prints what the reader sees on a TCP
connection. The driver connects to it; the bridge speaks first. Lines are UTF-8, end with
``\\n`` (a ``\\r`` before it is ignored), and hold words separated by spaces or tabs:

=================================  ===============================================================
``hello MODEL [FIRMWARE]``         the first line after connecting: who the reader is
``present ANTENNA [UID ...]``      every tag the antenna sees now (sent after ``hello`` for each
                                   antenna, and whenever the bridge wants to resynchronise)
``arrive ANTENNA UID``             a tag appeared on an antenna
``depart ANTENNA UID``             a tag left an antenna
``fault CODE [DETAIL ...]``        the reader raised a fault (``CODE`` without spaces)
``clear CODE``                     the fault is over
``ping``                           nothing happened; keeps an idle connection alive
``# ...`` or an empty line         ignored
=================================  ===============================================================

``ANTENNA`` is the vendor's name for an antenna (``0``, ``A3``, ``seat1``…); the driver's options
map it to a table zone. A UID is hex in any usual spelling (``04A1B2C3``, ``04:a1:b2:c3``).

This module is pure and never raises on input: :func:`parse_line` turns any bytes into a message
or a :class:`Rejected` saying why, and :class:`LineBuffer` cuts a byte stream into lines however
it was chunked.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.uids import UidError, normalize_uid

#: The longest line a bridge may send; a longer one is dropped whole (a bridge gone mad, or
#: something that is not a bridge).
MAX_LINE = 4096


@dataclass(frozen=True, slots=True)
class Hello:
    """The bridge's greeting."""

    model: str
    firmware: str = ""


@dataclass(frozen=True, slots=True)
class Present:
    """Every tag an antenna sees now."""

    antenna: str
    uids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Arrive:
    """A tag appeared on an antenna."""

    antenna: str
    uid: str


@dataclass(frozen=True, slots=True)
class Depart:
    """A tag left an antenna."""

    antenna: str
    uid: str


@dataclass(frozen=True, slots=True)
class Fault:
    """The reader raised a fault."""

    code: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Clear:
    """A fault of the reader is over."""

    code: str


@dataclass(frozen=True, slots=True)
class Ping:
    """Nothing happened."""


@dataclass(frozen=True, slots=True)
class Rejected:
    """A line that is not a message, and why."""

    reason: str
    line: str


Message = Hello | Present | Arrive | Depart | Fault | Clear | Ping


def parse_line(raw: bytes) -> Message | Rejected | None:
    """The message on one line (without its ``\\n``); None for a blank line or a comment."""
    text = raw.decode("utf-8", errors="replace").strip()
    if not text or text.startswith("#"):
        return None
    verb, *args = text.split()
    try:
        return _parse(verb.lower(), args)
    except (ValueError, UidError) as exc:
        return Rejected(str(exc), text)


def _parse(verb: str, args: list[str]) -> Message:
    if verb == "hello":
        _arity(verb, args, 1, 2)
        return Hello(*args)
    if verb == "present":
        _arity(verb, args, 1, None)
        return Present(args[0], tuple(normalize_uid(u) for u in args[1:]))
    if verb in ("arrive", "depart"):
        _arity(verb, args, 2, 2)
        edge = Arrive if verb == "arrive" else Depart
        return edge(args[0], normalize_uid(args[1]))
    if verb == "fault":
        _arity(verb, args, 1, None)
        return Fault(args[0], " ".join(args[1:]))
    if verb == "clear":
        _arity(verb, args, 1, 1)
        return Clear(args[0])
    if verb == "ping":
        _arity(verb, args, 0, 0)
        return Ping()
    raise ValueError(f"unknown message {verb!r}")


def _arity(verb: str, args: list[str], least: int, most: int | None) -> None:
    if len(args) < least or (most is not None and len(args) > most):
        wanted = f"{least}" if least == most else f"{least} to {most}" if most else f"{least}+"
        raise ValueError(f"{verb} takes {wanted} words, not {len(args)}")


def format_message(message: Message) -> bytes:
    """The line of a message, ``\\n`` included (what a bridge, or the simulator, sends)."""
    match message:
        case Hello(model, firmware):
            words = ["hello", model, firmware] if firmware else ["hello", model]
        case Present(antenna, uids):
            words = ["present", antenna, *uids]
        case Arrive(antenna, uid):
            words = ["arrive", antenna, uid]
        case Depart(antenna, uid):
            words = ["depart", antenna, uid]
        case Fault(code, detail):
            words = ["fault", code, detail] if detail else ["fault", code]
        case Clear(code):
            words = ["clear", code]
        case Ping():
            words = ["ping"]
    return (" ".join(words) + "\n").encode()


class LineBuffer:
    """Cuts a byte stream into lines, whatever the chunks; drops lines over :data:`MAX_LINE`."""

    def __init__(self, max_line: int = MAX_LINE) -> None:
        self.max_line = max_line
        self.overlong = 0
        self._pending = b""
        self._skipping = False  # inside a line already too long: drop until its end

    def feed(self, data: bytes) -> list[bytes]:
        """The lines completed by ``data``, without their ``\\n``."""
        lines = []
        *complete, rest = (self._pending + data).split(b"\n")
        for line in complete:
            if self._skipping:
                self._skipping = False
            elif len(line) > self.max_line:
                self.overlong += 1
            else:
                lines.append(line)
        if len(rest) > self.max_line:
            if not self._skipping:
                self.overlong += 1
            self._skipping = True
            rest = b""
        self._pending = rest
        return lines

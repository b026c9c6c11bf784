"""What a table publishes, as the pit takes it: parsed strictly, checked for the shape the pit uses.

Everything the pit reads from a table's topics comes through here: the events (public, secure,
replayed), the status (its ``degraded`` and ``alarms``), the retained state, each device's health
(``devices/{device}``) and the answers to the pit's requests. A table is a device on the floor
network; what it sends may be wrong in any way (a bug, a newer or older version, a tampered
device), and one table's message must never stop the pit or a page of the console:

* **JSON as RFC 8259 defines it** (:func:`load`): UTF-8, numbers finite (``NaN``,
  ``Infinity`` and ``1e999999`` are refused, :mod:`controller.strict_json`), integers of at most
  :data:`MAX_INT_DIGITS` digits, nesting at most :data:`MAX_DEPTH` deep, strings without NUL
  characters or lone surrogates (neither can be stored in PostgreSQL or sent to a browser).
* **The shape the pit uses**: the fields the pit stores, derives or shows must have their
  types (strictly: ``true`` is not a number, ``"3"`` is not a seat); fields it does not know
  are kept as they came.

A message that fails is refused with the reason (:class:`RejectedError`): the ingest keeps a
bounded record of it in the store's ``rejects`` with the table named, and the console shows it
(docs/pit.md, "Refused messages"). An event whose envelope is right but whose data has a field
of the wrong type is stored (it is the table's journal, and a replay would bring the same), what
the event decoder cannot read of it is left out of what the pit derives (an optional field; the
whole data when a required field is wrong), and the problem is recorded as a refusal too
(:func:`event_problems`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from controller.strict_json import finite_float, no_constant
from controller.table.events import EventData

#: Deepest nesting of arrays and objects a table's message may have.
MAX_DEPTH = 32
#: Most digits an integer may have (a seq, a stack, a pot: far fewer).
MAX_INT_DIGITS = 30
#: Largest integer a BIGINT column holds, and an INTEGER one (PostgreSQL).
BIGINT = 2**63 - 1
SMALL = 2**31 - 1


class RejectedError(ValueError):
    """A message that is not what its topic carries (the message says why)."""


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise RejectedError(f"an integer of more than {MAX_INT_DIGITS} digits")
    return int(text)


def text_of(payload: bytes | str) -> str:
    """A message's text (RejectedError: not UTF-8)."""
    try:
        return payload.decode("utf-8") if isinstance(payload, bytes | bytearray) else payload
    except UnicodeDecodeError:
        raise RejectedError("not JSON: not UTF-8") from None


#: An integer of more digits than :data:`MAX_INT_DIGITS` may be in a text that holds this.
_LONG_DIGITS = re.compile(f"[0-9]{{{MAX_INT_DIGITS + 1}}}")


def load(payload: bytes | str) -> Any:
    """The JSON value of a table's message (RejectedError: not JSON as the pit takes it).

    Most messages are read without looking at each of their values in Python: a text with no
    ``\\u`` escape holds no NUL and no lone surrogate (RFC 8259 §7: a control character is
    escaped, and UTF-8 cannot encode a surrogate), one with at most :data:`MAX_DEPTH` brackets
    is nested no deeper, and one with no run of more than :data:`MAX_INT_DIGITS` digits holds no
    longer integer. Any other text, and any text that does not parse, is read value by value,
    which names the reason (the two ways take and refuse the same texts:
    tests/pit/test_malformed.py).
    """
    text = text_of(payload)
    if (
        "\\u" not in text
        and text.count("[") + text.count("{") <= MAX_DEPTH
        and _LONG_DIGITS.search(text) is None
    ):
        try:
            return _DECODER.decode(text)
        except (ValueError, RecursionError):
            pass  # refused: the way below says why
    return load_checked(text)


#: :func:`load`'s decoder, made once (:func:`json.loads` makes one a call when given hooks).
_DECODER = json.JSONDecoder(parse_float=finite_float, parse_constant=no_constant)


def load_checked(text: str) -> Any:
    """:func:`load` reading every value (RejectedError: not JSON as the pit takes it)."""
    try:
        value = json.loads(
            text, parse_int=_integer, parse_float=finite_float, parse_constant=no_constant
        )
    except RecursionError:
        raise RejectedError(f"not JSON: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError, a non-finite number, a huge integer
        raise RejectedError(f"not JSON: {str(exc)[:200]}") from None
    check_values(value)
    return value


def check_values(value: Any) -> None:
    """Nesting, and strings that can be stored and shown (RejectedError otherwise)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            _check_string(item)
        elif isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                raise RejectedError(f"not JSON: nested deeper than {MAX_DEPTH} levels")
            if isinstance(item, dict):
                for key, inner in item.items():
                    _check_string(key)
                    stack.append((inner, depth + 1))
            else:
                stack.extend((inner, depth + 1) for inner in item)


def _check_string(text: str) -> None:
    if text.isascii():
        if "\x00" in text:
            raise RejectedError("a string holds a NUL character")
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise RejectedError("a string holds a lone surrogate (not valid Unicode)") from None
    if "\x00" in text:
        raise RejectedError("a string holds a NUL character")


def load_object(payload: bytes | str) -> dict[str, Any]:
    """A message that must be a JSON object."""
    body = load(payload)
    if not isinstance(body, dict):
        raise RejectedError("not a JSON object")
    return body


# --------------------------------------------------------------------------- shapes


class _Taken(BaseModel):
    """A part of a message the pit uses: its fields strictly typed, the others kept."""

    model_config = ConfigDict(extra="allow", strict=True)


Seq = Annotated[int, Field(ge=0, lt=2**62)]
Chips = Annotated[int, Field(ge=-BIGINT, le=BIGINT)]
Seat = Annotated[int, Field(ge=0, le=SMALL)]
Short = Annotated[str, StringConstraints(max_length=200)]
SeatKey = Annotated[str, StringConstraints(pattern=r"^[0-9]{1,4}$")]
#: A journal's or an epoch's name.
Name = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class StatusAlarm(_Taken):
    """One alarm a table's status reports (``journal.full``, ``journal.integrity``…)."""

    alarm: Short
    detail: str | None = None
    since: Short | None = None


class Status(_Taken):
    """A table's birth or death on ``{prefix}/{table}/status``."""

    state: Literal["online", "offline"]
    bdseq: Seq
    journal: Name | None = None
    epoch: Name | None = None
    ts: Short | None = None
    version: Short | None = None
    degraded: bool = False
    alarms: list[StatusAlarm] = Field(default_factory=list)


class SeatNow(_Taken):
    """A seat in a table's retained state."""

    stack: Chips | None = None
    in_hand: bool | None = None
    status: Short | None = None
    committed: Chips | None = None
    cards: Seat | None = None


class HoldNow(_Taken):
    """A hold of the hand in progress, in a table's retained state."""

    id: Short | None = None
    rule: Short | None = None
    ruling: Short | None = None
    reason: str | None = None
    seat: Seat | None = None


class HandNow(_Taken):
    """The hand in progress, in a table's retained state."""

    hand_id: Short | None = None
    phase: Short | None = None
    street: Short | None = None
    board: list[Short] = Field(default_factory=list)
    pot: Chips | None = None
    to_act: Seat | None = None
    holds: list[HoldNow] = Field(default_factory=list)


class State(_Taken):
    """A table's retained snapshot on ``{prefix}/{table}/state``."""

    epoch: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    seq: Seq
    button: Seat | None = None
    blinds: list[Chips] | None = None
    seats: dict[SeatKey, SeatNow] = Field(default_factory=dict)
    hand: HandNow | None = None
    last_hand: Short | None = None


class DeviceHealth(_Taken):
    """A device's retained health on ``{prefix}/{table}/devices/{device}``."""

    device: Short | None = None
    health: Short | None = None
    approved: bool | None = None
    detail: str | None = None
    ts: Short | None = None


class Answer(_Taken):
    """A table's answer on ``{prefix}/{table}/response/{verb}``."""

    transaction: Short | None = None
    status: Literal["ok", "error"]
    command: Short | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None


class ReplayAnswer(_Taken):
    """``data`` of the answer to a replay request."""

    sent: Annotated[int, Field(ge=0)] | None = None
    missing: list[Annotated[list[Seq], Field(min_length=2, max_length=2)]] = Field(
        default_factory=list
    )
    last_seq: Seq | None = None


class Attribution(_Taken):
    """``by`` of an event: who gave the command, in which role."""

    person: Short
    role: Short


def _problem(exc: ValidationError) -> str:
    """One line naming each field that failed and why (bounded)."""
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error["loc"]) or "the message"
        parts.append(f"{where}: {error['msg']}")
    more = len(exc.errors()) - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _checked(model: type[BaseModel], body: Mapping[str, Any], what: str) -> None:
    try:
        model.model_validate(body)
    except ValidationError as exc:
        raise RejectedError(f"{what}: {_problem(exc)}") from None


def parse_status(payload: bytes) -> dict[str, Any]:
    """A status message (RejectedError: why not)."""
    body = load_object(payload)
    _checked(Status, body, "status")
    return body


def parse_state(payload: bytes) -> dict[str, Any]:
    """A retained state (RejectedError: why not)."""
    body = load_object(payload)
    _checked(State, body, "state")
    return body


def parse_device(payload: bytes) -> dict[str, Any]:
    """A device's health (RejectedError: why not)."""
    body = load_object(payload)
    _checked(DeviceHealth, body, "device health")
    return body


def parse_answer(payload: bytes, verb: str) -> dict[str, Any]:
    """An answer to one of the pit's requests (RejectedError: why not)."""
    body = load_object(payload)
    _checked(Answer, body, f"the answer to {verb}")
    if verb == "replay":
        _checked(ReplayAnswer, body.get("data") or {}, "the answer to replay: data")
    return body


# --------------------------------------------------------------------------- events

SCHEMA = "tablectl.event/1"
_EPOCH = re.compile(r"^.{1,64}$", re.DOTALL)


def check_envelope(body: Any, table: str) -> None:
    """An event envelope of ``table`` (RejectedError: why it is not one)."""
    if not isinstance(body, dict):
        raise RejectedError("not a JSON object")
    if body.get("schema") != SCHEMA:
        raise RejectedError(f"schema is not {SCHEMA}")
    found, epoch, seq = body.get("table_id"), body.get("epoch"), body.get("seq")
    if found != table:
        raise RejectedError(f"table_id {str(found)[:64]!r} on the topic of table {table!r}")
    if not isinstance(epoch, str) or not _EPOCH.match(epoch):
        raise RejectedError("epoch: a string of 1 to 64 characters")
    if not isinstance(seq, int) or isinstance(seq, bool) or not 0 < seq < 2**62:
        raise RejectedError("seq: a positive integer")
    if body.get("event_id") != f"{table}:{epoch}:{seq}":
        raise RejectedError("event_id is not table_id:epoch:seq")
    ts, kind, severity = body.get("ts"), body.get("type"), body.get("severity")
    for name, value in (("ts", ts), ("type", kind), ("severity", severity)):
        if not isinstance(value, str) or not 0 < len(value) <= 200:
            raise RejectedError(f"{name}: a string of 1 to 200 characters")
    hand = body.get("hand_id")
    if hand is not None and (not isinstance(hand, str) or len(hand) > 200):
        raise RejectedError("hand_id: a string or null")
    if not isinstance(body.get("data"), dict) or not isinstance(body.get("rules"), list):
        raise RejectedError("data: an object; rules: a list")
    if not all(isinstance(r, str) and len(r) <= 200 for r in body["rules"]):
        raise RejectedError("rules: a list of rule IDs (strings)")
    by = body.get("by")
    if by is not None:
        try:
            Attribution.model_validate(by)
        except ValidationError as exc:
            raise RejectedError(f"by: {_problem(exc)}") from None
    if not isinstance(body.get("needs_confirm", False), bool):
        raise RejectedError("needs_confirm: true or false")


def _is_int(value: Any, high: int, low: int | None = None) -> bool:
    floor = -high if low is None else low
    return isinstance(value, int) and not isinstance(value, bool) and floor <= value <= high


#: Fields that hold a seat (or a run): numbers an INTEGER column holds, not negative.
_SEAT_FIELDS = frozenset({"seat", "button", "run", "seats"})


def event_problems(record: EventData, decoding: Sequence[str]) -> list[str]:
    """The fields of an event's data that do not fit its type (``decoding``, as the decoder named
    them: each left out of what the pit derives, the event itself stored) and the numbers of
    its record no column can hold."""
    problems = list(decoding)
    for key, value in record.public().items():
        if not _fits(value, seat=key in _SEAT_FIELDS):
            problems.append(f"{key} (out of range)")
    return problems


def _fits(value: Any, *, seat: bool) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return _is_int(value, SMALL, 0) if seat else _is_int(value, BIGINT)
    if isinstance(value, list):
        return all(_fits(v, seat=seat) for v in value)
    if isinstance(value, Mapping):
        return all(_fits(v, seat=False) for v in value.values())
    return True

"""The request gate: what every table request passes before anything is journaled.

A request is untrusted bytes from the network. In order:

1. **Size**: more than ``max_bytes`` is refused unread.
2. **Parsing** with limits: valid UTF-8 JSON, an object, nested at most ``max_depth`` deep, no
   integer longer than ``max_int_digits`` digits, no string longer than ``max_string``
   characters or holding a lone surrogate, no key given twice, no NaN, Infinity or number beyond
   a double's range (``1e999999``: RFC 8259 §6, §9).
3. **Transaction**: a string of 1 to 128 characters; the inbox is keyed by (key, transaction).
4. **Authentication** (:mod:`controller.signing`): ``auth`` names a key of the keyring that is
   not revoked, not expired and serves this table, and signs the canonical request. Without
   ``auth`` the request is refused unless the table takes unsigned requests
   (``[security] require_signed = false``).
5. **Freshness** (after the inbox: a redelivered request gets its stored answer whatever its
   age): ``ts`` within ``clock_skew`` seconds of the table's clock, a nonce not seen before.
6. **Role** (:mod:`controller.authority`): the role in which the key's holder gives the command.
7. **Fields**: the command's own fields, strict JSON types (``true`` is not a seat).

A refusal is a :class:`RefusedError` whose reason is bounded; the shell journals the request as a
bounded record (:func:`bounded_record`), never in full.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError

from controller.authority import Authority, Role, role_for
from controller.keyring import Keyring
from controller.shell.maintenance import REQUESTS
from controller.signing import canonical, signature_holds
from controller.strict_json import finite_float, no_constant
from controller.table.event_types import RequestRecord
from controller.table.inputs import DealerInput

MAX_TRANSACTION = 128
#: Requests the shell answers from the journal without journaling anything
#: (controller/shell/replay.py); maintenance's are in ``REQUESTS``.
SHELL_VERBS = frozenset({"replay"})
MAX_REASON = 300
HEAD = 200


@dataclass(frozen=True)
class Limits:
    """How big and deep a request may be (``[security]`` keys of the same names)."""

    max_bytes: int = 16 * 1024
    max_depth: int = 8
    max_int_digits: int = 18
    max_string: int = 1024


class RefusedError(Exception):
    """A request the table will not run; ``reason`` is short and safe to echo."""

    def __init__(self, reason: str, transaction: str | None = None) -> None:
        super().__init__(reason)
        self.reason = bounded_text(reason, MAX_REASON)
        self.transaction = transaction


@dataclass(frozen=True)
class Principal:
    """Who signed a request (``key`` None: unsigned) and the roles it may act in."""

    key: str | None
    person: str
    roles: frozenset[Role]
    via: str | None = None  # the console that signed for ``person``


@dataclass(frozen=True)
class Parsed:
    """A request read as JSON, its transaction and the shape of its ``auth`` checked."""

    verb: str
    body: Mapping[str, Any]
    transaction: str
    auth: Mapping[str, Any] | None  # None: unsigned

    @property
    def inbox_key(self) -> str:
        """The inbox's key the request claims (its signature not yet checked)."""
        key = self.auth["key"] if self.auth is not None else ""
        return f"{key}:{self.transaction}"


@dataclass(frozen=True)
class Request:
    """A parsed, authenticated request, not yet checked for freshness or role."""

    verb: str
    body: Mapping[str, Any]
    transaction: str
    principal: Principal
    ts: datetime | None = None  # the signature's time (None: unsigned)
    nonce: str | None = None
    claimed: bool = False  # its time checked and its nonce spent when it was queued

    @property
    def inbox_key(self) -> str:
        """The inbox's key: the signing key and the transaction (':' + it, unsigned)."""
        return f"{self.principal.key or ''}:{self.transaction}"

    @property
    def fields(self) -> dict[str, Any]:
        """The command's own fields."""
        return {k: v for k, v in self.body.items() if k not in ("transaction", "auth")}


# --------------------------------------------------------------------------- parsing


def bounded_text(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, printable and encodable (lone surrogates escaped)."""
    cut = text if len(text) <= limit else text[: limit - 1] + "…"
    return cut.encode("utf-8", "backslashreplace").decode("utf-8")


def bounded_record(payload: bytes) -> RequestRecord:
    """What the journal keeps of a refused request: its size, digest and first characters."""
    return RequestRecord(
        len(payload),
        hashlib.sha256(payload).hexdigest(),
        bounded_text(payload[: HEAD * 4].decode("utf-8", "replace"), HEAD),
    )


def _depth(payload: bytes, limit: int) -> int:
    """The deepest nesting of arrays and objects (outside strings)."""
    if payload.count(b"[") + payload.count(b"{") <= limit:
        return 0  # too few brackets to nest deeper, whatever the strings hold
    depth = deepest = 0
    in_string = escaped = False
    for byte in payload:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def parse_body(payload: bytes, limits: Limits = Limits()) -> dict[str, Any]:
    """The request object; RefusedError says what is wrong with it."""
    if len(payload) > limits.max_bytes:
        raise RefusedError(f"the request has {len(payload)} bytes: the limit is {limits.max_bytes}")
    if _depth(payload, limits.max_depth) > limits.max_depth:
        raise RefusedError(f"the request is nested deeper than {limits.max_depth} levels")

    def integer(text: str) -> int:
        if len(text.lstrip("-")) > limits.max_int_digits:
            raise ValueError(f"an integer of more than {limits.max_int_digits} digits")
        return int(text)

    def number(text: str) -> float:
        if len(text) > limits.max_int_digits + 8:
            raise ValueError("a number too long")
        return finite_float(text)

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                raise ValueError(f"the key {bounded_text(key, 40)!r} is given twice")
            result[key] = value
        return result

    try:
        text = payload.decode("utf-8")  # strictly: json.loads would guess UTF-16 from a BOM
        body = json.loads(
            text,
            parse_int=integer,
            parse_float=number,
            parse_constant=no_constant,
            object_pairs_hook=unique,
        )
    except UnicodeDecodeError:
        raise RefusedError("the request is not UTF-8") from None
    except (ValueError, RecursionError) as exc:
        raise RefusedError(f"the request is not valid JSON: {exc}") from None
    _check_strings(body, limits.max_string)
    if not isinstance(body, dict):
        raise RefusedError("the request must be a JSON object")
    return body


def _check_strings(value: Any, limit: int) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            _check_string(item, limit)
        elif isinstance(item, dict):
            for key, inner in item.items():
                _check_string(key, limit)
                stack.append(inner)
        elif isinstance(item, list):
            stack.extend(item)


def _check_string(text: str, limit: int) -> None:
    if len(text) > limit:
        raise RefusedError(f"a string of {len(text)} characters: the limit is {limit}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise RefusedError("a string holds a lone surrogate (not valid Unicode)") from None


def transaction_of(body: Mapping[str, Any]) -> str:
    """The request's transaction; RefusedError when it has none that can be used."""
    transaction = body.get("transaction")
    if transaction is None:
        raise RefusedError("transaction: required (a unique id per request)")
    if not isinstance(transaction, str) or not 0 < len(transaction) <= MAX_TRANSACTION:
        raise RefusedError(f"transaction: a string of 1 to {MAX_TRANSACTION} characters")
    return transaction


def auth_of(body: Mapping[str, Any], transaction: str) -> Mapping[str, Any] | None:
    """The request's ``auth``, its shape checked (None: unsigned; RefusedError: malformed)."""
    auth = body.get("auth")
    if auth is None:
        return None
    if not isinstance(auth, dict):
        raise RefusedError("auth: an object with key, ts, nonce and sig", transaction)
    for name in ("key", "ts", "nonce", "sig"):
        if not isinstance(auth.get(name), str) or not auth[name]:
            raise RefusedError(f"auth.{name}: required, a string", transaction)
    extra = set(auth) - {"key", "ts", "nonce", "sig", "on_behalf_of"}
    if extra:
        raise RefusedError(f"auth takes no {', '.join(sorted(extra))}", transaction)
    on_behalf_of = auth.get("on_behalf_of")
    if on_behalf_of is not None and not isinstance(on_behalf_of, str):
        raise RefusedError("auth.on_behalf_of: a person's name", transaction)
    return auth


# --------------------------------------------------------------------------- the gate


@dataclass(frozen=True)
class Policy:
    """How a table treats requests (``[security]`` of the table config)."""

    require_signed: bool = True
    clock_skew: float = 30.0
    unsigned_roles: frozenset[Role] = frozenset({Role.DEALER, Role.FLOOR})
    limits: Limits = Limits()


class Gate:
    """Reads, authenticates and authorizes requests for one table."""

    def __init__(
        self, table: str, policy: Policy, keyring: Keyring | None, nonces: int = 100_000
    ) -> None:
        self.table = table
        self.policy = policy
        self.keyring = keyring or Keyring()
        self._nonces: OrderedDict[str, float] = OrderedDict()  # nonce → when it expires
        self._nonce_limit = nonces
        self._adapters: dict[type[DealerInput], TypeAdapter[Any]] = {}

    # -------------------------------------------------------------- steps 1-4

    def read(self, verb: str, payload: bytes, now: datetime) -> Request:
        """Parse and authenticate a request (RefusedError: why not)."""
        return self.authenticate(self.parse(verb, payload), now)

    def parse(self, verb: str, payload: bytes) -> Parsed:
        """Steps 1-3, and the shape of ``auth``: nothing that needs a key (RefusedError)."""
        body = parse_body(payload, self.policy.limits)
        transaction = transaction_of(body)
        if verb not in REQUESTS and verb not in SHELL_VERBS:
            known = ", ".join(sorted((*REQUESTS, *SHELL_VERBS)))
            raise RefusedError(
                f"unknown command {bounded_text(verb, 40)!r} (known: {known})", transaction
            )
        return Parsed(verb, body, transaction, auth_of(body, transaction))

    def screen(self, parsed: Parsed, now: datetime) -> str | None:
        """Why a signed request cannot be a new one, by the checks that cost nothing: its time
        outside the allowed skew, or a nonce already spent (None: it may be new).

        Nothing here proves who sent the request, and nothing is spent: it only sorts a replayed
        or stale copy away from the key's owner (:mod:`controller.shell.intake`); the worker
        checks it in full, signature first, like any other request.
        """
        auth = parsed.auth
        if auth is None:
            return None
        try:
            ts = datetime.fromisoformat(auth["ts"])
        except ValueError:
            return None  # refused with the reason once the signature is checked
        if ts.tzinfo is None:
            return None
        skew = abs((now - ts).total_seconds())
        if skew > self.policy.clock_skew:
            return f"auth.ts is {skew:.0f} s from the table's clock"
        if f"{auth['key']}:{auth['nonce']}" in self._nonces:
            return "the nonce was used before"
        return None

    def authenticate(self, parsed: Parsed, now: datetime) -> Request:
        """Step 4: the key and its signature (RefusedError: why not)."""
        if parsed.auth is None:
            if self.policy.require_signed:
                raise RefusedError(
                    "unsigned: this table takes signed requests only", parsed.transaction
                )
            principal = Principal(None, "unsigned", self.policy.unsigned_roles)
            return Request(parsed.verb, parsed.body, parsed.transaction, principal)
        return self._authenticated(parsed.verb, parsed.body, parsed.transaction, parsed.auth, now)

    def _authenticated(
        self,
        verb: str,
        body: Mapping[str, Any],
        transaction: str,
        auth: Mapping[str, Any],
        now: datetime,
    ) -> Request:
        key_id: str = auth["key"]
        entry = self.keyring.keys.get(key_id)
        if entry is None:
            raise RefusedError(f"unknown key {bounded_text(key_id, 64)!r}", transaction)
        if entry.revoked:
            raise RefusedError(f"key {key_id!r} is revoked", transaction)
        if entry.valid_until is not None and now >= entry.valid_until:
            raise RefusedError(
                f"key {key_id!r} expired on {entry.valid_until.isoformat()}", transaction
            )
        if not entry.serves(self.table):
            raise RefusedError(f"key {key_id!r} is not for table {self.table}", transaction)
        on_behalf_of = auth.get("on_behalf_of")
        fields = {k: v for k, v in body.items() if k not in ("transaction", "auth")}
        message = canonical(
            verb, self.table, transaction, fields, auth["ts"], auth["nonce"], on_behalf_of
        )
        if not signature_holds(entry.raw_public_key, auth["sig"], message):
            raise RefusedError(f"the signature does not hold for key {key_id!r}", transaction)
        try:
            ts = datetime.fromisoformat(auth["ts"])
        except ValueError:
            raise RefusedError("auth.ts: an RFC 3339 time", transaction) from None
        if ts.tzinfo is None:
            raise RefusedError("auth.ts: give the time zone (Z)", transaction)
        if on_behalf_of is None:
            principal = Principal(key_id, entry.person, frozenset(entry.roles))
        else:
            if not entry.may_act_for(on_behalf_of):
                raise RefusedError(f"key {key_id!r} may not act for {on_behalf_of!r}", transaction)
            roles = frozenset(entry.roles) & self.keyring.roles_of(on_behalf_of)
            principal = Principal(key_id, on_behalf_of, roles, via=key_id)
        return Request(verb, body, transaction, principal, ts, auth["nonce"])

    # -------------------------------------------------------------- steps 5-7

    def admit(self, request: Request, now: datetime) -> DealerInput:
        """Check freshness and role, then build the command (RefusedError: why not).

        Call it once the inbox had no answer for the request: the nonce is spent here.
        """
        self.check_fresh(request, now)
        authority = self.authorize(request)
        return self.command(request, now, authority)

    def check_fresh(self, request: Request, now: datetime) -> None:
        """A signed request's time within the allowed skew, and a nonce never seen."""
        if request.ts is None or request.nonce is None or request.claimed:
            return
        skew = abs((now - request.ts).total_seconds())
        if skew > self.policy.clock_skew:
            raise RefusedError(
                f"auth.ts is {skew:.0f} s from the table's clock (at most "
                f"{self.policy.clock_skew:.0f} s)",
                request.transaction,
            )
        key = f"{request.principal.key}:{request.nonce}"
        self._expire(time.monotonic())
        if key in self._nonces:
            raise RefusedError(
                "the nonce was used before (a replayed request)", request.transaction
            )
        self.remember_nonce(key, time.monotonic() + 2 * self.policy.clock_skew)

    def claim(self, request: Request, now: datetime) -> Request:
        """Check a signed request's freshness and spend its nonce as it is queued: a copy
        that arrives while it waits is a replay (RefusedError: not fresh)."""
        self.check_fresh(request, now)
        return dataclasses.replace(request, claimed=request.nonce is not None)

    def release(self, request: Request) -> None:
        """A claimed request that was not run after all (the queue shed it): its nonce may
        come again."""
        if request.claimed:
            self._nonces.pop(f"{request.principal.key}:{request.nonce}", None)

    def remember_nonce(self, key: str, expires: float) -> None:
        """Keep a nonce until a request carrying it would be too old anyway."""
        self._nonces[key] = expires
        self._nonces.move_to_end(key)
        while len(self._nonces) > self._nonce_limit:
            self._nonces.popitem(last=False)

    def _expire(self, now: float) -> None:
        while self._nonces:
            first = next(iter(self._nonces))
            if self._nonces[first] > now:
                return
            self._nonces.popitem(last=False)

    def authorize(self, request: Request) -> Authority:
        """The role the request's principal gives the command in (RefusedError: none)."""
        principal = request.principal
        role = role_for(request.verb, principal.roles)
        if role is None:
            held = ", ".join(sorted(principal.roles)) or "no role"
            raise RefusedError(
                f"{principal.person} ({held}) may not give {request.verb}", request.transaction
            )
        return Authority(principal.person, role, principal.key, principal.via)

    def command(self, request: Request, received: datetime, authority: Authority) -> DealerInput:
        """The command input, its fields strictly typed, stamped with when it arrived."""
        verb = request.verb
        cls = REQUESTS[verb]
        names = {f.name for f in dataclasses.fields(cls)} - {"ts", "authority"}
        fields = request.fields
        extra = sorted(set(fields) - names)
        if extra:
            takes = ", ".join(sorted(names)) or "no fields"
            shown = ", ".join(bounded_text(e, 40) for e in extra[:5])
            raise RefusedError(
                f"{verb} does not take {shown} (it takes {takes})", request.transaction
            )
        adapter = self._adapters.get(cls)
        if adapter is None:
            adapter = self._adapters[cls] = TypeAdapter(cls)
        document = {**fields, "ts": received.astimezone(UTC).isoformat()}
        try:
            command = adapter.validate_json(json.dumps(document), strict=True)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or verb}: {err['msg']}"
                for err in exc.errors()[:5]
            )
            raise RefusedError(problems, request.transaction) from None
        stamped: DealerInput = dataclasses.replace(command, ts=received, authority=authority)
        return stamped

"""The simulated shuffler as a pure state machine: requests in, responses and events out.

No I/O and no clock: every call takes ``now`` (seconds on a monotonic clock). The model keeps the
device's state, deck, commitment, faults and meters; :mod:`simulators.shuffler.server` connects it
to a pty through the TSP/1 device link and injects link-level faults. Physical happenings (a jam,
the lid, a power cut, a bad deck) are methods the control channel and scenario files call.
"""

from __future__ import annotations

import hashlib
import hmac
import random
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import NamedTuple

from controller.cards import CODE_WITHHELD, STANDARD_DECK, Card, card_code
from controller.deck_order import deck_order
from drivers.shuffler.codes import (
    FAULTS,
    Capability,
    DeckMove,
    DeckVerdict,
    DeviceState,
    FaultFlag,
    IdPolicy,
    MsgType,
    ShuffleResult,
    StatusFlag,
    Trigger,
)
from drivers.shuffler.commitment import deck_commitment
from drivers.shuffler.events import (
    DeckCheck,
    DeckMoved,
    GroupDispensedEvent,
    OperatorInput,
    ShuffleComplete,
    ShuffleStarted,
    StateChanged,
)
from drivers.shuffler.messages import (
    ChallengeResult,
    ClearFault,
    Counters,
    DeckReveal,
    DispenseGroup,
    FaultList,
    FwChallenge,
    Identity,
    PlanStep,
    RevealDeck,
    SetConfig,
    StartShuffle,
    StartShuffleResult,
    Status,
    TimeSync,
    TimeSyncResult,
)
from drivers.tsp.common import (
    ClearedBy,
    ErrorCode,
    ErrorResponse,
    FaultCleared,
    FaultRaised,
    Result,
    Severity,
)
from drivers.tsp.payload import PayloadError
from simulators.errors import RefusedError
from simulators.shuffler.bias import Bias, biased_order
from simulators.shuffler.deck import deck_check

DEFAULT_CAPS = (
    Capability.CARD_RECOGNITION
    | Capability.DECK_VERIFY
    | Capability.HAND_FORMING
    | Capability.VERIFY_ONLY
    | Capability.ELEVATOR
    | Capability.HOST_START
    | Capability.LIVE_CARD_IDS
    | Capability.DECK_COMMITMENT
    | Capability.FW_CHALLENGE
    | Capability.TIME_SYNC
)

#: Deck-check faults the control channel can inject into the next shuffle.
DECK_CHECK_FAULTS = (
    "ok",
    "short",
    "extra",
    "duplicate",
    "foreign",
    "unreadable",
    "missing",
    "wrong_profile",
)


class Delivered(NamedTuple):
    """A group that left the tray: what the dealer now holds, and where it is meant to go."""

    group: int
    purpose: int
    seat: int
    cards: bytes


class HostGroup(NamedTuple):
    """A group the host asked for, waiting in a gated tray for the dealer to take it."""

    shuffle_id: int
    group: int
    size: int
    purpose: int
    seat: int


def _check_group(deck: _Deck, count: int, purpose: int, seat: int) -> None:
    """Refuse a group the deck cannot give (BAD_ARG), as DISPENSE_GROUP does."""
    remaining = len(deck.order) - deck.position
    if not 1 <= count <= remaining:
        raise RefusedError(ErrorCode.BAD_ARG, f"{count} cards asked, {remaining} left")
    if not 1 <= purpose <= 7 or seat > 10:
        raise RefusedError(ErrorCode.BAD_ARG, "bad purpose or seat")


@dataclass
class DeviceConfig:
    """What the simulated device is and how it behaves."""

    firmware: bytes
    vendor: str = "tablectl"
    model: str = "TSP-SIM-1"
    serial: str = "SIM-0001"
    hw_rev: str = "A"
    fw_version: str = "1.0.0"
    caps: Capability = DEFAULT_CAPS
    seed: int | None = None
    order: tuple[Card, ...] | None = None
    shuffle_time: float = 0.2
    #: shuffle badly on purpose (simulators/shuffler/bias.py): what the randomness audit catches
    bias: Bias | None = None


@dataclass
class _Fault:
    fault_id: int
    code: int
    severity: Severity
    flags: FaultFlag
    card_index: int
    detail: str

    def event(self) -> FaultRaised:
        return FaultRaised(
            self.fault_id, self.code, self.severity, self.flags, self.card_index, self.detail
        )


@dataclass
class _Deck:
    shuffle_id: int
    order: bytes
    salt: bytes
    ok: bool = False
    position: int = 0
    groups: set[int] = field(default_factory=set)
    # the groups that left the tray, in order (the dealer's hands put them on the table)
    delivered: list[Delivered] = field(default_factory=list)


class ShufflerModel:
    """A hand-forming, card-recognising shuffler speaking the TSP/1 shuffler message set."""

    #: What it asks of its link, connected by its wire device (unconnected: nothing queued, the
    #: host there, no counts).
    link_counters: Callable[[], dict[str, int]]
    queued_events: Callable[[], int]
    host_lost: Callable[[float], bool]

    def __init__(self, config: DeviceConfig, rng: random.Random, now: float) -> None:
        self.config = config
        self.rng = rng
        self.firmware = config.firmware
        self.reported_hash = hashlib.sha256(config.firmware).digest()
        self.challenge_mode = "answer"  # or "refuse" (cannot answer FW_CHALLENGE)
        self.boot_id = rng.getrandbits(32)
        self.booted_at = now
        self.clock_offset_ms = rng.randint(-(10**7), 10**7)
        self.state = DeviceState.IDLE
        self.flags = (
            StatusFlag.RNG_SELFTEST_OK | StatusFlag.FW_SELFTEST_OK | StatusFlag.CONFIG_PENDING
        )
        self.config_in_force = SetConfig()
        self.counters = {f.name: 0 for f in fields(Counters)}
        self.faults: dict[int, _Fault] = {}
        self._fault_ids = 0
        self.shuffle_id = rng.randint(1000, 9000)
        self.deck: _Deck | None = None
        self.retired: dict[int, _Deck] = {}
        self.shuffles_done = 0
        self.taken_back: bytes | None = None  # the last deck a biased shuffler shuffled
        self.shuffle_due: float | None = None
        self.next_check = "ok"
        self.next_count: int | None = None
        # A tray sensor paces a host-paced table: a host's group is delivered when the dealer
        # takes it (``deliver``), not when it is asked for.
        self.tray_gated = False
        self.queued: list[HostGroup] = []
        self.tamper_reveal = False
        self._events: list[tuple[int, bytes]] = []
        self.link_counters = dict
        self.queued_events = lambda: 0
        self.host_lost = lambda now: False

    # ------------------------------------------------------------------ outputs

    def take_events(self) -> list[tuple[int, bytes]]:
        """Events raised since the last call, in order: (type, payload)."""
        events, self._events = self._events, []
        return events

    def next_deadline(self) -> float | None:
        """When :meth:`tick` next has something to do."""
        return self.shuffle_due

    def tick(self, now: float) -> None:
        """Finish a shuffle whose time has come."""
        if self.shuffle_due is not None and now >= self.shuffle_due:
            self.shuffle_due = None
            self._finish_shuffle()

    # ------------------------------------------------------------------ requests

    def handle(self, msg_type: int, payload: bytes, now: float) -> tuple[int, bytes]:
        """Execute one request; return the response type and payload (ERROR on refusal)."""
        handler = self._handlers().get(msg_type)
        if handler is None:
            return MsgType.ERROR, ErrorResponse(ErrorCode.NOT_SUPPORTED, "unknown type").encode()
        try:
            return msg_type, handler(payload, now)
        except RefusedError as refusal:
            answer = ErrorResponse(refusal.code or ErrorCode.BAD_STATE, refusal.detail)
            return MsgType.ERROR, answer.encode()
        except PayloadError as exc:
            return MsgType.ERROR, ErrorResponse(ErrorCode.BAD_LENGTH, str(exc)[:200]).encode()

    def _handlers(self) -> dict[int, Callable[[bytes, float], bytes]]:
        return {
            MsgType.IDENTIFY: self._identify,
            MsgType.GET_STATUS: self._status,
            MsgType.PING: self._status,
            MsgType.SET_CONFIG: self._set_config,
            MsgType.START_SHUFFLE: self._start_shuffle,
            MsgType.PRESENT: self._present,
            MsgType.DISPENSE_GROUP: self._dispense,
            MsgType.CLEAR_FAULT: self._clear_fault,
            MsgType.ABORT: self._abort,
            MsgType.TIME_SYNC: self._time_sync,
            MsgType.REVEAL_DECK: self._reveal,
            MsgType.GET_COUNTERS: self._get_counters,
            MsgType.FW_CHALLENGE: self._challenge,
            MsgType.GET_FAULTS: self._get_faults,
        }

    def _identify(self, payload: bytes, now: float) -> bytes:
        c = self.config
        return Identity(
            1, 1, c.vendor, c.model, c.serial, c.hw_rev, c.fw_version,
            self.reported_hash, self.boot_id, c.caps, 1024,
        ).encode()  # fmt: skip

    def status(self, now: float) -> Status:
        """What GET_STATUS and PING report."""
        flags = self.flags | (StatusFlag.HOST_LOST if self.host_lost(now) else StatusFlag.NONE)
        deck = self.deck
        cards_out = 0 if deck is None or not deck.ok else len(deck.order) - deck.position
        return Status(
            self.state,
            flags,
            len(self.faults),
            self.shuffle_id,
            0,
            cards_out,
            int((now - self.booted_at) * 1000) & 0xFFFFFFFF,
            self.boot_id,
            min(255, self.queued_events()),
        )

    def _status(self, payload: bytes, now: float) -> bytes:
        return self.status(now).encode()

    def _set_config(self, payload: bytes, now: float) -> bytes:
        config = SetConfig.decode(payload)
        if config.id_policy not in (IdPolicy.WITHHOLD, IdPolicy.LIVE):
            raise RefusedError(ErrorCode.BAD_ARG, f"id_policy {config.id_policy}")
        if config.id_policy == IdPolicy.LIVE and not self.config.caps & Capability.LIVE_CARD_IDS:
            raise RefusedError(ErrorCode.DENIED_BY_POLICY, "live card identities are not enabled")
        if config.deck_size != 52 or config.jokers:
            raise RefusedError(ErrorCode.NOT_SUPPORTED, "only a 52-card deck without jokers")
        if any(not 1 <= step.purpose <= 7 or step.count == 0 for step in config.plan):
            raise RefusedError(ErrorCode.BAD_ARG, "bad dispense plan")
        self.config_in_force = config
        self.flags &= ~StatusFlag.CONFIG_PENDING
        return b"\x00" + config.encode()

    def _start_shuffle(self, payload: bytes, now: float) -> bytes:
        request = StartShuffle.decode(payload)
        if request.mode not in (0, 1):
            raise RefusedError(ErrorCode.NOT_SUPPORTED, f"mode {request.mode}")
        shuffle_id = self.start_shuffle(now, request.mode, request.host_ref, Trigger.HOST)
        return StartShuffleResult(True, shuffle_id).encode()

    def start_shuffle(
        self,
        now: float,
        mode: int,
        host_ref: int,
        trigger: Trigger,
        stub: tuple[bytes, set[int]] | None = None,
    ) -> int:
        """Start shuffling the deck in the input (host request or the dealer's button);
        ``stub`` is the order and the groups of a stub reshuffle instead of a new deck."""
        if self.state is DeviceState.SHUFFLING:
            raise RefusedError(ErrorCode.BUSY, "a shuffle is in progress")
        self._refuse_on_faults(blocking=Severity.WARN)
        self._retire()
        self.shuffle_id = (self.shuffle_id + 1) & 0xFFFFFFFF
        if stub is not None:
            order, groups = stub
            self.deck = _Deck(self.shuffle_id, order, self.rng.randbytes(16), groups=groups)
        else:
            self.deck = _Deck(self.shuffle_id, self._next_order(), self.rng.randbytes(16))
        self.shuffle_due = now + self.config.shuffle_time
        self.counters["shuffles"] += 1
        self._emit(ShuffleStarted(self.shuffle_id, mode, host_ref, trigger))
        self._set_state(DeviceState.SHUFFLING)
        return self.shuffle_id

    def _present(self, payload: bytes, now: float) -> bytes:
        deck = self.deck
        if deck is None or not deck.ok or self.state not in (DeviceState.READY,):
            raise RefusedError(ErrorCode.BAD_STATE, "no shuffled deck to present")
        self.flags |= StatusFlag.ELEVATOR_UP
        self._emit(DeckMoved(deck.shuffle_id, DeckMove.PRESENTED))
        self._set_state(DeviceState.PRESENTED)
        return Result(1).encode()

    def _dispense(self, payload: bytes, now: float) -> bytes:
        request = DispenseGroup.decode(payload)
        deck = self._dispensable(request.shuffle_id)
        if request.group in deck.groups:
            raise RefusedError(
                ErrorCode.ALREADY_DONE, f"group {request.group} was already dispensed"
            )
        count = request.count or self._planned_count(request.group)
        if self.tray_gated:
            _check_group(deck, count, request.purpose, request.seat)
            deck.groups.add(request.group)  # taken: the same number is refused from now on
            queued = HostGroup(deck.shuffle_id, request.group, count, request.purpose, request.seat)
            self.queued.append(queued)
            return Result(1).encode()
        self._deliver(deck, request.group, count, request.purpose, request.seat)
        return Result(1).encode()

    def deliver(self, count: int | None = None) -> tuple[int, int, bytes]:
        """The dealer takes the oldest group the host asked for (a gated tray).

        ``count`` delivers that many cards instead of the number asked (a misfeed). Returns
        ``(shuffle_id, group, card codes)``, as :meth:`dealer_dispense` does.
        """
        if not self.queued:
            raise RefusedError(ErrorCode.BAD_STATE, "the host asked for no group")
        wanted = self.queued[0]
        deck = self._dispensable(wanted.shuffle_id)
        self.queued.pop(0)
        cards = self._deliver(deck, wanted.group, count or wanted.size, wanted.purpose, wanted.seat)
        return deck.shuffle_id, wanted.group, cards

    def dealer_dispense(self, purpose: int, seat: int, count: int) -> tuple[int, int, bytes]:
        """The dealer delivers the next group from the keypad (a dealer-paced table).

        The device numbers the group itself (one more than the deck's highest group) and reports
        it as it would a host's DISPENSE_GROUP. Returns ``(shuffle_id, group, card codes)``: the
        cards the dealer now holds, whatever the identity policy on the wire.
        """
        deck = self._dispensable(self.deck.shuffle_id if self.deck is not None else None)
        group = max(deck.groups, default=0) + 1
        return deck.shuffle_id, group, self._deliver(deck, group, count, purpose, seat)

    def delivered(self) -> tuple[int | None, list[Delivered]]:
        """The deck in the tray (None: none) and the groups that left it so far, in order."""
        deck = self.deck
        if deck is None:
            return None, []
        return deck.shuffle_id, list(deck.delivered)

    def _dispensable(self, shuffle_id: int | None) -> _Deck:
        deck = self.deck
        if deck is None or shuffle_id != deck.shuffle_id:
            raise RefusedError(ErrorCode.BAD_ARG, f"shuffle {shuffle_id} is not in the tray")
        if not deck.ok or self.state not in (
            DeviceState.READY,
            DeviceState.PRESENTED,
            DeviceState.DISPENSING,
        ):
            raise RefusedError(ErrorCode.BAD_STATE, f"cannot dispense in state {self.state.name}")
        self._refuse_on_faults(blocking=Severity.WARN)
        return deck

    def _deliver(self, deck: _Deck, group: int, count: int, purpose: int, seat: int) -> bytes:
        """Take ``count`` cards off the deck as ``group`` and report them; return their codes."""
        _check_group(deck, count, purpose, seat)
        cards = deck.order[deck.position : deck.position + count]
        deck.position += count
        deck.groups.add(group)
        deck.delivered.append(Delivered(group, purpose, seat, cards))
        self.counters["cards"] += count
        shown = cards
        if self.config_in_force.id_policy != IdPolicy.LIVE:
            shown = bytes([CODE_WITHHELD]) * count
        self._set_state(DeviceState.DISPENSING)
        self._emit(
            GroupDispensedEvent(
                deck.shuffle_id, group, purpose, seat, shown, len(deck.order) - deck.position
            )
        )
        return cards

    def _planned_count(self, group: int) -> int:
        plan: tuple[PlanStep, ...] = self.config_in_force.plan
        if not 1 <= group <= len(plan):
            raise RefusedError(ErrorCode.BAD_ARG, f"count 0 and no plan entry for group {group}")
        return plan[group - 1].count

    def _clear_fault(self, payload: bytes, now: float) -> bytes:
        request = ClearFault.decode(payload)
        return Result(self.clear_faults(request.fault_id, by=ClearedBy.HOST)).encode()

    def _abort(self, payload: bytes, now: float) -> bytes:
        if self.state is DeviceState.SHUFFLING and self.deck is not None:
            self.shuffle_due = None
            self._complete(ShuffleResult.ABORTED)
        self._retire()
        self._set_state(DeviceState.IDLE)
        return Result(1).encode()

    def _time_sync(self, payload: bytes, now: float) -> bytes:
        request = TimeSync.decode(payload)
        if not self.config.caps & Capability.TIME_SYNC:
            raise RefusedError(ErrorCode.NOT_SUPPORTED, "no settable clock")
        before = self.device_ms(now)
        self.clock_offset_ms = request.unix_ms - int(now * 1000)
        return TimeSyncResult(before).encode()

    def device_ms(self, now: float) -> int:
        """The device's wall clock in Unix milliseconds."""
        return max(0, int(now * 1000) + self.clock_offset_ms)

    def _reveal(self, payload: bytes, now: float) -> bytes:
        request = RevealDeck.decode(payload)
        if self.deck is not None and request.shuffle_id == self.deck.shuffle_id:
            raise RefusedError(ErrorCode.BAD_STATE, "that deck can still be in play")
        deck = self.retired.get(request.shuffle_id)
        if deck is None:
            raise RefusedError(ErrorCode.BAD_ARG, f"no retired deck {request.shuffle_id}")
        order = deck.order
        if self.tamper_reveal:
            # A compromised device: the revealed order is not the one it committed to.
            self.tamper_reveal = False
            order = order[1:2] + order[:1] + order[2:]
        return DeckReveal(deck.shuffle_id, deck.salt, order).encode()

    def _get_counters(self, payload: bytes, now: float) -> bytes:
        link = self.link_counters()
        counters = {**self.counters, **{k: v for k, v in link.items() if k in self.counters}}
        return Counters(**counters).encode()

    def _challenge(self, payload: bytes, now: float) -> bytes:
        request = FwChallenge.decode(payload)
        if self.challenge_mode == "refuse" or not self.config.caps & Capability.FW_CHALLENGE:
            raise RefusedError(ErrorCode.NOT_SUPPORTED, "firmware challenge unavailable")
        mac = hmac.new(request.nonce, self.firmware, hashlib.sha256).digest()
        return ChallengeResult(1, mac).encode()

    def _get_faults(self, payload: bytes, now: float) -> bytes:
        return FaultList(tuple(fault.event() for fault in self.faults.values())).encode()

    # ------------------------------------------------------------------ physical world

    def raise_fault(
        self,
        code: int,
        severity: Severity,
        flags: FaultFlag = FaultFlag.RECOVERABLE,
        detail: str = "",
        card_index: int = 0xFF,
    ) -> int:
        """Raise a fault; a fault of severity ERROR or worse stops a shuffle and the device."""
        self._fault_ids = self._fault_ids % 0xFFFE + 1
        if severity >= Severity.ERROR and self.state is DeviceState.SHUFFLING:
            flags |= FaultFlag.SHUFFLE_ABORTED
        fault = _Fault(self._fault_ids, code, severity, flags, card_index, detail)
        self.faults[fault.fault_id] = fault
        self._emit(fault.event())
        if code == FAULTS.code("JAM_INPUT") or code >> 8 == 0x01:
            self.counters["jams"] += 1
        if severity >= Severity.ERROR:
            if self.state is DeviceState.SHUFFLING:
                self.shuffle_due = None
                self._complete(ShuffleResult.FAULT)
            self._set_state(DeviceState.FAULT)
        return fault.fault_id

    def clear_faults(self, fault_id: int = 0xFFFF, by: ClearedBy = ClearedBy.AUTO) -> int:
        """Clear one fault or (0xFFFF) every clearable one; return how many were cleared."""
        chosen = [
            f
            for f in self.faults.values()
            if (fault_id in (0xFFFF, f.fault_id))
            and (f.flags & FaultFlag.RECOVERABLE or by is not ClearedBy.HOST)
            and not (f.code == FAULTS.code("LID_OPEN") and self.flags & StatusFlag.LID_OPEN)
        ]
        for fault in chosen:
            del self.faults[fault.fault_id]
            self._emit(FaultCleared(fault.fault_id, fault.code, by))
        if chosen and self.state is DeviceState.FAULT and not self._blocking_faults():
            deck = self.deck
            ready = deck is not None and deck.ok and deck.position < len(deck.order)
            self._set_state(DeviceState.READY if ready else DeviceState.IDLE)
        return len(chosen)

    def clear_code(self, code: int, by: ClearedBy) -> int:
        """Clear every active fault with ``code``."""
        ids = [f.fault_id for f in self.faults.values() if f.code == code]
        return sum(self.clear_faults(fault_id, by) for fault_id in ids)

    def lid(self, is_open: bool) -> None:
        """The dealer opens or closes the lid (LID_OPEN is raised and cleared by itself)."""
        lid_code = FAULTS.code("LID_OPEN")
        if is_open and not self.flags & StatusFlag.LID_OPEN:
            self.flags |= StatusFlag.LID_OPEN
            self.counters["lid_opens"] += 1
            self.raise_fault(lid_code, Severity.WARN, FaultFlag.RECOVERABLE, "lid opened")
        elif not is_open and self.flags & StatusFlag.LID_OPEN:
            self.flags &= ~StatusFlag.LID_OPEN
            self.clear_code(lid_code, ClearedBy.AUTO)

    def power_loss(self, now: float) -> None:
        """Power is cut and restored: a new boot id, volatile state lost, queued events kept."""
        interrupted = self.state is DeviceState.SHUFFLING
        self.boot_id = self.rng.getrandbits(32)
        self.booted_at = now
        self.counters["power_cycles"] += 1
        self.shuffle_due = None
        self._retire()
        self.faults.clear()
        self.state = DeviceState.IDLE
        self.flags = (
            StatusFlag.RNG_SELFTEST_OK | StatusFlag.FW_SELFTEST_OK | StatusFlag.CONFIG_PENDING
        ) | (self.flags & StatusFlag.LID_OPEN)
        self.config_in_force = SetConfig()
        if interrupted:
            self.raise_fault(
                FAULTS.code("POWER_LOSS_DURING_SHUFFLE"), Severity.ERROR,
                FaultFlag.RECOVERABLE | FaultFlag.SHUFFLE_ABORTED, "power lost while shuffling",
            )  # fmt: skip

    def reshuffle_stub(self, added: bytes, seed: int, now: float) -> int:
        """The dealer puts cards back into the shuffler and reshuffles them with the stub.

        The stub is what is left of the last deck (in the tray, or retired by a power cut);
        ``added`` are the card codes put back. They are shuffled with ``random.Random(seed)``
        into a deck of that many cards, which keeps the last deck's group numbers: it is the
        same deck, and a group number is still dispensed once. Returns the new shuffle id.
        """
        source = self.deck or (self.retired[next(reversed(self.retired))] if self.retired else None)
        stub = source.order[source.position :] if source is not None else b""
        cards = list(stub + added)
        random.Random(seed).shuffle(cards)
        groups = set(source.groups) if source is not None else set()
        return self.start_shuffle(now, 0, 0, Trigger.DEALER, stub=(bytes(cards), groups))

    def set_firmware(self, image: bytes, report: bytes | None = None) -> None:
        """Flash another image; ``report`` is the hash a lying device claims instead."""
        self.firmware = image
        self.reported_hash = report or hashlib.sha256(image).digest()

    def press(self, button: int, now: float) -> None:
        """The dealer presses a button on the device."""
        self._emit(OperatorInput(button))
        if button == 1:
            self.start_shuffle(now, 0, 0, Trigger.DEALER)

    def burst(self, count: int) -> None:
        """Raise and clear ``count`` tray warnings: a stream of ordered events for link tests."""
        code = FAULTS.code("TRAY_NOT_SEATED")
        for _ in range(count):
            fault_id = self.raise_fault(code, Severity.WARN, FaultFlag.RECOVERABLE, "tray")
            self.clear_faults(fault_id, ClearedBy.AUTO)

    # ------------------------------------------------------------------ internals

    def _emit(self, event: object) -> None:
        encode = getattr(event, "encode")  # noqa: B009 - every event class has one
        self._events.append((int(getattr(event, "TYPE")), encode()))  # noqa: B009

    def _set_state(self, state: DeviceState) -> None:
        if state is self.state:
            return
        previous, self.state = self.state, state
        self._emit(StateChanged(state, previous, int(self.flags), self.shuffle_id))

    def _blocking_faults(self, blocking: Severity = Severity.ERROR) -> list[_Fault]:
        return [f for f in self.faults.values() if f.severity >= blocking]

    def _refuse_on_faults(self, blocking: Severity) -> None:
        active = self._blocking_faults(blocking)
        if active:
            raise RefusedError(ErrorCode.FAULT_ACTIVE, f"{len(active)} active fault(s)")

    def _next_order(self) -> bytes:
        config = self.config
        if config.order is None and config.bias is not None:
            # a biased shuffle starts from the deck taken back (the last one shuffled)
            seed = config.seed
            rng = self.rng if seed is None else random.Random(seed + self.shuffles_done)
            previous = self.taken_back or bytes(range(len(STANDARD_DECK)))
            self.taken_back = bytes(biased_order(previous, config.bias, rng))
            self.shuffles_done += 1
            return self.taken_back
        if config.order is not None:
            cards = deck_order(order=config.order)
        elif config.seed is not None:
            cards = deck_order(seed=config.seed + self.shuffles_done)
        else:
            cards = deck_order(seed=self.rng.getrandbits(64))
        self.shuffles_done += 1
        return bytes(card_code(card) for card in cards)

    def _retire(self) -> None:
        self.queued.clear()  # a host's groups of a deck that is gone are never delivered
        if self.deck is not None:
            self.retired[self.deck.shuffle_id] = self.deck
            while len(self.retired) > 8:
                del self.retired[next(iter(self.retired))]
            self.deck = None
        self.flags &= ~(StatusFlag.OUTPUT_PRESENT | StatusFlag.ELEVATOR_UP)

    def _finish_shuffle(self) -> None:
        deck = self.deck
        if deck is None:
            return
        check = self._deck_check(deck)
        self._emit(check)
        deck.ok = check.verdict == DeckVerdict.OK
        if deck.ok:
            self.counters["ok"] += 1
            self.flags |= StatusFlag.OUTPUT_PRESENT
            self._complete(ShuffleResult.OK)
            self._set_state(DeviceState.READY)
        else:
            self._complete(ShuffleResult.DECK_CHECK_FAILED)
            self._set_state(DeviceState.IDLE)

    def _complete(self, result: ShuffleResult) -> None:
        deck = self.deck
        assert deck is not None
        if result is not ShuffleResult.OK:
            self.counters["failed"] += 1
        ok = result is ShuffleResult.OK
        commitment = deck_commitment(deck.shuffle_id, deck.salt, deck.order) if ok else bytes(32)
        duration = int(self.config.shuffle_time * 1000)
        count = len(deck.order) if ok else 0
        self._emit(ShuffleComplete(deck.shuffle_id, result, duration, count, commitment))

    def _deck_check(self, deck: _Deck) -> DeckCheck:
        kind, self.next_check = self.next_check, "ok"
        counted, self.next_count = self.next_count, None
        if counted is not None and counted != len(deck.order):
            self.raise_fault(
                FAULTS.code("COUNT_MISMATCH"), Severity.WARN, FaultFlag.OPERATOR_ACTION,
                f"counted {counted} cards",
            )  # fmt: skip
        check = deck_check(deck.shuffle_id, deck.order, kind, counted)
        if check.unreadable:
            self.counters["misreads"] += check.unreadable
        return check

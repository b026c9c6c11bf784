"""The TSP/1 shuffler driver (``tsp-shuffler``): asyncio-native, over pyserial.

One :class:`ShufflerDriver` per configured shuffler, a TSP/1 device
(:class:`~drivers.tsp.driver.TspDriver`). Each connection identifies the device, refuses it
unless it is approved (``config/approved-devices.toml``), configures it, syncs its clock and then
heartbeats it; the supervision loop (:mod:`drivers.supervisor`) reconnects. Device events become
the core's inputs and go to the sink in order, and only once the device is approved; an event is
acknowledged to the device only after the sink has taken it, so nothing is lost on the way.

The commands (:meth:`start_shuffle`, :meth:`dispense_group`, …) raise
:class:`~drivers.errors.DeviceNotReadyError` unless the device is online and approved: a rejected
shuffler is never asked to shuffle or dispense. A DISPENSE_GROUP the device answers
``ALREADY_DONE`` raises :class:`~drivers.errors.AlreadyDoneError`.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from typing import Any, ClassVar

import structlog

from controller.aio import utc_now
from controller.table.inputs import DeckRevealed, Health, Origin, Purpose
from controller.table.plan import DispenseRequest
from drivers.contract import DISPENSE, REVEAL, SHUFFLE, DeviceContext, DeviceStatus
from drivers.errors import DeviceCommandError
from drivers.serial_transport import SerialTransport
from drivers.shuffler.approval import ApprovalList, check_challenge
from drivers.shuffler.codes import (
    PURPOSE_CODES,
    Capability,
    IdPolicy,
    MsgType,
    Profile,
    ShuffleMode,
)
from drivers.shuffler.convert import cards_of, to_input
from drivers.shuffler.events import EVENTS, DeviceEvent
from drivers.shuffler.integrity import DeckLedger
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
from drivers.shuffler.options import ShufflerOptions
from drivers.supervisor import RestartPolicy
from drivers.transport import ByteTransport, DataCallback, LostCallback
from drivers.tsp.client import LinkClient
from drivers.tsp.common import Result
from drivers.tsp.driver import TspDriver
from drivers.tsp.events import UnknownEvent
from drivers.tsp.link import EventReceived

log = structlog.get_logger("tablectl.shuffler")


class ShufflerDriver(TspDriver[Identity, Status]):
    """Drives one TSP/1 shuffler and feeds its events to the core."""

    options_model: ClassVar[type[ShufflerOptions]] = ShufflerOptions
    kind = "shuffler"
    capabilities = frozenset({SHUFFLE, DISPENSE, REVEAL})
    events_wait_for_set_up = True
    approved_when_online = True
    options: ShufflerOptions

    def __init__(
        self,
        device_id: str,
        options: ShufflerOptions,
        context: DeviceContext | None = None,
        *,
        approvals: ApprovalList | None = None,
        on_device_event: Callable[[DeviceEvent | UnknownEvent], None] | None = None,
    ) -> None:
        super().__init__(device_id, options, context, Identity.decode, Status.decode)
        self._on_device_event = on_device_event
        self.approvals = approvals or ApprovalList.load(options.approved_devices)
        self.clock_offset_ms: int | None = None
        self.integrity_alarms: list[str] = []
        self.ledger = DeckLedger()

    def restart_policy(self, default: RestartPolicy) -> RestartPolicy:
        """The backoff and failure count of the options, and how long a reject waits."""
        policy = super().restart_policy(default)
        return dataclasses.replace(policy, rejected_retry=self.options.rejected_retry)

    # ------------------------------------------------------------------ public state

    @property
    def health(self) -> Health | None:
        """The supervisor's verdict (None before the first attempt ended)."""
        return self.supervisor.health if self.supervisor else None

    # ------------------------------------------------------------------ the device contract

    async def query(self) -> DeviceStatus:
        """GET_STATUS: the current deck (the groups it dispensed are not reported)."""
        status = await self.get_status()
        detail = f"state {status.state}, {status.cards_out} cards out, {status.cards_in} in"
        return DeviceStatus(True, status.shuffle_id or None, None, detail)

    async def shuffle(self, ref: int) -> None:
        """START_SHUFFLE with the dispatch id as the host reference."""
        await self.start_shuffle(host_ref=ref & 0xFFFFFFFF)

    async def dispense(self, shuffle_id: int, group: int, request: DispenseRequest) -> None:
        """DISPENSE_GROUP with the host's group number (AlreadyDoneError: it went out before)."""
        await self.dispense_group(shuffle_id, group, request.size, request.purpose, request.seat)

    async def reveal(self, shuffle_id: int) -> None:
        """REVEAL_DECK (checked against the commitment; DeckRevealed goes to the sink)."""
        await self.reveal_deck(shuffle_id)

    def describe(self) -> dict[str, Any]:
        """Identity as the shuffler reported it, and the approval verdict."""
        identity = self.identity
        if identity is None:
            return {"model": None, "approved": None}
        return {
            **identity.describe(),
            "firmware_sha256": identity.fw_sha256.hex(),
            "approved": self.health is not Health.REJECTED if self.health is not None else None,
        }

    # ------------------------------------------------------------------ commands

    async def start_shuffle(
        self, mode: ShuffleMode = ShuffleMode.SHUFFLE, host_ref: int = 0
    ) -> int:
        """START_SHUFFLE; return the new shuffle id (completion comes as events)."""
        payload = await self._call(MsgType.START_SHUFFLE, StartShuffle(mode, host_ref).encode())
        result = StartShuffleResult.decode(payload)
        if not result.accepted:
            raise DeviceCommandError("START_SHUFFLE", 0, "NOT_ACCEPTED", "")
        return result.shuffle_id

    async def present(self) -> None:
        """PRESENT: raise the elevator / open the gate."""
        await self._call(MsgType.PRESENT)

    async def dispense_group(
        self, shuffle_id: int, group: int, count: int, purpose: Purpose, seat: int | None = None
    ) -> None:
        """DISPENSE_GROUP: the next ``count`` cards as group ``group`` (count 0: per plan)."""
        request = DispenseGroup(shuffle_id, group, count, PURPOSE_CODES[purpose], seat or 0)
        result = Result.decode(await self._call(MsgType.DISPENSE_GROUP, request.encode()))
        if not result.value:
            raise DeviceCommandError("DISPENSE_GROUP", 0, "NOT_ACCEPTED", "")

    async def clear_fault(self, fault_id: int = 0xFFFF) -> int:
        """CLEAR_FAULT; return how many faults the device cleared."""
        payload = await self._call(MsgType.CLEAR_FAULT, ClearFault(fault_id).encode())
        return Result.decode(payload).value

    async def abort(self) -> None:
        """ABORT the shuffle in progress (the deck is retired)."""
        await self._call(MsgType.ABORT)

    async def get_counters(self) -> Counters:
        """GET_COUNTERS: the device's meters and link counters."""
        return Counters.decode(await self._call(MsgType.GET_COUNTERS))

    async def get_faults(self) -> FaultList:
        """GET_FAULTS: the device's active faults."""
        return FaultList.decode(await self._call(MsgType.GET_FAULTS))

    async def time_sync(self) -> int:
        """TIME_SYNC to the host clock; return the device's offset before (ms, device − host)."""
        host_ms = int(time.time() * 1000)
        payload = await self._call(MsgType.TIME_SYNC, TimeSync(host_ms).encode())
        self.clock_offset_ms = TimeSyncResult.decode(payload).device_ms - host_ms
        return self.clock_offset_ms

    async def reveal_deck(self, shuffle_id: int, commitment: str | None = None) -> DeckRevealed:
        """REVEAL_DECK of a retired deck, checked against its SHA-256 commitment.

        ``commitment`` (hex) is the one from ShuffleCompleted; by default the driver uses the one
        it saw. The result also goes to the sink. A mismatch is an integrity alarm.
        """
        payload = await self._call(MsgType.REVEAL_DECK, RevealDeck(shuffle_id).encode())
        reveal = DeckReveal.decode(payload)
        expected = bytes.fromhex(commitment) if commitment else None
        problems = self.ledger.check(shuffle_id, reveal, expected)
        verified = not problems
        for problem in problems:
            self.integrity_alarms.append(problem)
            log.error(
                "integrity.alarm", device=self.device_id, shuffle_id=shuffle_id, problem=problem
            )
        revealed = DeckRevealed(
            utc_now(), self.device_id, shuffle_id, cards_of(reveal.order), verified
        )
        await self._emit(revealed)
        return revealed

    # ------------------------------------------------------------------ one connection

    async def _open(self, on_data: DataCallback, on_lost: LostCallback) -> ByteTransport:
        return await SerialTransport.open(
            self.options.port, on_data, on_lost, self.options.baudrate
        )

    async def _set_up(self, client: LinkClient, identity: Identity) -> None:
        """Approve (or refuse: DeviceRejectedError), then configure."""
        await self._approve(client, identity)
        await self._configure(client, identity)

    async def _go_online(self, identity: Identity) -> str:
        """Sync the clock of a device that has one to set (TIME_SYNC is optional)."""
        if not identity.caps & Capability.TIME_SYNC:
            log.info("shuffler.no_time_sync", device=self.device_id)
            self.clock_offset_ms = None
            return ""
        await self.time_sync()
        return ""

    async def _approve(self, client: LinkClient, identity: Identity) -> None:
        entry = self.approvals.match(identity)
        nonce = os.urandom(16)
        answer: ChallengeResult | None = None
        if identity.caps & Capability.FW_CHALLENGE:
            try:
                payload = await self._request(
                    client, MsgType.FW_CHALLENGE, FwChallenge(nonce).encode()
                )
                answer = ChallengeResult.decode(payload)
            except DeviceCommandError as exc:
                log.warning("shuffler.challenge_refused", device=self.device_id, error=str(exc))
        check_challenge(entry, identity, nonce, answer)
        log.info(
            "shuffler.approved",
            device=self.device_id,
            vendor=identity.vendor,
            model=identity.model,
            serial=identity.serial,
            firmware=identity.fw_version,
            sha256=identity.fw_sha256.hex(),
        )

    async def _configure(self, client: LinkClient, identity: Identity) -> None:
        options = self.options
        live = options.id_policy == "live" and bool(identity.caps & Capability.LIVE_CARD_IDS)
        if options.id_policy == "live" and not live:
            log.warning("shuffler.live_ids_unavailable", device=self.device_id)
        config = SetConfig(
            Profile.HAND_FORMING if options.profile == "hand_forming" else Profile.POKER_DECK,
            52,
            0,
            IdPolicy.LIVE if live else IdPolicy.WITHHOLD,
            tuple(PlanStep(g.count, PURPOSE_CODES[g.purpose]) for g in options.dispense_plan),
        )
        reply = await self._request(client, MsgType.SET_CONFIG, config.encode())
        if not reply or reply[0] != 0:
            raise DeviceCommandError("SET_CONFIG", reply[0] if reply else 0, "NOT_APPLIED", "")

    # ------------------------------------------------------------------ events

    async def _on_event(self, item: EventReceived) -> None:
        event = self._decode_event(EVENTS, item)
        if event is None:
            return
        if self._on_device_event is not None:
            self._on_device_event(event)
        if isinstance(event, UnknownEvent):
            log.warning("shuffler.unknown_event", device=self.device_id, type=event.type)
            return
        self.ledger.observe(event)
        core_input = to_input(event, self.device_id, utc_now())
        if core_input is not None:
            # the event's own identity: a copy resent after a host restart is recognised by it
            origin = Origin(item.boot_id, item.frame.seq)
            await self._emit(dataclasses.replace(core_input, origin=origin))

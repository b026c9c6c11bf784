"""The shuffler and the readers: approval, faults, doors, power, the controller's own restart.

DE-1544a-APPR / GLI29-PROG (Del. § 1544(a) "Board-approved"; GLI-29): an unapproved shuffler, or
one whose program fails verification, is refused: the table cannot deal. GLI29-ERR-JAM: a jam
while shuffling holds the table until a new shuffle passes its deck check. SHF-MID-HAND (AU-MB
§ 12; La. § III-3106): a shuffler failure after the hand's first group is held: a misdeal before
the deal is complete and before the cutoff, otherwise the board comes from the stub by hand.
SHF-DOOR (GLI-11/22): a door opened during a hand is an integrity alarm and a hold; the deck is
counted again before the next dispense. SHF-POWER: a shuffler that lost power must count its deck
again before the hand goes on. CTRL-POWER: the controller restarted and rebuilt its state from
the journal; the hand resumes.
"""

from __future__ import annotations

from controller.rules.holds import raise_hold
from controller.rules.ids import Rule
from controller.rules.misdeal import cutoff_passed
from controller.table.context import Context
from controller.table.event_types import (
    DeviceStatus,
    HandResume,
    HoldEvidence,
    IntegrityAlarm,
    IrregularityDetected,
)
from controller.table.events import Severity
from controller.table.inputs import (
    ControllerRestarted,
    DeviceFault,
    DeviceFaultCleared,
    DeviceHealthChanged,
    DeviceRebooted,
    Health,
)
from controller.table.state import DeckStatus, DeviceState, HandState, Hold, Ruling

DOOR_FAULTS = frozenset({"LID_OPEN", "SERVICE_COVER_OPEN"})
PROGRAM_FAULTS = frozenset({"FIRMWARE_INTEGRITY_FAIL", "RNG_HEALTH_FAIL"})
JAMS = frozenset({"JAM_INPUT", "JAM_PATH", "JAM_OUTPUT", "MISFEED"})


def _device(ctx: Context, name: str) -> DeviceState:
    return ctx.table.devices.get(name, DeviceState())


def _set(ctx: Context, name: str, state: DeviceState) -> None:
    ctx.table.devices = {**ctx.table.devices, name: state}


def is_shuffler(ctx: Context, name: str) -> bool:
    """Whether ``name`` is the shuffler (by what it said it is, or by its name)."""
    kind = _device(ctx, name).kind
    return kind == "shuffler" or (not kind and "shuffler" in name)


def blocked(ctx: Context) -> str | None:
    """Why the table cannot deal from its shuffler now, if it cannot (DE-1544a-APPR)."""
    for name, state in ctx.table.devices.items():
        if not is_shuffler(ctx, name):
            continue
        if state.approved is False or state.health == Health.REJECTED:
            return f"the shuffler {name} is not approved (DE-1544a-APPR)"
        if state.faults & PROGRAM_FAULTS:
            return f"the shuffler {name} failed program verification (GLI29-PROG)"
    return None


def health_changed(ctx: Context, ev: DeviceHealthChanged) -> None:
    """A supervisor's verdict on its device."""
    old = _device(ctx, ev.device)
    state = DeviceState(
        ev.kind or old.kind,
        ev.health.value,
        ev.approved if ev.approved is not None else old.approved,
        old.faults,
    )
    _set(ctx, ev.device, state)
    status = DeviceStatus(
        ev.device,
        health=ev.health.value,
        kind=ev.kind or None,
        approved=ev.approved,
        detail=ev.detail or None,
    )
    refused = ev.health is Health.REJECTED or ev.approved is False
    ctx.emit(
        status,
        (Rule.DE_1544A_APPR,) if refused else (),
        severity=Severity.CRITICAL if refused else Severity.INFO,
    )
    if refused:
        ctx.emit(
            IntegrityAlarm("device not approved: the table cannot deal", device=ev.device),
            (Rule.DE_1544A_APPR, Rule.GLI29_PROG),
            severity=Severity.CRITICAL,
        )


def fault(ctx: Context, ev: DeviceFault) -> None:
    """A device raised a fault."""
    old = _device(ctx, ev.device)
    _set(ctx, ev.device, DeviceState(old.kind, old.health, old.approved, old.faults | {ev.code}))
    severe = ev.severity in ("error", "critical")
    rules: tuple[Rule, ...] = ()
    if ev.code in PROGRAM_FAULTS:
        rules = (Rule.GLI29_PROG, Rule.DE_1544A_APPR)
    ctx.emit(
        DeviceStatus(ev.device, fault=ev.code, fault_id=ev.fault_id, detail=ev.detail),
        rules,
        severity=Severity.WARN if not severe else Severity.CRITICAL if rules else Severity.HOLD,
    )
    if not is_shuffler(ctx, ev.device) and ev.code not in DOOR_FAULTS | JAMS:
        return
    hand = ctx.table.hand
    if ev.code in DOOR_FAULTS:
        _door(ctx, hand, ev)
    elif hand is None or hand.deal.shuffle_id is None:
        if ev.code in JAMS or severe:
            # GLI29-ERR-JAM: nothing is out yet: the deck must be shuffled and counted again
            ctx.table.deck = DeckStatus()
            if hand is not None:
                raise_hold(
                    ctx,
                    hand,
                    Rule.GLI29_ERR_JAM,
                    Ruling.CONTINUE,
                    f"shuffler fault {ev.code} before the deal: reshuffle and count the deck",
                )
    elif severe or ev.code in JAMS:
        _mid_hand(ctx, hand, ev.code)


def _door(ctx: Context, hand: HandState | None, ev: DeviceFault) -> None:
    if hand is None:
        ctx.table.deck = DeckStatus()  # re-verify before the next hand
        return
    ctx.emit(
        IntegrityAlarm(f"{ev.code} during a hand", device=ev.device),
        (Rule.SHF_DOOR,),
        severity=Severity.CRITICAL,
    )
    hand.edit_deal().recheck = f"{ev.code} during the hand"
    raise_hold(
        ctx,
        hand,
        Rule.SHF_DOOR,
        Ruling.CONTINUE,
        f"{ev.code} during a hand: close it and count the deck",
    )


def _mid_hand(ctx: Context, hand: HandState, code: str) -> None:
    """SHF-MID-HAND: a misdeal if still early enough, else the board by hand from the stub."""
    early = not hand.deal.deal_done and not cutoff_passed(hand, ctx.table.profile)
    raise_hold(
        ctx,
        hand,
        Rule.SHF_MID_HAND,
        Ruling.MISDEAL if early else Ruling.MANUAL_BOARD,
        f"shuffler fault {code} during the hand",
        evidence=HoldEvidence(code=code, groups=hand.deal.hole_groups),
    )


def manual_board_ruling(ctx: Context, hand: HandState, hold: Hold) -> None:
    """Continue with the board dealt by hand from the stub; every card still read by RFID."""
    hand.edit_deal().manual_board = True
    ctx.emit(IrregularityDetected("the board is dealt by hand", rule=hold.rule.value), (hold.rule,))


def fault_cleared(ctx: Context, ev: DeviceFaultCleared) -> None:
    """A device cleared a fault."""
    old = _device(ctx, ev.device)
    _set(ctx, ev.device, DeviceState(old.kind, old.health, old.approved, old.faults - {ev.code}))
    ctx.emit(DeviceStatus(ev.device, cleared=ev.code, fault_id=ev.fault_id))


def rebooted(ctx: Context, ev: DeviceRebooted) -> None:
    """SHF-POWER: a device came back with a new boot id."""
    old = _device(ctx, ev.device)
    _set(ctx, ev.device, DeviceState(old.kind, old.health, old.approved, frozenset()))
    ctx.emit(DeviceStatus(ev.device, rebooted=True, boot_id=ev.boot_id), (Rule.SHF_POWER,))
    if not is_shuffler(ctx, ev.device):
        return
    hand = ctx.table.hand
    if hand is None or hand.deal.shuffle_id is None:
        ctx.table.deck = DeckStatus()
        return
    hand.edit_deal().recheck = "the shuffler lost power"
    raise_hold(
        ctx,
        hand,
        Rule.SHF_POWER,
        Ruling.CONTINUE,
        "the shuffler lost power: it must count its deck before the hand goes on",
    )


def controller_restarted(ctx: Context, ev: ControllerRestarted) -> None:
    """CTRL-POWER: the controller is back with its state rebuilt from the journal."""
    hand = ctx.table.hand
    if hand is not None:
        resumed = HandResume(reason="controller restarted", phase=hand.phase.value)
        ctx.emit(resumed, (Rule.CTRL_POWER,))

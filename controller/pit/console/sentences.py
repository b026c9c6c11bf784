"""Each table event in one plain sentence, for the console's event lists: "Seat 3 raises to 40",
"Flop: A♠ K♦ 7♣", "Hold SEAT-COUNT: …", "Seat 2 wins 120 from the main pot".

One function per event type (:data:`SENTENCES`, every type of
``controller/table/event_types/``: a test enumerates them, so a new type without its sentence
fails). Each reads the event's typed record (:func:`controller.table.decoder.decode`); an event
whose data does not fit its type, or of a type this console does not know, says so in words and
its raw envelope is one click away on the page.

Card identities other than the board's (a hole card delivered, a card exposed, a hand tabled or
shown) are written only for a viewer who sees cards (``cards``: surveillance); the others read
"a card". The board is public: the table page draws it for everyone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from controller.cards import is_card
from controller.table import event_types as et
from controller.table.events import EventData, Recorded
from controller.table.inputs import ActionKind
from controller.view.svg import card_text

#: What a blind post is called in a sentence.
BLINDS = {
    "small": "the small blind",
    "big": "the big blind",
    "ante": "the ante",
    "dead": "a dead blind",
    "dead_small": "a dead small blind",
    "missed": "a missed blind",
    "straddle": "a straddle",
}


def sentence(record: EventData, *, cards: bool) -> str:
    """The event in one sentence (``cards``: the viewer sees card identities)."""
    if isinstance(record, Recorded):
        return f"{record.type}: not read (its data is not as this console knows it)"
    write = SENTENCES.get(record.TYPE)
    if write is None:
        return f"{record.TYPE}: an event this console has no sentence for"
    # one line, whatever the table's texts held (a reason with line breaks)
    return " ".join(write(record, cards).split())


# ----------------------------------------------------------------------------- words


def card(value: Any, shown: bool = True) -> str:
    """A card with its suit symbol ("A♠"); "a card" when not ``shown``."""
    if not shown:
        return "a card"
    text = str(value)
    return card_text(text) if is_card(text) else text


def cards_of(values: Iterable[Any] | None, shown: bool = True) -> str:
    """Cards separated by spaces; their count when not ``shown``."""
    listed = list(values or ())
    if not shown:
        return f"{len(listed)} card{'s' if len(listed) != 1 else ''}"
    return " ".join(card(c) for c in listed) if listed else "no card"


def seats_of(values: Iterable[int]) -> str:
    listed = list(values)
    if len(listed) == 1:
        return f"seat {listed[0]}"
    return "seats " + ", ".join(str(s) for s in listed)


def chips_by_seat(values: Mapping[str, int] | None) -> str:
    return ", ".join(f"seat {seat}: {chips}" for seat, chips in (values or {}).items())


def street(value: str | None) -> str:
    return (value or "").replace("_", " ").capitalize() or "The street"


def pot_name(index: int, count: int) -> str:
    """Awards list the last side pot first and the main pot last (POT-SEP)."""
    side = count - 1 - index
    return "the main pot" if side == 0 else f"side pot {side}"


def capital(text: str) -> str:
    """The text with its first letter a capital."""
    return text[:1].upper() + text[1:]


def _rule(rule: str | None) -> str:
    return f" ({rule})" if rule else ""


def _reason(reason: str | None) -> str:
    return f": {reason}" if reason else ""


# ----------------------------------------------------------------------------- the hand


def _started(e: et.HandStarted, cards: bool) -> str:
    small, big = e.blinds
    blinds = f"blinds {small}/{big}" + (f", ante {e.ante}" if e.ante else "")
    redeal = f" (the deal again of {e.redeal_of})" if e.redeal_of else ""
    return (
        f"Hand started{redeal}: button seat {e.button}, {blinds}, "
        f"{len(e.seats)} seats dealt in ({', '.join(map(str, e.seats))})"
    )


def _completed(e: et.HandCompleted, cards: bool) -> str:
    moves = f"; the button moves to seat {e.next_button}" if e.next_button is not None else ""
    rake = f"; the house took {e.rake}" if e.rake else ""
    return f"Hand completed{rake}{moves}"


def _time(e: et.HouseTimeCollected, cards: bool) -> str:
    unpaid = f"; not paid by {seats_of(e.unpaid)}" if e.unpaid else ""
    return f"Time collected: {e.total} from {len(e.seats)} seats, paid until {e.paid_until}{unpaid}"


def _missed(e: et.SeatBlindsMissed, cards: bool) -> str:
    owes = {"small": "the small blind", "big": "the big blind", "both": "both blinds"}
    return f"Seat {e.seat} missed {owes.get(e.owes, e.owes)} while sitting out"


def _posting(e: et.SeatPosting, cards: bool) -> str:
    who = " (a new player)" if e.new else ""
    dead = f" and {e.dead} dead" if e.dead else ""
    return f"Seat {e.seat}{who} posts {e.live} live{dead} in the next hand"


def _misdeal(e: et.HandMisdeal, cards: bool) -> str:
    back = f"; chips returned ({chips_by_seat(e.returned)})" if e.returned else ""
    return f"Misdeal{_rule(e.rule)}{_reason(e.reason)}{back}; the hand is dealt again"


def _void(e: et.HandVoid, cards: bool) -> str:
    deck = f"; deck {e.deck_out_of_service} out of service" if e.deck_out_of_service else ""
    return f"Hand void{_rule(e.rule)}{_reason(e.reason)}; every chip returned{deck}"


def _hold(e: et.HandHold, cards: bool) -> str:
    seat = f" at seat {e.seat}" if e.seat is not None else ""
    return f"Hold {e.rule}{seat}: {e.reason}. Proposed ruling: {e.ruling}"


def _resume(e: et.HandResume, cards: bool) -> str:
    if e.hold is None:
        return f"Play resumes{_reason(e.reason)}"
    how = {"confirm": "confirmed", "reject": "rejected", "floor": "overridden by the floor"}
    done = how.get(e.by or "", f"settled ({e.by})" if e.by else "settled")
    decision = f": {e.decision}" if e.decision else ""
    return f"Hold {e.rule or e.hold} {done}{decision}; play resumes"


def _override(e: et.FloorOverride, cards: bool) -> str:
    instead = f" instead of hold {e.hold}" if e.hold else ""
    return f"Floor ruling{_rule(e.rule)}: {e.decision}{instead}"


def _floor_called(e: EventData, cards: bool) -> str:
    # read by name: the type may be newer than this console's copy of the records
    reason, rule, seat = (getattr(e, name, None) for name in ("reason", "rule", "seat"))
    about = f" about hold {rule}" if rule else ""
    at = f" (seat {seat})" if seat is not None else ""
    return f"The dealer calls the floor{about}{at}{_reason(reason)}"


def _dead_hand(e: et.SeatHandDead, cards: bool) -> str:
    return f"Seat {e.seat}'s hand is dead{_reason(e.reason)}"


# ----------------------------------------------------------------------------- play


def _action(e: et.BettingAction, cards: bool) -> str:
    seat = f"Seat {e.seat}"
    all_in = " (all in)" if e.all_in else ""
    kind = e.action
    if kind is ActionKind.POST:
        blind = BLINDS.get(e.blind or "", e.blind or "a blind")
        return f"{seat} posts {blind} of {e.amount}{all_in}"
    if kind is ActionKind.CHECK:
        return f"{seat} checks"
    if kind is ActionKind.FOLD:
        return f"{seat} folds"
    if kind is ActionKind.CALL:
        return f"{seat} calls {e.to}{all_in}" if e.to is not None else f"{seat} calls{all_in}"
    if kind is ActionKind.BET:
        return f"{seat} bets {e.to}{all_in}"
    if kind is ActionKind.RAISE:
        return f"{seat} raises to {e.to}{all_in}"
    short = " (short of a full raise: betting not reopened)" if e.reopens_betting is False else ""
    return f"{seat} is all in for {e.to}{short}"


def _corrected(e: et.BettingActionCorrected, cards: bool) -> str:
    was = e.was.action.value + (f" to {e.was.to}" if e.was.to else "")
    return f"Seat {e.seat}'s action is corrected (it was {was})"


def _round_closed(e: et.BettingRoundClosed, cards: bool) -> str:
    back = f"; {chips_by_seat(e.returned)} returned uncalled" if e.returned else ""
    return f"{street(e.street)} betting closed: pot {e.pot}{back}"


def _deck_verified(e: et.DeckVerified, cards: bool) -> str:
    stub = "The reshuffled stub" if e.stub else "Deck"
    return f"{stub} verified: shuffle {e.shuffle_id}, {e.counted} cards counted"


def _deck_rejected(e: et.DeckRejected, cards: bool) -> str:
    parts = [f"Deck rejected: shuffle {e.shuffle_id}"]
    if e.reason:
        parts.append(e.reason)
    if e.counted is not None:
        parts.append(f"{e.counted} cards counted")
    if e.missing:
        parts.append(f"missing {cards_of(e.missing, cards)}")
    if e.duplicates:
        parts.append(f"twice {cards_of(e.duplicates, cards)}")
    if e.faults:
        parts.append("faults " + ", ".join(e.faults))
    return "; ".join(parts)


def _deck_revealed(e: et.DeckRevealed, cards: bool) -> str:
    return f"The order of shuffle {e.shuffle_id}'s deck is revealed ({e.cards} cards)"


def _stub(e: et.StubReshuffleRequired, cards: bool) -> str:
    back = f"{cards_of(e.back, cards)} go back" if e.back else "nothing read goes back"
    unread = f", and {e.unread} unread" if e.unread else ""
    return f"The stub must be reshuffled: {back}{unread}; the stub must count {e.stub}"


def _dispensed(e: et.DealGroupDispensed, cards: bool) -> str:
    to = f" for seat {e.seat}" if e.seat is not None else ""
    what = f": {cards_of(e.cards)}" if cards and e.cards else ""
    purpose = e.purpose.value.replace("_", " ")
    return f"Group {e.group} ({purpose}) dispensed{to}, {e.count} cards{what}"


def _delivered(e: et.DealGroupDelivered, cards: bool) -> str:
    what = f": {cards_of(e.cards)}" if cards and e.cards else ""
    again = " as a replacement" if e.replacement else ""
    return f"Seat {e.seat} received {e.count} card{'s' if e.count != 1 else ''}{again}{what}"


def _deal_complete(e: et.DealComplete, cards: bool) -> str:
    return f"Deal complete: {seats_of(e.seats)} hold their cards"


def _exposed(e: et.CardExposed, cards: bool) -> str:
    where = f" at seat {e.seat}" if e.seat is not None else ""
    how = "off the table" if e.how == "off_table" else e.how
    by = " by the player" if e.by == "player" else ""
    what = card(e.card, cards) if e.card else "A card"
    return f"{capital(what)} exposed{where} ({how}{by})"


def _dead_card(e: et.CardDead, cards: bool) -> str:
    where = f" at seat {e.seat}" if e.seat is not None else ""
    what = card(e.card or e.hidden_card, cards) if (e.card or e.hidden_card) else "a card"
    return f"Dead card{where}: {what}"


def _replacement(e: et.CardReplacementRequested, cards: bool) -> str:
    of = f" for {card(e.card, cards)}" if e.card else ""
    return f"Seat {e.seat} is owed a replacement card{of}"


def _burn(e: et.CardBurnAssigned, cards: bool) -> str:
    which = e.card or e.hidden_card
    what = f": {card(which, cards)}" if which else ""
    source = f" ({e.source})" if e.source else ""
    return f"Burn card for the {e.street} assigned{source}{what}"


def _board(e: et.BoardDealt, cards: bool) -> str:
    whole = f" (board {cards_of(e.board)})" if len(e.board) > len(e.cards) else ""
    return f"{street(e.street)}: {cards_of(e.cards)}{whole}"


def _premature(e: et.BoardPremature, cards: bool) -> str:
    return f"{street(e.street)} card turned too soon: {card(e.card, cards)}"


def _set_aside(e: et.BoardCardSetAside, cards: bool) -> str:
    what = card(e.card, cards) or "A card"
    return f"{capital(what)} set aside from the {e.street}{_reason(e.reason)}"


def _redeal(e: et.BoardRedealRequired, cards: bool) -> str:
    back = f": {cards_of(e.cards, cards)} go back" if e.cards else ""
    count = f" ({e.returned} cards in all)" if e.returned else ""
    return f"The {e.street} is dealt again{back}{count}"


# ----------------------------------------------------------------------------- showdown


def _order(e: et.ShowdownOrder, cards: bool) -> str:
    faceup = " (every hand face up)" if e.faceup else ""
    return f"Showdown order: {seats_of(e.order)}{faceup}"


def _tabled(e: et.ShowdownHandTabled, cards: bool) -> str:
    what = f" {cards_of(e.cards, cards)}" if cards else " their hand"
    category = f" ({e.category})" if e.category else ""
    return f"Seat {e.seat} tables{what}{category}"


def _mucked(e: et.ShowdownHandMucked, cards: bool) -> str:
    what = f" ({cards_of(e.cards)})" if cards and e.cards else ""
    return f"Seat {e.seat} mucks{what}"


def _shown(e: et.ShowdownHandShown, cards: bool) -> str:
    what = cards_of(e.cards, cards) if cards else "their hand"
    live = "" if e.live else " (the hand stays dead)"
    return f"Seat {e.seat} shows {what} at seat {e.asked_by}'s request{live}"


def _plays_board(e: et.ShowdownPlaysBoard, cards: bool) -> str:
    return f"Seat {e.seat} plays the board"


def _shares(pots: tuple[et.PotShare, ...]) -> str:
    parts = []
    for i, pot in enumerate(pots):
        name = pot_name(i, len(pots))
        winners = " and ".join(f"seat {s} wins {chips}" for s, chips in pot.winners.items())
        parts.append(f"{winners or 'nobody wins'} from {name}")
    text = "; ".join(reversed(parts))  # main pot first, as people say it
    return capital(text) or "Nothing"


def _proposed(e: et.PotAwardProposed, cards: bool) -> str:
    kill = f" (kill {seats_of(e.kill)} first)" if e.kill else ""
    shares = _shares(e.pots)
    return f"Proposed: {shares[:1].lower()}{shares[1:]}{kill}"


def _awarded(e: et.PotAwarded, cards: bool) -> str:
    rake = f" (the house took {e.rake})" if e.rake else ""
    return f"{_shares(e.pots)}{rake}"


def _rake(e: et.PotRakeTaken, cards: bool) -> str:
    if e.waived:
        return f"No rake taken: {e.waived}"
    jackpot = f" and {e.jackpot} for the jackpot" if e.jackpot else ""
    return f"The house takes {e.rake}{jackpot} ({e.total} in all)"


def _runouts(e: et.HandRunoutsAgreed, cards: bool) -> str:
    return f"Run it {e.runs} times after the {e.street} ({cards_of(e.board)} out)"


def _runout(e: et.BoardRunoutStarted, cards: bool) -> str:
    return f"Runout {e.run} begins from {cards_of(e.board)}"


# ----------------------------------------------------------------------------- alarms


def _irregularity(e: et.IrregularityDetected, cards: bool) -> str:
    seat = f" at seat {e.seat}" if e.seat is not None else ""
    what = f" ({card(e.card or e.hidden_card, cards)})" if (e.card or e.hidden_card) else ""
    return f"Irregularity{_rule(e.rule)}{seat}: {e.reason}{what}"


def _integrity(e: et.IntegrityAlarm, cards: bool) -> str:
    where = f" ({e.device or e.zone})" if (e.device or e.zone) else ""
    return f"Integrity alarm{_rule(e.rule)}{where}: {e.reason}"


def _accepted(e: et.JournalAccepted, cards: bool) -> str:
    return f"The journal is accepted as it is after '{e.alarm}': {e.reason}; epoch {e.epoch} begins"


def _epoch(e: et.JournalEpochStarted, cards: bool) -> str:
    return f"A new epoch begins ({e.reason}), after {e.previous}"


def _device(e: et.DeviceStatus, cards: bool) -> str:
    name = f"Device {e.device}"
    if e.fault:
        return f"{name} fault: {e.fault}{_reason(e.detail)}"
    if e.cleared:
        return f"{name}: fault {e.cleared} cleared"
    if e.rebooted:
        return f"{name} rebooted"
    approved = " (not approved)" if e.approved is False else ""
    return f"{name}: {e.health or 'status'}{approved}{_reason(e.detail)}"


def _rejected(e: et.CommandRejected, cards: bool) -> str:
    return f"Command {e.command} refused: {e.reason}"


def _shed(e: et.RequestsShed, cards: bool) -> str:
    counts = ", ".join(f"{n} ({why})" for why, n in e.counts.items())
    return f"Requests answered at once and not run over {e.seconds:g} s: {counts}"


def _disk(e: et.JournalDisk, cards: bool) -> str:
    free = f"{e.free_bytes / 1e9:.1f} GB free"
    if e.condition == "low":
        return f"The journal's disk is low: {free}"
    if e.condition == "recovered":
        refused = f", {e.refused} requests refused" if e.refused else ""
        return f"The journal's disk has room again after {e.seconds or 0:g} s full{refused}"
    if e.condition == "retention":
        return "The journal is over its budget and nothing can be pruned yet"
    return f"The journal's disk has room again: {free}"


#: Each event type's sentence.
SENTENCES: dict[str, Callable[[Any, bool], str]] = {
    et.HandStarted.TYPE: _started,
    et.HandCompleted.TYPE: _completed,
    et.HouseTimeCollected.TYPE: _time,
    et.SeatBlindsMissed.TYPE: _missed,
    et.SeatPosting.TYPE: _posting,
    et.HandMisdeal.TYPE: _misdeal,
    et.HandVoid.TYPE: _void,
    et.HandHold.TYPE: _hold,
    et.HandResume.TYPE: _resume,
    et.FloorOverride.TYPE: _override,
    et.FloorCalled.TYPE: _floor_called,
    et.SeatHandDead.TYPE: _dead_hand,
    et.BettingAction.TYPE: _action,
    et.BettingActionCorrected.TYPE: _corrected,
    et.BettingRoundClosed.TYPE: _round_closed,
    et.DeckVerified.TYPE: _deck_verified,
    et.DeckRejected.TYPE: _deck_rejected,
    et.DeckRevealed.TYPE: _deck_revealed,
    et.StubReshuffleRequired.TYPE: _stub,
    et.DealGroupDispensed.TYPE: _dispensed,
    et.DealGroupDelivered.TYPE: _delivered,
    et.DealComplete.TYPE: _deal_complete,
    et.CardExposed.TYPE: _exposed,
    et.CardDead.TYPE: _dead_card,
    et.CardReplacementRequested.TYPE: _replacement,
    et.CardBurnAssigned.TYPE: _burn,
    et.BoardDealt.TYPE: _board,
    et.BoardPremature.TYPE: _premature,
    et.BoardCardSetAside.TYPE: _set_aside,
    et.BoardRedealRequired.TYPE: _redeal,
    et.ShowdownOrder.TYPE: _order,
    et.ShowdownHandTabled.TYPE: _tabled,
    et.ShowdownHandMucked.TYPE: _mucked,
    et.ShowdownHandShown.TYPE: _shown,
    et.ShowdownPlaysBoard.TYPE: _plays_board,
    et.PotAwardProposed.TYPE: _proposed,
    et.PotAwarded.TYPE: _awarded,
    et.PotRakeTaken.TYPE: _rake,
    et.HandRunoutsAgreed.TYPE: _runouts,
    et.BoardRunoutStarted.TYPE: _runout,
    et.IrregularityDetected.TYPE: _irregularity,
    et.IntegrityAlarm.TYPE: _integrity,
    et.JournalAccepted.TYPE: _accepted,
    et.JournalEpochStarted.TYPE: _epoch,
    et.DeviceStatus.TYPE: _device,
    et.CommandRejected.TYPE: _rejected,
    et.RequestsShed.TYPE: _shed,
    et.JournalDisk.TYPE: _disk,
}

"""SHF-INFO: a retired deck's revealed order against what the table saw dealt from it.

Under the default ``id_policy = withhold`` the shuffler reports each group without its cards,
so a card of the deck in play that the shuffler never dispensed, read at the seat a group is
for, passes for one of that group's cards when it is read. The deck's order is revealed after
it is retired (hardware.md § 5.2.6), and then the table knows what each group was: a shuffle's
groups come off the top of its order one after the other (burns, board groups, replacements
alike; a stub reshuffle is a new shuffle whose order is the reshuffled stub), so a group is the
``size`` cards of the order before the last ``remaining`` the shuffler reported after it.

The table keeps, for each deck dealt from and not yet revealed (``TableState.audit``, the last
:data:`AUDIT_DECKS`), every group the shuffler reported and the cards it read for each, with the
zone where each was first read. When the order is revealed and matches its commitment, each
group is checked against its part of the order:

* a hole card read at its group's seat is one of that group's cards (a seat's group is one
  group, so the table knows which it took the card for);
* any other card read (a burn, a board card, a replacement, a card read elsewhere) is a card
  some group of the deck was dealt: the table took it for the oldest unread group of its kind
  in the tray, which it cannot know for sure when several wait there (a broken group kept after
  a hold, a premature card), so it is held to the deck's groups together;
* only what was read is compared: the unread cards of a broken group that went back into the
  stub, or of a hand misdealt before they were read, are not (the table never saw them);
* the groups account for the order's dispensed cards: no card before the last group left the
  shuffler in no group the table saw, and no two groups claim the same card;
* under ``id_policy = live``, the cards the shuffler reported are the group's cards.

Each disagreement is one ``integrity.alarm`` (``critical``, as a broken commitment) with SHF-INFO
and the rule of what it caught: SEAT-SEQ for a card at a seat that is not its group's (of
another group, or never dispensed), EXP-REPL-CHECK for a replacement, BOARD-GROUP for a burn or
board card, DE-1544a-GRP for cards that left the shuffler in no group (or one read in the muck),
SHF-RECOG for cards the shuffler reported that are not its order's. The hand they were dealt
in is over, or another hand runs: the alarm holds and changes nothing. A read the table judged
at once is not reported again: under ``live``, a card read at a seat was checked against its
group's reported cards when it came (SEAT-SEQ, EXP-REPL-CHECK).
"""

from __future__ import annotations

from controller.cards import Card
from controller.rules.ids import Rule
from controller.table.context import Context
from controller.table.event_types import IntegrityAlarm
from controller.table.events import Severity
from controller.table.inputs import DeckRevealed, GroupDispensed, Purpose, Zone, ZoneKind
from controller.table.state import AuditGroup, AuditRead, DeckAudit, HandState

#: Decks whose groups are kept until revealed: a TSP/1 shuffler keeps its last 8 retired decks
#: for REVEAL_DECK, so an older one is never revealed (and a table runs for years).
AUDIT_DECKS = 8
#: Groups kept per deck: a 52-card deck has no more (a device reporting more is lying anyway).
_GROUPS_KEPT = 52

# --------------------------------------------------------------------------- recording


def group_dispensed(ctx: Context, ev: GroupDispensed) -> None:
    """Record a group the shuffler reported, whatever the table makes of it."""
    hand = ctx.table.hand
    entry = AuditGroup(
        ev.group,
        ev.purpose,
        ev.seat,
        len(ev.cards),
        ev.remaining,
        tuple(ev.cards) if any(c is not None for c in ev.cards) else None,
        hand.hand_id if hand is not None else None,
    )
    decks = ctx.table.audit
    for index in range(len(decks) - 1, -1, -1):
        deck = decks[index]
        if deck.shuffle_id == ev.shuffle_id:
            groups = (*deck.groups, entry)[-_GROUPS_KEPT:]
            kept = DeckAudit(deck.shuffle_id, groups)
            ctx.table.audit = (*decks[:index], kept, *decks[index + 1 :])
            return
    ctx.table.audit = (*decks, DeckAudit(ev.shuffle_id, (entry,)))[-AUDIT_DECKS:]


def cards_read(
    ctx: Context, hand: HandState, drawn: tuple[tuple[int, Card], ...], zone: Zone
) -> None:
    """Cards first read at ``zone``, each drawn from the group of that number of ``hand``."""
    decks = ctx.table.audit
    for number, card in drawn:
        found = _find(decks, hand.hand_id, number)
        if found is None:
            continue  # a group of a deck no longer kept
        d, g = found
        deck = decks[d]
        group = deck.groups[g]
        group = group._replace(reads=(*group.reads, AuditRead(card, zone)))
        groups = (*deck.groups[:g], group, *deck.groups[g + 1 :])
        decks = (*decks[:d], DeckAudit(deck.shuffle_id, groups), *decks[d + 1 :])
    ctx.table.audit = decks


def _find(decks: tuple[DeckAudit, ...], hand_id: str, number: int) -> tuple[int, int] | None:
    """The newest group of that number dispensed in the hand (a stub reshuffle keeps numbering,
    so a number is one group of the hand's decks)."""
    for d in range(len(decks) - 1, -1, -1):
        groups = decks[d].groups
        for g in range(len(groups) - 1, -1, -1):
            if groups[g].group == number and groups[g].hand_id == hand_id:
                return d, g
    return None


def forget(ctx: Context, shuffle_id: int) -> None:
    """The deck is revealed: its record goes."""
    if any(deck.shuffle_id == shuffle_id for deck in ctx.table.audit):
        ctx.table.audit = tuple(d for d in ctx.table.audit if d.shuffle_id != shuffle_id)


# --------------------------------------------------------------------------- the cross-check


def deck_revealed(ctx: Context, ev: DeckRevealed) -> None:
    """Check the groups dealt from a revealed deck (its commitment verified) against its order."""
    deck = next((d for d in ctx.table.audit if d.shuffle_id == ev.shuffle_id), None)
    if deck is None:
        return
    forget(ctx, ev.shuffle_id)
    for alarm, rules in cross_check(deck, tuple(ev.order)):
        ctx.emit(alarm, (Rule.SHF_INFO, *rules), severity=Severity.CRITICAL)


def cross_check(
    deck: DeckAudit, order: tuple[Card, ...]
) -> list[tuple[IntegrityAlarm, tuple[Rule, ...]]]:
    """Every disagreement between the groups of ``deck`` and its revealed ``order``."""
    size = len(order)
    found: list[tuple[IntegrityAlarm, tuple[Rule, ...]]] = []
    spans: list[tuple[int, int, AuditGroup]] = []
    for group in deck.groups:
        end = size - group.remaining
        start = end - group.size
        if group.remaining < 0 or start < 0:
            reason = (
                f"group {group.group}: {group.size} cards with {group.remaining} left "
                f"is more than the {size} cards of its order"
            )
            found.append(_alarm(deck, group, Rule.DE_1544A_GRP, reason, (), ()))
            continue
        spans.append((start, end, group))
    spans.sort(key=lambda span: span[0])
    # groups are dealt in order: their places in the order are what the shuffler reported
    where = {order[i]: group for start, end, group in spans for i in range(start, end)}
    undealt = order[max((end for _, end, _ in spans), default=0) :]
    position = 0
    for start, end, group in spans:
        dealt = order[start:end]
        if start > position:
            lost = order[position:start]
            reason = (
                f"cards {position + 1} to {start} of the order left the shuffler before "
                f"group {group.group} in no group the table saw dispensed"
            )
            found.append(_alarm(deck, None, Rule.DE_1544A_GRP, reason, (), lost))
        elif start < position:
            reason = f"group {group.group} claims cards of the order an earlier group was dealt"
            found.append(_alarm(deck, group, Rule.DE_1544A_GRP, reason, (), dealt))
        position = max(position, end)
        faces = tuple(c for c in group.faces or () if c is not None)
        if any(c not in dealt for c in faces):
            reason = f"the shuffler reported group {group.group}'s cards other than its order dealt"
            found.append(_alarm(deck, group, Rule.SHF_RECOG, reason, faces, dealt))
        # under live a card read at a seat was checked against the reported cards at once
        judged = bool(faces)
        wrong = [
            read
            for read in group.reads
            if not (judged and read.zone.kind is ZoneKind.SEAT)
            and (read.card not in dealt if _own_seat(group, read) else read.card not in where)
        ]
        if wrong:
            first = wrong[0]
            other = where.get(first.card)
            if other is not None:
                what = f"a card of group {other.group}"
            elif first.card in undealt:
                what = "a card the shuffler had not dispensed"
            elif first.card in order:
                what = "a card dealt in no group the table saw"
            else:
                what = "a card not in this deck"
            reason = f"group {group.group}{_for(group)} was read with {what}"
            cards = tuple(read.card for read in group.reads)
            rule = _rule(group, first)
            found.append(_alarm(deck, group, rule, reason, cards, dealt, zone=str(first.zone)))
    return found


def _own_seat(group: AuditGroup, read: AuditRead) -> bool:
    """A hole card read at its group's seat: the table took it for that seat's one group, so it
    must be one of that group's cards. Any other card the table took for the oldest unread group
    of its kind in the tray, which it cannot know under withhold when several wait there (a broken
    group kept after a hold, a premature card): it must be a card some group was dealt."""
    zone = read.zone
    return (
        group.purpose is Purpose.HOLE
        and zone.kind is ZoneKind.SEAT
        and (group.seat is None or zone.seat == group.seat)
    )


def _rule(group: AuditGroup, read: AuditRead) -> Rule:
    """The rule of what a wrong read caught."""
    if group.purpose is Purpose.EXTRA:
        return Rule.EXP_REPL_CHECK  # a replacement that is not the card dispensed for it
    kind = read.zone.kind
    if kind is ZoneKind.SEAT:
        return Rule.SEAT_SEQ  # a card of another group, or never dispensed, at a seat
    if kind in (ZoneKind.BOARD, ZoneKind.BURN):
        return Rule.BOARD_GROUP  # community cards and burns come as the groups dispensed
    return Rule.DE_1544A_GRP


def _for(group: AuditGroup) -> str:
    if group.seat is not None and group.purpose in (Purpose.HOLE, Purpose.EXTRA):
        return f" for seat {group.seat}"
    return f" ({group.purpose.value})"


def _alarm(
    deck: DeckAudit,
    group: AuditGroup | None,
    rule: Rule,
    reason: str,
    cards: tuple[Card, ...],
    expected: tuple[Card, ...],
    *,
    zone: str | None = None,
) -> tuple[IntegrityAlarm, tuple[Rule, ...]]:
    """One disagreement: the alarm, and the rule of what it caught (``rule`` in its data)."""
    alarm = IntegrityAlarm(
        f"deck audit: {reason}",
        rule=rule.value,
        zone=zone,
        shuffle_id=deck.shuffle_id,
        group=group.group if group is not None else None,
        purpose=group.purpose if group is not None else None,
        seat=group.seat if group is not None else None,
        dealt_in=group.hand_id if group is not None else None,
        cards=cards or None,
        expected=expected or None,
    )
    return alarm, (rule,)

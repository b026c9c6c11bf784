"""What the simulated deck check finds: a good deck, or the problem the control channel ordered."""

from __future__ import annotations

from drivers.shuffler.codes import DeckVerdict
from drivers.shuffler.events import DeckCheck


def deck_check(shuffle_id: int, order: bytes, kind: str, counted: int | None) -> DeckCheck:
    """The DECK_CHECK of ``order`` (card codes) when the deck has problem ``kind``.

    ``kind`` is ``ok``, ``short``/``missing`` (the last cards are not there), ``extra`` (the top
    cards are there twice), ``duplicate`` (the top card replaces the bottom one), ``foreign``
    (a card with another back), ``unreadable`` or ``wrong_profile`` (a deck the device is not
    configured for: every card is there, but it is not the deck it expects). ``counted`` is a
    card count to report instead of 52 (a count mismatch).
    """
    size = len(order)
    if counted is not None and counted != size:
        kind = "short" if counted < size else "extra"
    if kind == "ok":
        return DeckCheck(shuffle_id, DeckVerdict.OK, size, size, 0, 0)
    if kind in ("short", "missing"):
        missing = order[-max(1, size - (counted if counted is not None else size - 1)) :]
        left = size - len(missing)
        return DeckCheck(shuffle_id, DeckVerdict.SHORT, left, left, 0, 0, missing)
    if kind == "extra":
        extra = max(1, (counted if counted is not None else size + 1) - size)
        verdict = DeckVerdict.EXTRA | DeckVerdict.DUPLICATE
        return DeckCheck(shuffle_id, verdict, size + extra, size + extra, 0, 0, b"", order[:extra])
    if kind == "duplicate":
        return DeckCheck(shuffle_id, DeckVerdict.DUPLICATE, size, size, 0, 0, order[-1:], order[:1])
    if kind == "wrong_profile":
        return DeckCheck(shuffle_id, DeckVerdict.WRONG_PROFILE, size, size, 0, 0)
    if kind == "foreign":
        return DeckCheck(shuffle_id, DeckVerdict.FOREIGN_BACK, size + 1, size, 0, 1)
    return DeckCheck(shuffle_id, DeckVerdict.UNREADABLE, size, size - 1, 1, 0)

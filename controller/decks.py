"""Deck manifests: which RFID tag UID is which card of which deck.

A manifest is a TOML file in ``config/decks/``::

    [deck]
    id = "house-a"

    [uids]
    "04a1b2c3d4e580" = "As"
    …

It must map 52 distinct UIDs to the 52 distinct cards. UIDs are written as ``controller.uids``
spells them (lowercase hex, no separators; others are accepted and normalised).
``tablectl deck enroll`` writes these files.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from controller.cards import STANDARD_DECK, Card, CardError, parse_card
from controller.paths import config_dir
from controller.uids import UidError, normalize_uid


class ManifestError(ValueError):
    """A deck manifest that is not valid; the message says which key and why."""


@dataclass(frozen=True)
class DeckManifest:
    """The UID → card map of one physical deck."""

    deck_id: str
    uid_to_card: Mapping[str, Card]
    jokers: frozenset[str] = frozenset()
    card_to_uid: Mapping[Card, str] = field(init=False)

    def __post_init__(self) -> None:
        problems = _problems(self.uid_to_card)
        if problems:
            raise ManifestError(f"deck {self.deck_id!r}: " + "; ".join(problems))
        object.__setattr__(self, "card_to_uid", {c: u for u, c in self.uid_to_card.items()})

    def card(self, uid: str) -> Card | None:
        """The card carrying ``uid``, or None for a tag not in this deck."""
        return self.uid_to_card.get(uid)

    def uid(self, card: Card) -> str:
        """The UID of ``card`` in this deck."""
        return self.card_to_uid[card]

    def to_toml(self) -> str:
        """The manifest as a TOML document (cards in canonical order)."""
        lines = ["[deck]", f'id = "{self.deck_id}"', "", "[uids]"]
        lines += [f'"{self.card_to_uid[card]}" = "{card}"' for card in STANDARD_DECK]
        if self.jokers:
            lines += [
                "",
                "[jokers]",
                "uids = [" + ", ".join(f'"{u}"' for u in sorted(self.jokers)) + "]",
            ]
        return "\n".join(lines) + "\n"


def _problems(uid_to_card: Mapping[str, Card]) -> list[str]:
    problems: list[str] = []
    by_card: dict[Card, list[str]] = {}
    for uid, card in uid_to_card.items():
        by_card.setdefault(card, []).append(uid)
    for card, uids in sorted(by_card.items()):
        if len(uids) > 1:
            problems.append(f"card {card} has {len(uids)} UIDs ({', '.join(sorted(uids))})")
    missing = [c for c in STANDARD_DECK if c not in by_card]
    if missing:
        problems.append(f"{len(missing)} card(s) missing: {' '.join(missing)}")
    return problems


def load_manifest(path: Path) -> DeckManifest:
    """Read and validate a manifest file.

    The same bytes are not parsed twice: every table, simulated ones by the thousand in the
    tests, reads every shipped manifest to know the other decks' tags, and parsing one costs
    about a millisecond. The manifest is frozen, so the one parse can be shared.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ManifestError(f"{path}: {exc}") from None
    return _parse_manifest(path, raw)


@lru_cache(maxsize=64)
def _parse_manifest(path: Path, content: bytes) -> DeckManifest:
    """The manifest ``path`` holds when its bytes are ``content``."""
    try:
        # newlines read as a text file reads them (\r\n and a lone \r are \n)
        text = content.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        data = tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ManifestError(f"{path}: {exc}") from None
    deck = data.get("deck")
    if not isinstance(deck, dict) or not isinstance(deck.get("id"), str) or not deck["id"]:
        raise ManifestError(f"{path}: [deck] id is required (a non-empty string)")
    uids = data.get("uids")
    if not isinstance(uids, dict):
        raise ManifestError(f"{path}: [uids] is required (a table of UID = card)")
    mapping: dict[str, Card] = {}
    for raw_uid, raw_card in uids.items():
        try:
            uid = normalize_uid(raw_uid)
            card = parse_card(str(raw_card))
        except (UidError, CardError) as exc:
            raise ManifestError(f"{path}: uids.{raw_uid}: {exc}") from None
        if uid in mapping:
            raise ManifestError(f"{path}: uids.{raw_uid}: UID listed twice")
        mapping[uid] = card
    jokers: set[str] = set()
    for raw in (data.get("jokers") or {}).get("uids", []):
        try:
            jokers.add(normalize_uid(str(raw)))
        except UidError as exc:
            raise ManifestError(f"{path}: jokers.uids: {exc}") from None
    if jokers & mapping.keys():
        raise ManifestError(f"{path}: jokers.uids: a joker UID is also a card")
    try:
        return DeckManifest(deck["id"], mapping, frozenset(jokers))
    except ManifestError as exc:
        raise ManifestError(f"{path}: {exc}") from None


def load_deck(name: str) -> DeckManifest:
    """A shipped manifest by deck id (``config/decks/<name>.toml``)."""
    path = config_dir() / "decks" / f"{name}.toml"
    if not path.is_file():
        raise ManifestError(f"no deck manifest named {name!r} in {path.parent}")
    return load_manifest(path)


def synthetic_manifest(deck_id: str) -> DeckManifest:
    """A reproducible manifest of 7-byte NXP-style UIDs derived from the deck id (tests, demos)."""
    mapping = {
        "04" + hashlib.sha256(f"{deck_id}/{card}".encode()).hexdigest()[:12]: card
        for card in STANDARD_DECK
    }
    return DeckManifest(deck_id, mapping)


def known_decks(exclude: str = "") -> dict[str, tuple[str, Card]]:
    """Every shipped manifest's UIDs but ``exclude``'s: uid → (deck id, card).

    The table uses them to tell a card of another known deck (FOUL-DUP when its rank and suit are
    in play, FOUL-FOREIGN otherwise) from a tag it has never seen.
    """
    known: dict[str, tuple[str, Card]] = {}
    for path in sorted((config_dir() / "decks").glob("*.toml")):
        manifest = load_manifest(path)
        if manifest.deck_id != exclude:
            known.update(
                {uid: (manifest.deck_id, card) for uid, card in manifest.uid_to_card.items()}
            )
    return known

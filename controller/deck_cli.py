"""``tablectl deck enroll``: read a deck's 52 tags at an enroll zone and write its manifest.

The reader is any reader driver: named with ``--reader DRIVER --port PORT`` (an enroll zone is
set up for it), or taken from a config file (``--config FILE``: a table config with
``[devices.NAME]`` sections, or one device section) whose reader maps a zone ``enroll``.
Progress goes to standard output, refusals and reader trouble to standard error.

Exit status: 0 manifest written; 1 enrollment failed (short deck, reader never came); 2 bad
options or config.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import re
import signal
import sys
import tomllib
from pathlib import Path
from typing import Any

import structlog

from controller.cards import STANDARD_DECK, Card, CardError, parse_card
from controller.decks import ManifestError, load_manifest
from controller.enroll import Accepted, Enrollment, EnrollmentError, Outcome, Refused, enroll
from controller.paths import config_dir
from controller.table.inputs import DeviceHealthChanged

READERS = ("pn532", "tsp-reader", "tsp-reader-usb")
_DECK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class EnrollSetupError(ValueError):
    """Bad options or config: the message says which."""


def add_parsers(subparsers: Any) -> None:
    """Register the ``deck`` verb and its ``enroll`` sub-verb."""
    deck = subparsers.add_parser(
        "deck",
        help="RFID deck manifests",
        description="Make the manifests that tie each card of an RFID deck to its tags' UIDs.",
    )
    verbs = deck.add_subparsers(dest="deck_verb", metavar="VERB", required=True)
    parser = verbs.add_parser(
        "enroll",
        help="read 52 tags at an enroll zone and write the deck manifest",
        description="Read the 52 tags of a new deck at an enroll zone and write its manifest. "
        "Needs the reader: --reader DRIVER --port PORT, or a config that has it (--config). "
        "Present the cards one at a time on the enroll antenna, in canonical order "
        "(2c 3c … Ac 2d … As) or in the order of --order. Ctrl-C ends early (nothing is "
        "written unless all 52 cards were enrolled). Exit status 0: manifest written; 1: "
        "enrollment failed; 2: bad options or config.",
    )
    add = parser.add_argument
    add("--deck-id", required=True, help="the new deck's id (letters, digits, . _ -)")
    add("--out", type=Path, help="where the manifest goes (default: DECKS/DECK-ID.toml)")
    add("--force", action="store_true", help="overwrite an existing manifest")
    add("--order", type=Path, help="file listing the 52 cards in presentation order")
    add("--reader", choices=READERS, help="reader driver (with --port)")
    add("--port", help="serial port; for tsp-reader-usb VID:PID[:SERIAL] in hex")
    add("--antenna", type=int, default=0, help="tsp-reader(-usb): the enroll antenna (default 0)")
    add("--config", type=Path,
        help="the table's config file (or one device section) with the reader, instead of "
        "--reader/--port")  # fmt: skip
    add("--device", help="which [devices.NAME] of --config (default: its only reader)")
    add("--decks", type=Path, help="manifests of the other decks (default: config/decks)")
    add("--idle-timeout", type=float, help="end after this many seconds without a new card")
    add("--gap", type=float, default=0.05, help="tags closer in time arrived together (s)")
    parser.set_defaults(handler=run_enroll)


# --------------------------------------------------------------------------- setup


def read_order(path: Path) -> list[Card]:
    """Cards in presentation order: whitespace- or comma-separated, ``#`` starts a comment."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise EnrollSetupError(f"--order {path}: {exc.strerror or exc}") from None
    words = [w for line in text.splitlines() for w in line.split("#")[0].replace(",", " ").split()]
    try:
        return [parse_card(word) for word in words]
    except CardError as exc:
        raise EnrollSetupError(f"--order {path}: {exc}") from None


def other_decks(directory: Path, deck_id: str) -> dict[str, tuple[str, Any]]:
    """UIDs of every manifest in ``directory`` but ``deck_id``'s: uid → (deck id, card)."""
    known: dict[str, tuple[str, Any]] = {}
    for path in sorted(directory.glob("*.toml")):
        try:
            manifest = load_manifest(path)
        except ManifestError as exc:
            print(f"warning: skipping {exc}", file=sys.stderr)
            continue
        if manifest.deck_id != deck_id:
            known.update({uid: (manifest.deck_id, c) for uid, c in manifest.uid_to_card.items()})
    return known


def _usb_port(text: str) -> dict[str, Any]:
    parts = text.split(":")
    try:
        if len(parts) not in (2, 3):
            raise ValueError(text)
        options: dict[str, Any] = {"vid": int(parts[0], 16), "pid": int(parts[1], 16)}
    except ValueError:
        raise EnrollSetupError(f"--port {text!r}: tsp-reader-usb takes VID:PID[:SERIAL]") from None
    if len(parts) == 3 and parts[2]:
        options["serial_number"] = parts[2]
    return options


def reader_from_args(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The driver name and its options, from ``--reader/--port`` or ``--config``."""
    if args.config is not None:
        if args.reader or args.port:
            raise EnrollSetupError("give either --config or --reader/--port, not both")
        return reader_from_config(args.config, args.device)
    if not args.reader or not args.port:
        raise EnrollSetupError("name the reader: --reader DRIVER --port PORT, or --config FILE")
    if args.reader == "pn532":
        return "pn532", {"modules": [{"port": args.port, "zone": "enroll"}]}
    antennas = [{"antenna": args.antenna, "zone": "enroll"}]
    if args.reader == "tsp-reader":
        return "tsp-reader", {"port": args.port, "antennas": antennas}
    return "tsp-reader-usb", {**_usb_port(args.port), "antennas": antennas}


def reader_from_config(path: Path, device: str | None) -> tuple[str, dict[str, Any]]:
    """A reader's driver and options from a table config or a single device section."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise EnrollSetupError(f"{path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise EnrollSetupError(f"{path}: not valid TOML: {exc}") from None
    if "devices" in data:
        sections = {k: v for k, v in data["devices"].items() if isinstance(v, dict)}
        if device is None:
            readers = [k for k, v in sections.items() if v.get("driver") in READERS]
            if len(readers) != 1:
                found = ", ".join(readers) or "none"
                raise EnrollSetupError(f"{path}: name the reader with --device (readers: {found})")
            device = readers[0]
        if device not in sections:
            raise EnrollSetupError(f"{path}: no [devices.{device}]")
        section = dict(sections[device])
    else:
        section = dict(data)
    driver = section.pop("driver", None)
    section.pop("enabled", None)
    if not isinstance(driver, str):
        raise EnrollSetupError(f'{path}: the reader section needs driver = "…"')
    return driver, section


def _zones(value: Any) -> list[str]:
    if isinstance(value, dict):
        zones = [str(v) for k, v in value.items() if k == "zone"]
        return zones + [z for v in value.values() for z in _zones(v)]
    if isinstance(value, list):
        return [z for v in value for z in _zones(v)]
    return []


def build_reader(driver: str, options: dict[str, Any]) -> Any:
    """The reader driver, built by name from the registry (any reader driver works)."""
    from pydantic import ValidationError  # noqa: PLC0415

    from drivers.registry import DriverUnavailableError, load_driver  # noqa: PLC0415

    if "enroll" not in _zones(options):
        raise EnrollSetupError('the reader maps no zone "enroll": give an antenna zone = "enroll"')
    try:
        cls: Any = load_driver(driver)
        return cls.from_options("enroll", options)
    except DriverUnavailableError as exc:
        raise EnrollSetupError(str(exc)) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "options"
        raise EnrollSetupError(f"reader {driver}: {where}: {first['msg']}") from None


# --------------------------------------------------------------------------- running


def _report(item: Outcome | DeviceHealthChanged) -> None:
    if isinstance(item, Accepted):
        print(f"{item.position:3d}/52  {item.card:<2}  {item.uid}", flush=True)
    elif isinstance(item, Refused):
        print(f"refused: {item.reason}", file=sys.stderr, flush=True)
    elif item.device == "enroll" or item.health.value != "online":
        detail = f": {item.detail}" if item.detail else ""
        print(f"reader {item.device} {item.health.value}{detail}", file=sys.stderr, flush=True)


async def _run(reader: Any, enrollment: Enrollment, args: argparse.Namespace) -> None:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, task.cancel)
    print(f"present {enrollment.next_card} first; Ctrl-C ends", file=sys.stderr, flush=True)
    async with reader:
        with contextlib.suppress(asyncio.CancelledError):
            await enroll(
                reader,
                enrollment,
                gap=args.gap,
                idle_timeout=args.idle_timeout,
                report=_report,
            )


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)


def _quiet_logs() -> None:
    """Driver logs go to standard error, warnings and worse only: standard output is the
    progress, one line per card."""
    structlog.configure(
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
    )


def run_enroll(args: argparse.Namespace) -> int:
    """The ``deck enroll`` verb."""
    _quiet_logs()
    decks = args.decks or config_dir() / "decks"
    out = args.out or decks / f"{args.deck_id}.toml"
    try:
        if not _DECK_ID.fullmatch(args.deck_id):
            raise EnrollSetupError(f"--deck-id {args.deck_id!r}: letters, digits, . _ - only")
        if args.gap <= 0:
            raise EnrollSetupError("--gap must be above 0")
        if out.exists() and not args.force:
            raise EnrollSetupError(f"{out} exists (use --force to replace it)")
        order = read_order(args.order) if args.order else None
        known = other_decks(decks, args.deck_id) if decks.is_dir() else {}
        enrollment = Enrollment(args.deck_id, order or STANDARD_DECK, known)
        reader = build_reader(*reader_from_args(args))
    except (EnrollSetupError, EnrollmentError) as exc:
        print(f"tablectl deck enroll: {exc}", file=sys.stderr)
        return 2
    asyncio.run(_run(reader, enrollment, args))
    try:
        manifest = enrollment.manifest()
    except EnrollmentError as exc:
        print(f"tablectl deck enroll: {exc}", file=sys.stderr)
        return 1
    _write(out, manifest.to_toml())
    print(f"wrote {out}: deck {args.deck_id}, 52 cards", flush=True)
    return 0

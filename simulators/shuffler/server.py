"""The shuffler simulator's runtime: the shuffler model on a pty, with its control commands.

The generic parts are shared with every TSP/1 simulator: :class:`~simulators.tsp_device.WireDevice`
puts the model behind the device link and injects link faults (corrupted CRCs, truncated frames,
stalls), :class:`~simulators.tsp_pty.TspPtyServer` serves it on a pty with baud pacing, chunked
writes, unplug and replug. This module adds the shuffler's own faults and commands.
"""

from __future__ import annotations

import hashlib
from typing import Any

from controller.cards import card_code, card_from_code, parse_card
from drivers.shuffler.codes import FAULTS, PURPOSE_CODES, PURPOSES, Button, FaultFlag
from drivers.tsp.common import ClearedBy
from simulators.command_vocabulary import StatusCommand
from simulators.shuffler.commands import (
    COMMANDS,
    BurstCommand,
    ClearCommand,
    Command,
    DeckCheckCommand,
    DeckCommand,
    DeliverCommand,
    DispenseCommand,
    FaultCommand,
    GroupsCommand,
    PressCommand,
    ReshuffleCommand,
    TrayCommand,
)
from simulators.shuffler.model import ShufflerModel
from simulators.tsp_device import SEVERITIES
from simulators.tsp_pty import TspPtyServer


class SimulatorServer(TspPtyServer[ShufflerModel]):
    """Serves one simulated shuffler on a pty until stopped."""

    COMMANDS = COMMANDS

    # ------------------------------------------------------------------ faults and control

    def apply(self, command: Command) -> dict[str, Any]:
        """Carry out one control command; return the reply fields (the device refuses what the
        dealer cannot do with a :class:`~simulators.errors.RefusedError`)."""
        reply = self._apply(command, self.now())
        self.kick()
        return reply

    def _apply(self, command: Command, now: float) -> dict[str, Any]:
        model = self.model
        if isinstance(command, FaultCommand):
            return self._fault(command, now)
        if isinstance(command, DeckCheckCommand):
            model.next_check = command.deck_check
        elif isinstance(command, DeckCommand):
            spec = command.deck
            model.config.order = (
                None if spec.order is None else tuple(parse_card(c) for c in spec.order)
            )
            model.config.seed = spec.seed
        elif isinstance(command, PressCommand):
            model.press(Button[command.press.upper()], now)
        elif isinstance(command, ClearCommand):
            if command.clear == "all":
                return {"cleared": model.clear_faults(0xFFFF, ClearedBy.OPERATOR)}
            return {"cleared": model.clear_code(FAULTS.code(command.clear), ClearedBy.OPERATOR)}
        elif isinstance(command, BurstCommand):
            model.burst(command.burst)
        elif isinstance(command, DispenseCommand):
            wanted = command.dispense
            code = PURPOSE_CODES[wanted.purpose]
            shuffle_id, group, cards = model.dealer_dispense(code, wanted.seat or 0, wanted.count)
            return {"shuffle_id": shuffle_id, "group": group, "cards": _cards(cards)}
        elif isinstance(command, TrayCommand):
            model.tray_gated = command.tray == "gated"
            if not model.tray_gated:
                while model.queued:  # opened: what waited goes out now
                    model.deliver()
        elif isinstance(command, DeliverCommand):
            shuffle_id, group, cards = model.deliver(command.deliver.count)
            return {"shuffle_id": shuffle_id, "group": group, "cards": _cards(cards)}
        elif isinstance(command, ReshuffleCommand):
            added = bytes(card_code(parse_card(card)) for card in command.reshuffle.add)
            return {"shuffle_id": model.reshuffle_stub(added, command.reshuffle.seed, now)}
        elif isinstance(command, StatusCommand):
            return self.snapshot(now)
        elif isinstance(command, GroupsCommand):
            return self.groups()
        return {}

    def _fault(self, command: FaultCommand, now: float) -> dict[str, Any]:
        model, kind, link = self.model, command.fault, self.device.link
        if self.device.inject(kind, command.rate, command.direction, command.seconds, now):
            return {}
        if kind == "unplug":
            self.unplug()
        elif kind == "replug":
            return {"path": self.replug()}
        elif kind in ("jam", "raise"):
            code = FAULTS.code(command.code or "JAM_INPUT")
            severity = SEVERITIES[command.severity]
            flags = FaultFlag.RECOVERABLE | FaultFlag.OPERATOR_ACTION
            return {"fault_id": model.raise_fault(code, severity, flags, command.detail)}
        elif kind in ("lid_open", "lid_close"):
            model.lid(kind == "lid_open")
        elif kind == "count_mismatch":
            model.next_count = 51 if command.count is None else command.count
        elif kind == "power_loss":
            model.power_loss(now)
            link.reboot()
            self.device.reset_transport()
        elif kind == "unapproved_firmware":
            # New firmware takes effect at the next boot: flash, then reset.
            model.set_firmware(model.firmware + b"\npatched build, not approved\n")
            model.power_loss(now)
            link.reboot()
        elif kind == "lying_firmware":
            model.set_firmware(model.firmware + b"\npatched\n", report=model.reported_hash)
        elif kind == "no_challenge":
            model.challenge_mode = "refuse"
        elif kind == "approved_firmware":
            model.challenge_mode = "answer"
        elif kind == "bad_commitment":
            model.tamper_reveal = True
        return {}

    def groups(self) -> dict[str, Any]:
        """The groups that left the tray of the deck in it, oldest first, with their faces."""
        shuffle_id, delivered = self.model.delivered()
        return {
            "shuffle_id": shuffle_id,
            "groups": [
                {
                    "group": g.group,
                    "purpose": PURPOSES[g.purpose].value,
                    "seat": g.seat or None,
                    "cards": _cards(g.cards),
                }
                for g in delivered
            ],
        }

    def snapshot(self, now: float) -> dict[str, Any]:
        """The simulator's state, for tests and the operator."""
        model = self.model
        return {
            "path": self.path,
            "plugged": not self.unplugged,
            "state": model.state.name,
            "boot_id": model.boot_id,
            "shuffle_id": model.shuffle_id,
            "faults": sorted(f.fault_id for f in model.faults.values()),
            "queued_events": self.device.link.queued_events,
            "tray": "gated" if model.tray_gated else "open",
            "host_groups": [
                {
                    "shuffle_id": g.shuffle_id,
                    "group": g.group,
                    "count": g.size,
                    "purpose": PURPOSES[g.purpose].value,
                    "seat": g.seat or None,
                }
                for g in model.queued
            ],
            "firmware_sha256": hashlib.sha256(model.firmware).hexdigest(),
            "link": self.device.link.stats.as_dict(),
            "corrupted": dict(self.device.corrupted),
            "truncated": self.device.truncated,
        }


def _cards(codes: bytes) -> list[str]:
    return [str(card_from_code(code)) for code in codes]

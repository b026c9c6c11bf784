"""A small floor for the reports' tests: three tables over two days of January 2026, each figure
of each report known by hand (tests/pit/test_reports_store.py says them).

The events are the tables' envelopes as the pit takes them (the ingest derives the hands,
holds and rulings), the births and deaths as its status topic brings them.

* T1, dealt by Dana: two hands on the 5th in the 10 o'clock hour (rake 3 and jackpot 1, pot 40;
  no rake, pot 10), one from 23:50 on the 5th to 00:10 on the 6th (rake 5, pot 60), a misdeal
  on the 6th after a SEAT-COUNT hold (reader zone seat:3) the floor's Fay confirmed in 20 s.
* T2, dealt by Eli: time collected (20) before a hand at 12:00 on the 5th (pot 30), a hand with
  a SHF-MID-HAND hold (a jam) Eli confirmed in 30 s (rake 2, pot 20), on the 6th a FLOP-PREM hold
  Fay overrode in 60 s (rake 4, jackpot 2, pot 100).
* T3, started by nobody named: a hand from 22:40 to 23:20 UTC on the 5th (00:20 on the 6th in
  Berlin; rake 7, pot 70), on the 6th a hand with a BOXED hold (zone seat:5) still open (rake 1,
  pot 8).
* Devices: T1's shuffler jams (JAM_INPUT) on the 5th, its lid opens (LID_OPEN) and it reboots
  on the 6th; T1's reader goes stale on the 5th and on the 6th; T2's reader reconnects on the 6th.
* Connections: T1 up from 00:00 to 12:00 and from 18:00 on the 5th on; T2 up from the 4th to
  06:00 on the 6th; T3 two overlapping connections (two journals) on the 6th, 00:00-12:00 and
  06:00-18:00.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from controller.pit.batches import EventIn
from controller.pit.store import Store
from tests.pit.test_store import event_in

FAY = {"person": "Fay", "role": "floor"}


def stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).timestamp()


@dataclass
class Table:
    """One table's events, numbered as it publishes them."""

    name: str
    dealer: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    hands: int = 0

    def event(
        self,
        ts: str,
        type_: str,
        data: dict[str, Any],
        *,
        hand: str | None = None,
        rules: tuple[str, ...] = (),
        by: dict[str, str] | None = None,
        severity: str = "info",
    ) -> None:
        seq = len(self.events) + 1
        body: dict[str, Any] = {
            "schema": "tablectl.event/1",
            "table_id": self.name,
            "epoch": "e1",
            "seq": seq,
            "event_id": f"{self.name}:e1:{seq}",
            "historical": False,
            "ts": ts,
            "hand_id": hand,
            "type": type_,
            "rules": list(rules),
            "severity": severity,
            "needs_confirm": False,
            "data": data,
        }
        if by is not None:
            body["by"] = by
        self.events.append(body)

    def hand(
        self,
        start: str,
        end: str,
        *,
        pot: int,
        rake: int = 0,
        jackpot: int = 0,
        time: int | None = None,
        hold: dict[str, Any] | None = None,
        misdeal: bool = False,
    ) -> str:
        """A hand started at ``start`` and ended at ``end``: its pots, its take, a hold."""
        self.hands += 1
        hand = f"{self.name}-{self.hands:05d}"
        dealer = {"person": self.dealer, "role": "dealer"} if self.dealer else None
        if time is not None:  # HOUSE-TIME: collected by the input that starts the hand
            self.event(
                start,
                "house.time.collected",
                {"seats": {"1": time}, "total": time, "paid_until": end},
                rules=("HOUSE-TIME",),
                by=dealer,
            )
        self.event(
            start,
            "hand.started",
            {
                "button": 1,
                "seats": [1, 2],
                "small_blind": 1,
                "big_blind": 2,
                "blinds": [1, 2],
                "ante": 0,
                "stacks": {"1": 200, "2": 200},
            },
            hand=hand,
            rules=("DE-1537-5/7",),
            by=dealer,
        )
        if hold is not None:
            self._hold(hand, hold)
        if misdeal:
            self.event(
                end,
                "hand.misdeal",
                {
                    "reason": "a seat read one card",
                    "rule": "SEAT-COUNT",
                    "returned": {"1": 1, "2": 2},
                    "button": 1,
                    "seats": [1, 2],
                },
                hand=hand,
                rules=("SEAT-COUNT",),
                by=FAY,
            )
            return hand
        if rake or jackpot:  # HOUSE-RAKE, HOUSE-DROP-JACKPOT: by the input that ends the hand
            self.event(
                end,
                "pot.rake.taken",
                {"rake": rake, "jackpot": jackpot, "pots": [rake], "total": rake + jackpot},
                hand=hand,
                rules=("HOUSE-RAKE",) + (("HOUSE-DROP-JACKPOT",) if jackpot else ()),
                by=dealer,
            )
        share = {"amount": pot, "eligible": [1, 2], "winners": {"1": pot}, "odd_chips": {}}
        self.event(
            end,
            "pot.awarded",
            {"pots": [share], "payouts": {"1": pot}},
            hand=hand,
            rules=("DE-1552",),
            by=dealer,
        )
        self.event(
            end,
            "hand.completed",
            {"stacks": {"1": 200 + pot, "2": 200 - pot}, "next_button": 2},
            hand=hand,
            rules=("RR-BB-ROT",),
            by=dealer,
        )
        return hand

    def _hold(self, hand: str, hold: dict[str, Any]) -> None:
        name = f"{hand}-h1"
        self.event(
            hold["raised"],
            "hand.hold",
            {
                "hold": name,
                "rule": hold["rule"],
                "reason": "held",
                "ruling": "continue",
                **hold.get("evidence", {}),
            },
            hand=hand,
            rules=(hold["rule"],),
            severity="hold",
        )
        if "ruled" not in hold:
            return
        how, who = hold["how"], hold["by"]
        if how == "floor":
            self.event(
                hold["ruled"],
                "floor.override",
                {"rule": hold["rule"], "decision": "redeal the flop", "hold": name},
                hand=hand,
                rules=(hold["rule"],),
                by=who,
            )
        self.event(
            hold["ruled"],
            "hand.resume",
            {"hold": name, "rule": hold["rule"], "decision": hold["decision"], "by": how},
            hand=hand,
            rules=(hold["rule"],),
            by=who,
        )

    def device(self, ts: str, **data: Any) -> None:
        self.event(ts, "device.status", data, severity="warn" if "fault" in data else "info")


def floor() -> dict[str, Table]:
    """The floor's three tables and their events (the module's description)."""
    t1, t2, t3 = Table("T1", "Dana"), Table("T2", "Eli"), Table("T3")
    t1.device("2026-01-05T09:00:00.000Z", device="shuffler", health="online", kind="shuffler")
    t1.hand("2026-01-05T10:00:00.000Z", "2026-01-05T10:02:00.000Z", pot=40, rake=3, jackpot=1)
    t1.hand("2026-01-05T10:30:00.000Z", "2026-01-05T10:31:00.000Z", pot=10)
    t1.device("2026-01-05T11:00:00.000Z", device="shuffler", fault="JAM_INPUT", fault_id=7)
    t1.device("2026-01-05T15:00:00.000Z", device="rfid-board", health="stale", kind="reader")
    t1.device("2026-01-05T15:01:00.000Z", device="rfid-board", health="online", kind="reader")
    t1.hand("2026-01-05T23:50:00.000Z", "2026-01-06T00:10:00.000Z", pot=60, rake=5)
    t1.device("2026-01-06T08:00:00.000Z", device="shuffler", fault="LID_OPEN", fault_id=8)
    t1.device("2026-01-06T08:05:00.000Z", device="shuffler", rebooted=True, boot_id=2)
    t1.hand(
        "2026-01-06T09:00:00.000Z",
        "2026-01-06T09:01:00.000Z",
        pot=0,
        misdeal=True,
        hold={
            "rule": "SEAT-COUNT",
            "raised": "2026-01-06T09:00:30.000Z",
            "ruled": "2026-01-06T09:00:50.000Z",
            "how": "confirm",
            "decision": "misdeal",
            "by": FAY,
            "evidence": {"zone": "seat:3", "count": 1, "expected": 2},
        },
    )
    t1.device("2026-01-06T16:00:00.000Z", device="rfid-board", health="stale", kind="reader")
    t2.hand("2026-01-05T12:00:00.000Z", "2026-01-05T12:05:00.000Z", pot=30, time=20)
    t2.hand(
        "2026-01-05T12:10:00.000Z",
        "2026-01-05T12:12:00.000Z",
        pot=20,
        rake=2,
        hold={
            "rule": "SHF-MID-HAND",
            "raised": "2026-01-05T12:11:00.000Z",
            "ruled": "2026-01-05T12:11:30.000Z",
            "how": "confirm",
            "decision": "manual_board",
            "by": {"person": "Eli", "role": "dealer"},
            "evidence": {"code": "JAM_INPUT", "groups": 2},
        },
    )
    t2.device("2026-01-06T10:00:00.000Z", device="rfid", health="reconnecting", kind="reader")
    t2.hand(
        "2026-01-06T13:00:00.000Z",
        "2026-01-06T13:03:00.000Z",
        pot=100,
        rake=4,
        jackpot=2,
        hold={
            "rule": "FLOP-PREM",
            "raised": "2026-01-06T13:01:00.000Z",
            "ruled": "2026-01-06T13:02:00.000Z",
            "how": "floor",
            "decision": "redeal the flop",
            "by": FAY,
            "evidence": {"street": "flop"},
        },
    )
    t3.hand("2026-01-05T22:40:00.000Z", "2026-01-05T23:20:00.000Z", pot=70, rake=7)
    t3.hand(
        "2026-01-06T20:00:00.000Z",
        "2026-01-06T20:01:00.000Z",
        pot=8,
        rake=1,
        hold={
            "rule": "BOXED",
            "raised": "2026-01-06T20:00:30.000Z",
            "evidence": {"zone": "seat:5"},
        },
    )
    return {t.name: t for t in (t1, t2, t3)}


#: Each connection (table, journal, bdseq), when its birth and its death (None: none yet) came.
CONNECTIONS = (
    ("T1", "j1", 1, "2026-01-05T00:00:00Z", "2026-01-05T12:00:00Z"),
    ("T1", "j1", 2, "2026-01-05T18:00:00Z", None),
    ("T2", "j2", 1, "2026-01-04T00:00:00Z", "2026-01-06T06:00:00Z"),
    ("T3", "j3", 1, "2026-01-06T00:00:00Z", "2026-01-06T12:00:00Z"),
    ("T3", "j4", 1, "2026-01-06T06:00:00Z", "2026-01-06T18:00:00Z"),
)


def events_in() -> list[EventIn]:
    """Every table's events, both views, as the ingest takes them."""
    return [
        event_in(body, stream)
        for table in floor().values()
        for body in table.events
        for stream in ("public", "secure")
    ]


def seed(store: Store) -> None:
    """The floor into ``store``: its events in batches of 9 (a hand's events may be in two),
    its births and deaths each as the pit heard it."""
    events = events_in()
    for i in range(0, len(events), 9):
        store.ingest(events[i : i + 9])
    for table, journal, bdseq, up, down in CONNECTIONS:
        for state, heard in (("online", up), ("offline", down)):
            if heard is None:
                continue
            body = {"state": state, "bdseq": bdseq, "journal": journal, "epoch": "e1", "ts": up}
            store.record_statuses([(table, body)], stamp(heard))

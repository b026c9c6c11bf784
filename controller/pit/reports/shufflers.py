"""``shufflers``: the shuffler randomness audit (SHF-RAND) over a report's span, per shuffler.

For each shuffler (a table's device id, controller/pit/reports/shuffler_decks.py) with decks
revealed in the span: the three tests of controller/pit/reports/randomness.py over those decks
(card × position, position changes between consecutive decks, adjacent pairs of one suit), each
with its statistic, degrees of freedom, p-value, Bonferroni-corrected p-value and the decks it
rests on, or "not enough decks yet" below what it needs; the decks whose order an earlier deck
had; the audit's alarm on the shuffler now, if any; and the card × position counts of the
shufflers with the smallest p-values (at most :data:`HEAT_MAPS`), drawn as heat maps. The level
and window are the audit's (``[reports] alpha`` and ``window``, as the audit last ran).

Computed from the tallies of the shufflers' floor days kept in the store
(controller/pit/reports/shuffler_tallies.py) and their decks where those do not hold.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from controller.cards import STANDARD_DECK
from controller.pit.db import Db
from controller.pit.reports.audit_rule import Rule
from controller.pit.reports.charts import Chart, heat_map
from controller.pit.reports.params import ReportQuery
from controller.pit.reports.randomness import DECK, TESTS, Check, Tally, checks
from controller.pit.reports.registry import Part, Report, ReportOut, reading
from controller.pit.reports.shuffler_audit import stored_rule
from controller.pit.reports.shuffler_tallies import days, deck_counts, kept, span_tally
from controller.pit.reports.sql import among, snapshot

#: Shufflers whose card × position table the report carries and draws (the smallest p first).
HEAT_MAPS = 4


class CheckRow(BaseModel):
    """One test of one shuffler over the span."""

    table_id: str
    device: str
    test: str = Field(description="positions, changes or suits")
    decks: int = Field(description="the decks it rests on (changes: consecutive pairs)")
    needed: int = Field(description="the decks (pairs) it needs before it says anything")
    statistic: float | None = Field(description="chi-square (null: not enough decks yet)")
    df: int | None = Field(description="its degrees of freedom")
    p_value: float | None = Field(description="two-sided")
    corrected: float | None = Field(description="Bonferroni: p × the number of tests, at most 1")
    result: str = Field(description="fails, passes, or not enough decks yet")


class ShufflerRow(BaseModel):
    """One shuffler over the span."""

    table_id: str
    device: str
    decks: int = Field(description="whole decks revealed in the span")
    positions_p: float | None
    changes_p: float | None
    suits_p: float | None
    smallest_corrected: float | None = Field(description="the smallest corrected p-value")
    repeats: int = Field(description="decks whose order an earlier deck had (must be none)")
    result: str = Field(description="fails, passes, or not enough decks yet")
    alarm: str | None = Field(description="the audit's alarm on the shuffler now (null: none)")


class RepeatRow(BaseModel):
    """A deck revealed in the span whose order an earlier deck had."""

    table_id: str
    device: str
    ts: str
    epoch: str
    seq: int
    repeat_of: str = Field(description="the earlier deck's event id (table:epoch:seq)")


class HeatOut(BaseModel):
    """A shuffler's card × position table."""

    table_id: str
    device: str
    decks: int
    cards: list[str] = Field(description="the rows: the cards, 2c … As")
    counts: list[list[int]] = Field(description="decks with each card at positions 1 … 52")


class PositionRow(BaseModel):
    """One cell of a card × position table (CSV)."""

    table_id: str
    device: str
    card: str
    position: int
    count: int


class ShufflersReport(ReportOut):
    """``shufflers``."""

    alpha: float = Field(description="the audit's level, before the Bonferroni correction")
    tests: int = Field(description="the p-value tests of each shuffler (the correction)")
    window: int = Field(description="the decks the audit's alarm rests on")
    shufflers: list[ShufflerRow]
    checks: list[CheckRow]
    repeats: list[RepeatRow]
    heat: list[HeatOut] = Field(
        description=f"the card × position tables of at most {HEAT_MAPS} shufflers, the "
        "smallest corrected p-value first"
    )
    read: int = Field(description="decks read one by one (the rest from the kept day tallies)")


def result(check: Check, alpha: float) -> str:
    """A test's verdict in words."""
    if check.corrected is None:
        return f"not enough decks yet ({check.decks} of {check.needed})"
    return "fails" if check.corrected < alpha else "passes"


def compute(db: Db, query: ReportQuery, head: dict[str, Any]) -> ShufflersReport:
    rule = stored_rule(db)
    spans = days(query.since, query.until, query.calendar)
    tables, table_params = among("table_id", query.tables)
    with snapshot(db):
        counts = deck_counts(db, spans, query.tables)
        stored = kept(db, counts, spans, query.tables)
        alarms = {
            (str(t), str(d)): str(a)
            for t, d, a in db.all(
                "SELECT table_id, device, alarm FROM shufflers "  # noqa: S608
                f"WHERE alarm IS NOT NULL{tables}",
                table_params,
            )
        }
        repeats = [
            RepeatRow(
                table_id=str(r[0]),
                device=str(r[1]),
                ts=str(r[2]),
                epoch=str(r[3]),
                seq=int(r[4]),
                repeat_of=str(r[5]),
            )
            for r in db.all(
                "SELECT table_id, device, ts, epoch, seq, repeat_of FROM shuffler_decks "  # noqa: S608
                f"WHERE repeat_of IS NOT NULL AND ts >= ? AND ts < ?{tables} ORDER BY ts",
                [query.since_text, query.until_text, *table_params],
            )
        ]
    repeated: dict[tuple[str, str], int] = {}
    for r in repeats:
        repeated[r.table_id, r.device] = repeated.get((r.table_id, r.device), 0) + 1
    rows: list[ShufflerRow] = []
    check_rows: list[CheckRow] = []
    tallies: list[tuple[float, tuple[str, str], Tally]] = []
    read = 0
    for shuffler in sorted(counts):
        found = span_tally(db, shuffler, spans, counts[shuffler], stored)
        read += found.read
        done = checks(found.tally)
        corrected = [c.corrected for c in done if c.corrected is not None]
        smallest = min(corrected) if corrected else None
        repeats_here = repeated.get(shuffler, 0)
        if (smallest is not None and smallest < rule.alpha) or repeats_here:
            verdict = "fails"
        elif smallest is None:
            verdict = "not enough decks yet"
        else:
            verdict = "passes"
        p = {c.test: c.p_value for c in done}
        rows.append(
            ShufflerRow(
                table_id=shuffler[0],
                device=shuffler[1],
                decks=found.tally.decks,
                positions_p=p["positions"],
                changes_p=p["changes"],
                suits_p=p["suits"],
                smallest_corrected=smallest,
                repeats=repeats_here,
                result=verdict,
                alarm=alarms.get(shuffler),
            )
        )
        check_rows.extend(
            CheckRow(
                table_id=shuffler[0],
                device=shuffler[1],
                test=c.test,
                decks=c.decks,
                needed=c.needed,
                statistic=None if c.statistic is None else round(c.statistic, 6),
                df=c.df,
                p_value=c.p_value,
                corrected=c.corrected,
                result=result(c, rule.alpha),
            )
            for c in done
        )
        tallies.append((2.0 if smallest is None else smallest, shuffler, found.tally))
    tallies.sort(key=lambda item: (item[0], item[1]))
    heat = [
        HeatOut(
            table_id=shuffler[0],
            device=shuffler[1],
            decks=t.decks,
            cards=list(STANDARD_DECK),
            counts=[t.counts[card * DECK : (card + 1) * DECK] for card in range(DECK)],
        )
        for _, shuffler, t in tallies[:HEAT_MAPS]
    ]
    return ShufflersReport(
        **head,
        alpha=rule.alpha,
        tests=len(TESTS),
        window=rule.window,
        shufflers=rows,
        checks=check_rows,
        repeats=repeats,
        heat=heat,
        read=read,
    )


def positions(report: ShufflersReport) -> list[PositionRow]:
    """The heat maps' cells, one row each."""
    return [
        PositionRow(table_id=h.table_id, device=h.device, card=card, position=position, count=count)
        for h in report.heat
        for card, row in zip(h.cards, h.counts, strict=True)
        for position, count in enumerate(row, 1)
    ]


def charts(report: ShufflersReport) -> list[Chart]:
    out = []
    for index, h in enumerate(report.heat):
        expected = h.decks / DECK if h.decks else 0.0
        out.append(
            heat_map(
                f"shuffler-positions-{index + 1}",
                f"{h.table_id}/{h.device}: where each card was",
                f"How many of the {h.decks} decks {h.table_id}'s shuffler {h.device} revealed "
                f"from {report.since} to {report.until} had each card (a row, 2c to As) at each "
                f"position (a column, 1 = the top). A fair shuffler's cells all hover around "
                f"{expected:.1f}; a dark or a pale line, or a lone dark cell, is a card or a "
                "position it favours.",
                h.cards,
                [str(p) for p in range(1, DECK + 1)],
                [[float(v) for v in row] for row in h.counts],
                unit="decks",
                corner="card \\ position",
            )
        )
    return out


def _stored_rule_note() -> str:
    rule = Rule()
    return (
        f"A test fails when its p-value times {len(TESTS)} (Bonferroni) is below the audit's "
        f"level ([reports] alpha, {rule.alpha:g} by default); below the decks it needs it says "
        "so instead of a p-value."
    )


REPORT: Report[ShufflersReport] = Report(
    name="shufflers",
    title="Shuffler randomness",
    summary="Per shuffler over its revealed decks: card × position, position changes between "
    "decks and suit runs against a fair shuffle (chi-square), repeated orders, and the audit's "
    "alarms.",
    model=ShufflersReport,
    compute=compute,
    parts=(
        Part("shufflers", "Each shuffler", ShufflerRow, lambda r: r.shufflers),
        Part("checks", "Each test of each shuffler", CheckRow, lambda r: r.checks),
        Part("repeats", "Decks whose order repeats an earlier one", RepeatRow, lambda r: r.repeats),
        Part("positions", "The card × position tables drawn", PositionRow, positions),
    ),
    template="report_shufflers.html",
    charts=charts,
    roles=frozenset({"floor", "surveillance", "pit"}),
    reads=reading("decks"),
    notes=(
        "Only decks a table revealed (deck.revealed, on the secure stream: [pit] secure = true) "
        "and whole (52 cards) are counted; each shuffler is its table and device id.",
        _stored_rule_note(),
        "Repeated orders count whatever the level: a fair shuffle repeats one in 52! ≈ 8·10⁶⁷.",
        "docs/reports.md says what each test is, the numbers of decks they need, and how soon "
        "the audit catches a weak or a stuck shuffler.",
    ),
)

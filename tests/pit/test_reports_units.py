"""The reports' pure parts: the floor's periods and the buckets that put a row in one, the checked
parameters, the CSV, the SVG charts."""

from __future__ import annotations

import csv
import io
import itertools
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from controller.pit.reports.charts import (
    CHART_ID,
    Series,
    bar_chart,
    heat_map,
    line_chart,
    nice_ticks,
    number,
)
from controller.pit.reports.csvfile import cell, csv_text, disposition, wants_csv
from controller.pit.reports.params import MAX_TABLES, ParamError, parse_query, parse_tables
from controller.pit.reports.periods import (
    Calendar,
    bucket_name,
    buckets,
    periods,
    rfc3339,
)

SVG = "{http://www.w3.org/2000/svg}"
ZONES = ("UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe")
SHIFTS = (("day", time(6)), ("swing", time(14)), ("grave", time(22)))


def calendar(zone: str, day_start: time = time(0), shifts: tuple = SHIFTS) -> Calendar:  # type: ignore[type-arg]
    return Calendar(zone=ZoneInfo(zone), day_start=day_start, shifts=shifts)


# ------------------------------------------------------------------ periods


def test_a_day_of_the_floor_follows_its_clock_across_daylight_saving_time() -> None:
    """Berlin's day of the spring change is 23 hours, of the autumn change 25."""
    berlin = calendar("Europe/Berlin")
    spring = periods(
        datetime(2026, 3, 28, 23, tzinfo=UTC), datetime(2026, 3, 29, 22, tzinfo=UTC), "day", berlin
    )
    assert [(p.name, p.seconds / 3600) for p in spring] == [("2026-03-29", 23.0)]
    autumn = periods(
        datetime(2026, 10, 24, 22, tzinfo=UTC),
        datetime(2026, 10, 25, 23, tzinfo=UTC),
        "day",
        berlin,
    )
    assert [(p.name, p.seconds / 3600) for p in autumn] == [("2026-10-25", 25.0)]


def test_months_and_the_floor_s_day_start() -> None:
    floor = calendar("UTC", day_start=time(6))
    found = periods(
        datetime(2026, 1, 31, 12, tzinfo=UTC), datetime(2026, 3, 1, 7, tzinfo=UTC), "month", floor
    )
    assert [(p.name, rfc3339(p.start), rfc3339(p.end)) for p in found] == [
        ("2026-01", "2026-01-31T12:00:00.000Z", "2026-02-01T06:00:00.000Z"),
        ("2026-02", "2026-02-01T06:00:00.000Z", "2026-03-01T06:00:00.000Z"),
        ("2026-03", "2026-03-01T06:00:00.000Z", "2026-03-01T07:00:00.000Z"),
    ]


def test_a_bucket_is_an_hour_where_every_edge_is_on_the_hour_else_a_quarter() -> None:
    since, until = datetime(2026, 1, 5, tzinfo=UTC), datetime(2026, 1, 8, tzinfo=UTC)
    utc = buckets(periods(since, until, "shift", calendar("UTC")))
    assert utc.minutes == 60
    assert utc.sql("ts") == "substr(ts, 1, 13)"
    kolkata = buckets(periods(since, until, "day", calendar("Asia/Kolkata")))  # UTC+05:30
    assert kolkata.minutes == 15
    assert bucket_name(datetime(2026, 1, 5, 18, 44, tzinfo=UTC), 15) == "2026-01-05T18:2"


@settings(max_examples=150, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    group=st.sampled_from(("day", "shift", "month")),
    start=st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2027, 12, 1)),
    hours=st.integers(min_value=1, max_value=24 * 70),
    offsets=st.lists(st.floats(min_value=0, max_value=1, exclude_max=True), max_size=20),
    day_start=st.sampled_from((time(0), time(6), time(5, 30))),
)
def test_the_periods_cover_the_span_and_every_instant_s_bucket_is_its_period(
    zone: str,
    group: str,
    start: datetime,
    hours: int,
    offsets: list[float],
    day_start: time,
) -> None:
    """Whatever the zone (half and quarter hours from UTC, daylight saving time) and the day's
    start: the periods are contiguous, cover [since, until), and the bucket of any instant in
    it maps to the period that holds it."""
    floor = calendar(zone, day_start)
    since = start.replace(tzinfo=UTC)
    until = since + timedelta(hours=hours)
    found = periods(since, until, group, floor)  # type: ignore[arg-type]
    assert found[0].start == since
    assert found[-1].end == until
    assert all(a.end == b.start and a.start < a.end for a, b in itertools.pairwise(found))
    assert len({p.name for p in found}) == len(found)
    mapping = dict(buckets(found).keys)
    minutes = buckets(found).minutes
    for fraction in offsets:
        moment = since + (until - since) * fraction
        if moment >= until:  # rounded to the microsecond
            continue
        index = mapping[bucket_name(moment, minutes)]
        assert found[index].start <= moment < found[index].end or (
            # the first bucket may begin before since: its rows before since are not asked for
            index == 0 and moment < found[0].end
        )


# ------------------------------------------------------------------ parameters


def ask(**given: str | None) -> object:
    return parse_query(
        since=given.get("since"),
        until=given.get("until"),
        tables=given.get("tables"),
        group=given.get("group"),
        groups=("day", "shift", "month"),
        calendar=calendar("Europe/Berlin"),
        max_days=31,
        now=datetime(2026, 1, 10, 12, tzinfo=UTC),
    )


def test_the_default_period_is_the_floor_s_last_seven_days() -> None:
    query = parse_query(
        since=None,
        until=None,
        tables=None,
        group=None,
        groups=("day",),
        calendar=calendar("Europe/Berlin"),
        max_days=31,
        now=datetime(2026, 1, 10, 12, tzinfo=UTC),
    )
    assert (rfc3339(query.since), rfc3339(query.until)) == (
        "2026-01-03T23:00:00.000Z",
        "2026-01-10T23:00:00.000Z",
    )
    assert [p.name for p in query.periods][::6] == ["2026-01-04", "2026-01-10"]
    assert query.group == "day"


def test_dates_times_and_wall_clock_times() -> None:
    exact = parse_query(
        since="2026-01-05T06:00:00+01:00",
        until="2026-01-05T18:00Z",
        tables=" T1, T2 ,T1",
        group="shift",
        groups=("day", "shift"),
        calendar=calendar("Europe/Berlin"),
        max_days=31,
    )
    assert rfc3339(exact.since) == "2026-01-05T05:00:00.000Z"
    assert rfc3339(exact.until) == "2026-01-05T18:00:00.000Z"
    assert exact.tables == ("T1", "T2")
    wall = parse_query(
        since="2026-07-05T06:00",
        until="2026-07-06",
        tables=None,
        group=None,
        groups=(),
        calendar=calendar("Europe/Berlin"),
        max_days=31,
    )
    assert rfc3339(wall.since) == "2026-07-05T04:00:00.000Z"  # summer: UTC+2
    assert rfc3339(wall.until) == "2026-07-06T22:00:00.000Z"  # through the end of the 6th
    assert wall.group is None
    assert wall.periods == ()


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"since": "2026-13-01"}, "since: '2026-13-01' is neither a date"),
        ({"until": "yesterday"}, "until: 'yesterday' is neither a date"),
        ({"since": "2026-01-05", "until": "2026-01-04"}, "must be after since"),
        ({"since": "2025-11-01", "until": "2026-01-04"}, "a report covers 31 at most"),
        ({"tables": "T1,,T2"}, "tables: '' is not a table id"),
        ({"tables": "T1,T 2"}, "tables: 'T 2' is not a table id"),
        ({"group": "week"}, "group: 'week' is not one of day, shift, month"),
        ({"since": "x" * 100}, "since: too long"),
    ],
)
def test_a_parameter_that_cannot_be_used_is_named(given: dict[str, str], message: str) -> None:
    with pytest.raises(ParamError, match=message.replace("(", r"\(")):
        ask(**given)


def test_a_report_not_grouped_by_period_refuses_a_group() -> None:
    with pytest.raises(ParamError, match="group: the rulings report is not grouped by period"):
        parse_query(
            since=None,
            until=None,
            tables=None,
            group="day",
            groups=(),
            calendar=calendar("UTC"),
            max_days=31,
            report="the rulings report",
        )


def test_too_many_tables_are_refused() -> None:
    assert len(parse_tables(",".join(f"T{i}" for i in range(MAX_TABLES)))) == MAX_TABLES
    with pytest.raises(ParamError, match=f"{MAX_TABLES + 1} tables named"):
        parse_tables(",".join(f"T{i}" for i in range(MAX_TABLES + 1)))


# ------------------------------------------------------------------ CSV


class Row(BaseModel):
    name: str
    count: int
    rate: float | None


def test_csv_is_rfc_4180_and_runs_nothing_in_a_spreadsheet() -> None:
    rows = [
        Row(name='a "quoted", name', count=1, rate=None),
        Row(name="two\nlines", count=2, rate=0.5),
        Row(name="=HYPERLINK(1)", count=-3, rate=-1.5),
    ]
    text = csv_text(("name", "count", "rate"), rows)
    assert text.startswith("name,count,rate\r\n")
    assert '"a ""quoted"", name",1,\r\n' in text
    assert '"two\nlines",2,0.5\r\n' in text
    assert "'=HYPERLINK(1),-3,-1.5\r\n" in text  # a number stays a number
    assert list(csv.reader(io.StringIO(text, newline=""))) == [
        ["name", "count", "rate"],
        ['a "quoted", name', "1", ""],
        ["two\nlines", "2", "0.5"],
        ["'=HYPERLINK(1)", "-3", "-1.5"],
    ]
    assert cell("@SUM(A1)") == "'@SUM(A1)"
    assert disposition("drop", "grid", "2026-01-01", "2026-01-31") == (
        'attachment; filename="drop-grid-2026-01-01-2026-01-31.csv"'
    )


@pytest.mark.parametrize(
    ("fmt", "accept", "csv_wanted"),
    [
        (None, None, False),
        ("csv", "application/json", True),
        ("JSON", "text/csv", False),
        (None, "text/csv", True),
        (None, "text/csv;q=0.5, application/json", False),
        (None, "application/json;q=0.4, text/csv;q=0.9", True),
        (None, "text/html,application/xhtml+xml,*/*;q=0.8", False),
        (None, "text/csv;q=0", False),
    ],
)
def test_csv_is_asked_by_format_or_accept(
    fmt: str | None, accept: str | None, csv_wanted: bool
) -> None:
    assert wants_csv(fmt, accept) is csv_wanted


def test_a_format_that_is_neither_json_nor_csv_is_named() -> None:
    with pytest.raises(ValueError, match="format: 'xml' is not json or csv"):
        wants_csv("xml", None)


# ------------------------------------------------------------------ charts


def parsed(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def test_a_bar_chart_has_a_bar_per_value_its_title_and_description_and_its_numbers() -> None:
    chart = bar_chart(
        "c-1",
        "Drop <by> day",
        'Rake & "jackpot"',
        ["2026-01-05", "<script>alert(1)</script>"],
        [Series("rake", (3.0, 12.0)), Series("jackpot", (1.0, None))],
        unit="chips",
        label_name="day",
        reference=("floor", 5.0),
    )
    root = parsed(chart.svg)
    assert root.get("role") == "img"
    assert root.get("aria-labelledby") == "c-1-title c-1-desc"
    assert root.find(f"{SVG}title").text == "Drop <by> day"  # type: ignore[union-attr]
    assert root.find(f"{SVG}desc").text == 'Rake & "jackpot"'  # type: ignore[union-attr]
    bars = root.findall(f".//{SVG}rect[@class='bar']")
    assert [(b.get("data-series"), b.get("data-value")) for b in bars] == [
        ("rake", "3"),
        ("rake", "12"),
        ("jackpot", "1"),
    ]
    assert "<script>" not in chart.svg
    assert chart.columns == ("day", "rake", "jackpot")
    assert chart.rows == (
        ("2026-01-05", "3", "1"),
        ("<script>alert(1)</script>", "12", ""),
        ("floor", "5", "5"),
    )
    assert root.find(f".//{SVG}g[@class='reference']") is not None
    heights = {b.get("data-value"): float(b.get("height") or 0) for b in bars}
    assert heights["12"] == pytest.approx(4 * heights["3"])  # from zero, to scale


def test_a_line_chart_has_a_point_per_value_and_a_gap_where_none() -> None:
    chart = line_chart("c-2", "T1", "drop", ["a", "b", "c", "d"], [Series("drop", (1, 2, None, 4))])
    root = parsed(chart.svg)
    assert len(root.findall(f".//{SVG}circle[@class='point']")) == 3
    assert len(root.findall(f".//{SVG}polyline")) == 1  # a, b: a line; d alone: a point


def test_a_heat_map_has_every_cell_and_an_empty_chart_says_so() -> None:
    cards = [f"{r}{s}" for s in "cdhs" for r in "23456789TJQKA"]
    values = [[float((i * 52 + j) % 7) for j in range(52)] for i in range(52)]
    values[0][0] = None  # type: ignore[call-overload]
    chart = heat_map(
        "c-3", "Card × position", "counts", cards, [str(p) for p in range(1, 53)], values
    )
    root = parsed(chart.svg)
    assert len(root.findall(f".//{SVG}rect[@class='cell']")) == 52 * 52 - 1
    assert len(root.findall(f".//{SVG}rect[@class='cell empty']")) == 1
    assert len(chart.rows) == 52
    empty = bar_chart("c-4", "None", "nothing", [], [Series("x", ())])
    assert "Nothing in this period" in empty.svg
    with pytest.raises(ValueError, match="not a chart id"):
        bar_chart("Bad id", "t", "d", [], [])
    with pytest.raises(ValueError, match="2 values for 1 labels"):
        line_chart("c-5", "t", "d", ["a"], [Series("x", (1, 2))])


@given(
    st.lists(
        st.text(st.characters(blacklist_characters="\r"), max_size=30), min_size=1, max_size=12
    ),
    st.lists(st.floats(min_value=0, max_value=1e9) | st.none(), min_size=12, max_size=12),
)
def test_any_text_and_value_make_well_formed_svg(
    labels: list[str], values: list[float | None]
) -> None:
    """Every text escaped (the names come from the tables): the chart is XML whatever the
    labels, and each bar's and point's own title reads its label back (a character XML does
    not allow as U+FFFD)."""
    series = Series("s<&>\"'", tuple(values[: len(labels)]))
    for chart, mark in (
        (bar_chart("p-1", "t<", "d&", labels, [series]), "rect"),
        (line_chart("p-2", "t>", "d'", labels, [series]), "circle"),
    ):
        root = parsed(chart.svg)
        titles = [m.find(f"{SVG}title") for m in root.iter(f"{SVG}{mark}") if m.get("data-value")]
        shown = [label for label, v in zip(labels, series.values, strict=False) if v is not None]
        assert len(titles) == len(shown)
        for title, label in zip(titles, shown, strict=True):
            assert title is not None
            assert (title.text or "").startswith(f"{escaped_back(label)}, s<&>\"': ")
    assert CHART_ID.match("p-1")


def escaped_back(text: str) -> str:
    """What a text reads as in the chart: the characters XML does not allow, U+FFFD."""
    return "".join(
        "\ufffd"
        if (ord(c) < 32 and c not in "\t\n") or 0xD800 <= ord(c) <= 0xDFFF or c in "\ufffe\uffff"
        else c
        for c in text
    )


def test_ticks_and_numbers() -> None:
    assert nice_ticks(12) == [0, 5, 10, 15]
    assert nice_ticks(3, whole=True) == [0, 1, 2, 3]
    assert nice_ticks(0) == [0.0, 1.0]
    # a top so small that its step is no float: hypothesis found 5e-324 raising ValueError
    assert nice_ticks(5e-324) == [0.0, 1.0]
    assert nice_ticks(1e-309) == [0.0, 1.0]
    assert nice_ticks(1e-300) == pytest.approx([0.0, 2e-301, 4e-301, 6e-301, 8e-301, 1e-300])
    assert (number(1234), number(2.5), number(0.125), number(None)) == ("1,234", "2.5", "0.12", "")

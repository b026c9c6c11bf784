"""The line protocol: any bytes parse without raising, messages survive a round trip, and a
stream is cut into the same lines however it is chunked."""

from __future__ import annotations

from typing import get_args

from hypothesis import given
from hypothesis import strategies as st

from tablectl_example_driver.protocol import (
    Arrive,
    Clear,
    Depart,
    Fault,
    Hello,
    LineBuffer,
    Message,
    Ping,
    Present,
    Rejected,
    format_message,
    parse_line,
)

words = st.text(
    st.characters(codec="utf-8", exclude_categories=("Z", "C")), min_size=1, max_size=12
).filter(lambda w: not w.startswith("#"))
uids = st.binary(min_size=7, max_size=7).map(bytes.hex)
messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(Hello, words, st.one_of(st.just(""), words)),
    st.builds(Present, words, st.lists(uids, max_size=5).map(tuple)),
    st.builds(Arrive, words, uids),
    st.builds(Depart, words, uids),
    st.builds(Fault, words, st.lists(words, max_size=3).map(" ".join)),
    st.builds(Clear, words),
    st.just(Ping()),
)


def test_each_message() -> None:
    assert parse_line(b"hello ACME-R9 2.1") == Hello("ACME-R9", "2.1")
    assert parse_line(b"present A1 04:A1:B2:C3:D4:E5:80 04a1b2c3\r") == Present(
        "A1", ("04a1b2c3d4e580", "04a1b2c3")
    )
    assert parse_line(b"ARRIVE 3 04A1B2C3") == Arrive("3", "04a1b2c3")
    assert parse_line(b"depart 3\t04a1b2c3") == Depart("3", "04a1b2c3")
    assert parse_line(b"fault RF_FRONTEND antenna 3 open") == Fault("RF_FRONTEND", "antenna 3 open")
    assert parse_line(b"clear RF_FRONTEND") == Clear("RF_FRONTEND")
    assert parse_line(b"ping") == Ping()
    assert parse_line(b"   ") is None
    assert parse_line(b"# a comment") is None


def test_bad_lines_say_why() -> None:
    assert parse_line(b"arrive 3") == Rejected("arrive takes 2 words, not 1", "arrive 3")
    bad_uid = parse_line(b"arrive 3 zz")
    assert isinstance(bad_uid, Rejected)
    assert "not a tag UID" in bad_uid.reason
    short = parse_line(b"arrive 3 0102")
    assert isinstance(short, Rejected)
    assert "4, 7, 8 or 10 bytes" in short.reason
    assert parse_line(b"explode now") == Rejected("unknown message 'explode'", "explode now")
    assert parse_line(b"ping pong") == Rejected("ping takes 0 words, not 1", "ping pong")


@given(messages)
def test_a_message_survives_its_line(message: Message) -> None:
    line = format_message(message)
    assert line.endswith(b"\n")
    assert parse_line(line[:-1]) == message


@given(st.binary(max_size=200))
def test_any_bytes_parse_without_raising(data: bytes) -> None:
    result = parse_line(data)
    assert result is None or isinstance(result, (Rejected, *get_args(Message)))


lines_without_newline = st.binary(max_size=30).map(lambda b: b.replace(b"\n", b""))


@given(st.lists(lines_without_newline, max_size=10), st.data())
def test_chunking_does_not_change_the_lines(lines: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(line + b"\n" for line in lines)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    buffer = LineBuffer(max_line=1000)
    got: list[bytes] = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        got += buffer.feed(stream[start:end])
    assert got == lines
    assert buffer.overlong == 0


def test_an_overlong_line_is_dropped_whole_and_the_next_one_read() -> None:
    buffer = LineBuffer(max_line=8)
    assert buffer.feed(b"ping\n0123456789") == [b"ping"]
    assert buffer.feed(b"0123456789") == []
    assert buffer.feed(b"tail of it\nclear X\n") == [b"clear X"]
    assert buffer.feed(b"123456789\nping\n") == [b"ping"]
    assert buffer.overlong == 2

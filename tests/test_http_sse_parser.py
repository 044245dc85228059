"""The SSE parser (mcpsync.transports.http.sse_parser): WHATWG vectors, sseclient-py's gaps, chunking property."""

from __future__ import annotations

import pytest

from mcpsync.exceptions import MessageTooLarge
from mcpsync.transports.http.sse_parser import SSEEvent, SSEParser


def parse(*chunks: bytes, **kw: int) -> tuple[list[SSEEvent], SSEParser]:
    parser = SSEParser(**kw)
    events: list[SSEEvent] = []
    for chunk in chunks:
        events += parser.feed(chunk)
    return events, parser


def datas(*chunks: bytes) -> list[str]:
    return [e.data for e in parse(*chunks)[0]]


def test_multiline_data_and_line_endings() -> None:
    assert datas(b"data: a\ndata: b\n\n") == ["a\nb"]
    assert datas(b"data: a\r\ndata: b\r\n\r\n") == ["a\nb"]
    assert datas(b"data: a\rdata: b\r\r") == ["a\nb"]
    assert datas(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n") == ["a\nb"]  # CRLF split across chunks
    assert datas(b"data:  two spaces\n\n") == [" two spaces"]
    assert datas(b"data\n\n") == [""]
    assert datas(b"data: 1\n\ndata: 2\n\n") == ["1", "2"]  # two events in one chunk


def test_fields_comments_and_types() -> None:
    events, parser = parse(b": keep-alive\n\nevent: endpoint\ndata: /m\nunknown: x\n\n")
    assert events == [SSEEvent("endpoint", "/m", "")]
    assert parser.comments == 1


def test_ids_persist_update_without_data_clear_and_ignore_nul() -> None:
    events, parser = parse(b"id: 1\n\n")
    assert events == [] and parser.last_event_id == "1" and parser.saw_id  # id-only event kept
    events, parser = parse(b"id: 1\ndata: a\n\ndata: b\n\n")
    assert [e.id for e in events] == ["1", "1"]
    events, parser = parse(b"id: 1\n\nid\n\n")
    assert parser.last_event_id == ""
    events, parser = parse(b"id: 1\n\nid: a\x00b\n\n")
    assert parser.last_event_id == "1"


def test_retry_only_when_all_digits() -> None:
    assert parse(b"retry: 500\n\n")[1].retry == 500  # a retry-only event is not lost
    assert parse(b"retry: abc\n\n")[1].retry is None
    assert parse(b"retry: 5x\n\n")[1].retry is None
    assert parse(b"retry: 10\n\nretry: -1\n\n")[1].retry == 10


def test_bom_is_stripped_even_when_split() -> None:
    assert datas(b"\xef\xbb\xbfdata: first\n\n") == ["first"]
    assert datas(b"\xef", b"\xbb\xbfdata: first\n\n") == ["first"]


def test_truncated_last_event_is_discarded() -> None:
    assert datas(b"data: 1\n\ndata: {\"trunc") == ["1"]


def test_multibyte_utf8_split_across_chunks() -> None:
    raw = "data: héllo €\n\n".encode()
    assert datas(*[raw[i:i + 1] for i in range(len(raw))]) == ["héllo €"]


def test_event_size_cap() -> None:
    with pytest.raises(MessageTooLarge):
        parse(b"data: " + b"x" * 100 + b"\n\n", max_event_bytes=64)
    with pytest.raises(MessageTooLarge):  # caught before the line even ends
        parse(b"data: " + b"x" * 100, max_event_bytes=64)
    assert datas(b"data: " + b"x" * 50 + b"\n\n") == ["x" * 50]


@pytest.mark.timeout(30)
def test_multi_megabyte_event_in_small_chunks_is_linear() -> None:
    # sseclient-py re-concatenates its buffer per chunk: quadratic here.
    payload = b"data: " + b"y" * (16 * 1024 * 1024) + b"\n\n"
    parser = SSEParser(max_event_bytes=64 * 1024 * 1024)
    events = []
    for i in range(0, len(payload), 4096):
        events += parser.feed(payload[i:i + 4096])
    assert len(events) == 1 and len(events[0].data) == 16 * 1024 * 1024


def test_sseclient_py_gaps_that_made_us_write_our_own() -> None:
    """Evidence for docs/transports.rst: sseclient-py 1.9.0 on the same streams."""
    sseclient = pytest.importorskip("sseclient")

    def theirs(*chunks: bytes) -> list[tuple[object, str, object]]:
        return [(e.id, e.data, e.retry) for e in sseclient.SSEClient(iter(chunks)).events()]

    # retry-only and id-only events vanish: the MCP "retry before close" signal is lost
    assert theirs(b"retry: 500\n\n", b"id: 7\n\n", b"data: x\n\n") == [(None, "x", None)]
    # a leading BOM drops the first event
    assert theirs(b"\xef\xbb\xbfdata: first\n\n", b"data: second\n\n") == [(None, "second", None)]
    # a truncated final event is dispatched (half a JSON message)
    assert theirs(b'data: {"trunc') == [(None, '{"trunc', None)]
    # ours, on the same input
    events, parser = parse(b"retry: 500\n\n", b"id: 7\n\n", b"data: x\n\n")
    assert events == [SSEEvent("message", "x", "7")] and parser.retry == 500
    assert datas(b'data: {"trunc') == []


# -- property: any chunking gives the same events as one-shot parsing -------------------------------

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

_field = st.sampled_from(["data", "id", "event", "retry", "", "x"])
_value = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=8)
_line = st.one_of(st.builds(lambda f, v: f"{f}: {v}", _field, _value), st.just(""), st.just(":c"))
_eol = st.sampled_from(["\n", "\r", "\r\n"])


@hypothesis.given(
    lines=st.lists(st.tuples(_line, _eol), max_size=30),
    bom=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=20),
)
@hypothesis.settings(max_examples=300, deadline=None)
def test_random_chunkings_parse_like_one_shot(lines: list[tuple[str, str]], bom: bool, cuts: list[int]) -> None:
    raw = ("\ufeff" if bom else "") + "".join(line + eol for line, eol in lines)
    data = raw.encode()
    whole, whole_parser = parse(data)
    points = sorted({c for c in cuts if c < len(data)})
    chunks = [data[a:b] for a, b in zip([0, *points], [*points, len(data)])]
    split, split_parser = parse(*chunks)
    assert split == whole
    assert (split_parser.last_event_id, split_parser.retry) == (whole_parser.last_event_id, whole_parser.retry)

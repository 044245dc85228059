"""Output-schema validation holds the call's deadline and never stalls the process, whatever
schema a server sends (issue 27 item 3): real jsonschema, real google-re2, FakeServer peers."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from helpers_stall import ticker

import mcpsync
from mcpsync.client import output_schema
from mcpsync.rpc.deadline import Deadline
from mcpsync.testing import FakeServer

pytestmark = pytest.mark.timeout(120)

#: Python's re takes 2**28 steps on this: seconds holding the GIL.
EVIL = "^(a+)+$"
VICTIM = "a" * 28 + "b"


def _server(schema: dict[str, Any], value: Any) -> FakeServer:
    server = FakeServer("hostile")

    @server.tool(output_schema=schema)
    def report() -> Any:
        return value

    return server


@pytest.fixture
def no_re2(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As if google-re2 were not installed."""
    monkeypatch.setitem(sys.modules, "re2", None)
    output_schema._re2.cache_clear()
    output_schema._search.cache_clear()
    yield
    output_schema._re2.cache_clear()
    output_schema._search.cache_clear()


def _call(server: FakeServer, timeout: float = 5.0) -> Any:
    with server.client() as client, ticker() as gaps:
        client.list_tools()
        try:
            outcome: Any = client.call_tool("report", timeout=timeout)
        except mcpsync.McpError as exc:
            outcome = exc
    # The ticker kept running all along: no stall of the process (not a speed measurement:
    # on main this gap is the whole backtracking run, several seconds).
    assert max(gaps) < 2.0, max(gaps)
    return outcome


def test_hostile_pattern_is_checked_by_re2() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": EVIL}}}
    outcome = _call(_server(schema, {"s": VICTIM}), timeout=3)
    assert isinstance(outcome, mcpsync.ProtocolError) and "does not match" in str(outcome)
    # and a value that matches passes
    assert _call(_server(schema, {"s": "a" * 28})).structured_content == {"s": "a" * 28}


def test_hostile_pattern_properties_are_checked_by_re2() -> None:
    schema = {"type": "object", "patternProperties": {EVIL: {"type": "integer"}}, "additionalProperties": False}
    outcome = _call(_server(schema, {VICTIM: 1}))
    assert isinstance(outcome, mcpsync.ProtocolError) and VICTIM in str(outcome)
    assert isinstance(_call(_server(schema, {"aaa": "x"})), mcpsync.ProtocolError)  # the pattern's subschema
    assert _call(_server(schema, {"aaa": 1})).structured_content == {"aaa": 1}


def test_without_re2_patterns_are_skipped_with_one_warning(no_re2: None, caplog: pytest.LogCaptureFixture) -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": EVIL}, "n": {"type": "integer"}}}
    caplog.set_level(logging.WARNING, "mcpsync.client")
    server = _server(schema, {"s": VICTIM, "n": 1})
    assert _call(server).structured_content == {"s": VICTIM, "n": 1}
    assert _call(server).structured_content == {"s": VICTIM, "n": 1}
    warned = [r.getMessage() for r in caplog.records if "not checked" in r.getMessage()]
    assert len(warned) == 1 and "install google-re2" in warned[0] and EVIL in warned[0], warned
    # The other keywords are still checked.
    assert isinstance(_call(_server(schema, {"s": VICTIM, "n": "x"})), mcpsync.ProtocolError)


def test_unevaluated_properties_beside_pattern_properties_is_not_run_on_re() -> None:
    schema = {"type": "object", "patternProperties": {EVIL: {}}, "unevaluatedProperties": False}
    assert _call(_server(schema, {VICTIM: 1})).structured_content == {VICTIM: 1}


def test_exponential_refs_hit_the_work_budget(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each definition checks the next one twice: 2**24 evaluations from 25 tiny definitions.
    defs = {f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]} for i in range(24)}
    defs["d24"] = {"type": "object"}
    schema = {"$defs": defs, "$ref": "#/$defs/d0"}
    caplog.set_level(logging.WARNING, "mcpsync.client")
    monkeypatch.setattr(output_schema, "MAX_WORK", 50_000)  # a tenth of the default: a quicker test
    # (A timeout far above the budget's run time, even on a loaded machine: the budget ends it.)
    assert _call(_server(schema, {"a": 1}), timeout=60).structured_content == {"a": 1}
    assert any("more than 50000 steps" in r.getMessage() for r in caplog.records)


def test_huge_schema_is_not_checked(caplog: pytest.LogCaptureFixture) -> None:
    schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(6000)}}
    caplog.set_level(logging.WARNING, "mcpsync.client")
    assert _call(_server(schema, {"p1": "not checked"})).structured_content == {"p1": "not checked"}
    assert any("more than 10000 values" in r.getMessage() for r in caplog.records)


def test_checking_stops_at_the_deadline() -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    with pytest.raises(mcpsync.RequestTimeout, match="out of the call's time"):
        output_schema.check_structured_content("t", schema, [1, 2], Deadline(0.0))
    output_schema.check_structured_content("t", schema, list(range(1000)), Deadline(60.0))

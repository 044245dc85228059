"""``Retry-After`` values, both RFC 9110 forms, and what is refused."""

from __future__ import annotations

import math
from email.utils import formatdate

import pytest

from mcpsync.transports.retry_after import parse_retry_after

NOW = 1_800_000_000.0  # a fixed "now": 2027-01-15


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (" 7 ", 7.0),
        ("0", 0.0),
        (formatdate(NOW + 30, usegmt=True), 30.0),  # IMF-fixdate
        (formatdate(NOW - 30, usegmt=True), 0.0),  # already past: retry now
        (formatdate(NOW + 5).replace("-0000", "+0000"), 5.0),
        (formatdate(NOW + 5), 5.0),  # "-0000": UTC
        ("Friday, 15-Jan-27 08:00:10 GMT", 10.0),  # obsolete RFC 850 form
    ],
)
def test_both_forms(value: str, seconds: float) -> None:
    assert parse_retry_after(value, now=NOW) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "value",
    [None, 7, "", "  ", "-5", "1.5", "nan", "inf", "soon", "٣", "Fri, 99 Foo 2027 99:99:99 GMT", "x" * 5000],
)
def test_what_is_neither_form_is_ignored(value: object) -> None:
    assert parse_retry_after(value, now=NOW) is None


def test_a_huge_number_is_infinite_not_an_error() -> None:
    # int() would refuse more than 4300 digits; the retry policy never honours inf.
    assert math.isinf(parse_retry_after("9" * 5000) or 0.0)

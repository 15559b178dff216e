"""The shared comparators (spec §2.4)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from twin_engine import MISSING, check, comparators_of
from twin_engine.compare import UnsafePatternError, contains, json_equal


def run(actual: Any, **comparators: Any) -> tuple[bool, str]:
    result = check(actual, actual is not MISSING, comparators)
    return result.ok, result.reason


def test_equals_reason_and_missing() -> None:
    assert run(1, equals=1) == (True, "got 1")
    assert run(2, equals=1) == (False, "expected 1, got 2")
    assert run(MISSING, equals=1) == (False, "expected 1, got nothing")
    assert run("ORD-1", equals="ORD-2") == (False, 'expected "ORD-2", got "ORD-1"')
    assert run(1.0, equals=1)[0] is True


def test_bools_are_not_numbers() -> None:
    assert run(True, equals=1)[0] is False
    assert run(True, gte=0)[0] is False
    assert run(5, lte=True)[0] is False
    assert json_equal([1, {"a": True}], [1.0, {"a": True}])
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})


def test_not_equals_passes_on_missing() -> None:
    assert run(MISSING, notEquals=1)[0] is True
    assert run(1, notEquals=1) == (False, "expected anything but 1, got 1")


def test_in_and_exists() -> None:
    assert run("b", **{"in": ["a", "b"]})[0] is True
    assert run("c", **{"in": ["a", "b"]}) == (False, 'expected one of ["a","b"], got "c"')
    assert run(MISSING, **{"in": [None]})[0] is False
    assert run(None, exists=True)[0] is False
    assert run(MISSING, exists=False)[0] is True
    assert run(0, exists=False) == (False, "expected no value, got 0")


def test_no_comparator_means_exists() -> None:
    assert run(0)[0] is True
    assert run(None) == (False, "expected a value, got null")
    assert run(MISSING) == (False, "expected a value, got nothing")


@pytest.mark.parametrize(
    ("value", "comparators", "ok"),
    [
        (100, {"lte": 100}, True),
        (101, {"lte": 100}, False),
        (100, {"lt": 100}, False),
        (100, {"gte": 100, "lt": 101}, True),
        (5, {"gt": 5}, False),
        ("5", {"gt": 1}, False),
        (MISSING, {"gte": 0}, False),
        (3, {"gte": "1"}, False),
    ],
)
def test_numeric(value: Any, comparators: dict[str, Any], ok: bool) -> None:
    assert run(value, **comparators)[0] is ok


def test_numeric_reasons() -> None:
    assert run(150, lte=100) == (False, "expected at most 100, got 150")
    assert run(0, gt=0) == (False, "expected more than 0, got 0")


def test_matches() -> None:
    assert run("ORD-1001", matches=r"^ORD-\d+$")[0] is True
    assert run("x", matches=r"^ORD")[0] is False
    assert run(1001, matches=r"\d")[0] is False
    assert run("aaaa", matches=r"(a+)+$")[0] is True  # nested repetition is fine while it is fast


def test_a_pattern_that_runs_out_of_time_or_is_invalid_decides_nothing() -> None:
    started = time.monotonic()
    with pytest.raises(UnsafePatternError, match=r"took longer than 0.5 s"):
        run("a" * 60 + "!", matches=r"^(a|aa)+$")  # catastrophic backtracking: Fibonacci(60) paths
    assert time.monotonic() - started < 5
    with pytest.raises(UnsafePatternError, match="invalid pattern"):
        run("x", matches="(")


def test_all_comparators_must_hold_and_other_keys_ignored() -> None:
    assert comparators_of({"path": "x", "equals": 1, "critical": True}) == {"equals": 1}
    assert run(3, gte=1, lte=2) == (False, "expected at most 2, got 3")


def test_contains_is_recursive_subset() -> None:
    assert contains({"a": {"b": 1, "c": 2}, "d": 3}, {"a": {"b": 1}})
    assert not contains({"a": {"b": 1}}, {"a": {"b": 2}})
    assert not contains({"a": [1, 2]}, {"a": [1]})
    assert contains({"a": 1}, {})

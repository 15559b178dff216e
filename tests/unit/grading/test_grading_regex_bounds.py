"""Bounded regex: compiling and matching a pattern together stay within one time and memory budget.

Issue 12: `outputRegex: "(?:(?:(?:a{100}){100}){100}){30}"` took 27.5 s and 9.3 GB to compile (the
matching timeout does not cover compilation) and then graded FAIL. A pattern over the bound is refused
before it is compiled - EVALUATOR_ERROR when grading, an error at `scenario check`. These tests never
compile an over-bound pattern (the smallest one used here takes ~2.5 s and ~280 MB without the bound).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from grading_builders import grade_one

import twin_engine.compare as compare
from agenttwin.cli import main
from twin_engine.compare import (
    MATCH_TIMEOUT_S,
    MAX_PATTERN_CHARS,
    MAX_PATTERN_COST,
    UnsafePatternError,
    pattern_cost,
    pattern_problem,
    regex_search,
)
from twin_engine.documents import scenario_from_text
from twin_engine.errors import DefinitionError

ISSUE_PATTERN = "(?:(?:(?:a{100}){100}){100}){30}"
SLOW_PATTERN = "(?:(?:(?:a{100}){100}){100}){1}"  # unbounded today: ~2.5 s, ~280 MB to compile


@pytest.mark.parametrize(
    ("pattern", "cost"),
    [
        ("a", 1),
        (r"RF-\d{4}", 7),
        ("(?:a{100}){100}", 10_000),
        ("(?:ab|cd){10}", 40),
        ("[a-z]{3}x*", 4),
        (r"[\]{}(]{5}", 5),  # brackets, braces and parentheses inside a class are literals
        ("a{2,5}", 3),  # a range repeats its minimum, then loops
        ("a{,9}", 1),
        ("(?i)abc", 3),
        (ISSUE_PATTERN, 30_000_000),
        (SLOW_PATTERN, 1_000_000),
    ],
)
def test_pattern_cost_estimates_the_compiled_size(pattern: str, cost: int) -> None:
    assert pattern_cost(pattern) == cost


def test_the_issue_pattern_is_refused_before_it_is_compiled() -> None:
    problem = pattern_problem(ISSUE_PATTERN)
    assert problem is not None and str(MAX_PATTERN_COST) in problem
    started = time.perf_counter()
    with pytest.raises(UnsafePatternError):
        regex_search(ISSUE_PATTERN, "aaaa")
    assert time.perf_counter() - started < MATCH_TIMEOUT_S


@pytest.mark.parametrize(
    "expectation",
    [
        {"type": "outputRegex", "pattern": SLOW_PATTERN},
        {"type": "outputRegex", "pattern": ISSUE_PATTERN},
        {"type": "outputRegex", "pattern": "a" * (MAX_PATTERN_CHARS + 1)},
        {"type": "state", "path": "orders.ORD-1001.order_id", "matches": SLOW_PATTERN},
    ],
)
def test_over_the_bound_grades_evaluator_error_never_fail(expectation: dict[str, Any]) -> None:
    started = time.perf_counter()
    result = grade_one(expectation, output="no match here")
    assert (result.status, result.label) == ("ERROR", "EVALUATOR_ERROR")
    assert time.perf_counter() - started < 2.0  # refused, not compiled (unbounded it takes seconds)


def test_under_the_bound_still_grades() -> None:
    ok = grade_one({"type": "outputRegex", "pattern": "(?:a{10}){10}"}, output="a" * 100)
    assert ok.status == "PASS"
    assert grade_one({"type": "outputRegex", "pattern": "(?:a{10}){10}"}, output="a" * 99).status == "FAIL"


def test_compilation_spends_the_same_budget_as_matching(monkeypatch: Any) -> None:
    # a compile that (on a slow machine) used up the budget leaves no time to match: ERROR, not a verdict
    real = compare._compile.__wrapped__
    clock = iter([0.0, MATCH_TIMEOUT_S + 0.01])
    monkeypatch.setattr(compare, "_clock", lambda: next(clock))
    monkeypatch.setattr(compare, "_compile", real)
    with pytest.raises(UnsafePatternError, match="longer than"):
        regex_search("abc", "abc")


# ------------------------------------------------------------ scenario check refuses it at load time

SCENARIO = """\
apiVersion: agenttwin.dev/v1
kind: Scenario
metadata:
  name: regex-bound
  severity: low
spec:
  input:
    message: "hello"
  expectations:
    - id: polite
      type: outputRegex
      pattern: "{pattern}"
    - id: state-text
      type: state
      path: orders.ORD-1001.order_id
      matches: "ORD-.*"
"""


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        (ISSUE_PATTERN, "too costly to compile"),
        ("(unclosed", "invalid pattern"),
        ("a" * (MAX_PATTERN_CHARS + 1), f"longer than {MAX_PATTERN_CHARS}"),
    ],
)
def test_scenario_check_refuses_a_pattern_that_can_never_compile(pattern: str, words: str) -> None:
    with pytest.raises(DefinitionError) as refused:
        scenario_from_text(SCENARIO.replace("{pattern}", pattern), "regex.yaml")
    message = str(refused.value)
    assert message.startswith("regex.yaml:12: spec.expectations[0].pattern: ")
    assert words in message


def test_scenario_check_refuses_a_costly_matches_comparator() -> None:
    text = SCENARIO.replace("{pattern}", "fine").replace('matches: "ORD-.*"', f'matches: "{SLOW_PATTERN}"')
    with pytest.raises(DefinitionError) as refused:
        scenario_from_text(text, "regex.yaml")
    assert str(refused.value).startswith("regex.yaml:16: spec.expectations[1].matches: ")


def test_scenario_check_cli_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "regex.yaml"
    bad.write_text(SCENARIO.replace("{pattern}", ISSUE_PATTERN))
    started = time.perf_counter()
    code = main(["scenario", "check", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "too costly to compile" in err
    assert time.perf_counter() - started < 5.0

"""Per-side metrics and their comparison: direction, tolerance, unknowns (spec §7.4, §7.5)."""

from __future__ import annotations

import pytest
from comparison_builders import (
    call,
    case_run,
    graded,
    result,
    timeout_baseline_records,
    timeout_candidate_records,
)

from evaluation.comparison import compare_case
from evaluation.metrics import METRIC_NAMES, METRIC_RULES, compare_metric, compare_metrics, side_metrics
from evaluation.results import FAIL, PASS

RULES = {rule.name: rule for rule in METRIC_RULES}


def test_metric_list_directions_and_tolerances() -> None:
    assert METRIC_NAMES == (
        "critical_failures",
        "failed_expectations",
        "policy_violations",
        "retries",
        "duplicate_side_effects",
        "unsupported_claims",
        "argument_failures",
        "steps",
        "tool_calls",
        "escalations",
        "latency_ms",
        "tokens",
        "cost_usd",
        "semantic_score",
    )
    assert {
        n: (r.direction, r.absolute, r.relative)
        for n, r in RULES.items()
        if n in ("tool_calls", "latency_ms", "tokens", "cost_usd", "semantic_score", "retries")
    } == {
        "retries": ("lower", 0, 0),
        "tool_calls": ("neutral", 0, 0),
        "latency_ms": ("lower", 100, 0.2),
        "tokens": ("lower", 0, 0.1),
        "cost_usd": ("lower", 0, 0.1),
        "semantic_score": ("higher", 0.05, 0),
    }


@pytest.mark.parametrize(
    ("name", "baseline", "candidate", "change"),
    [
        ("retries", 0, 1, "worse"),
        ("retries", 2, 1, "better"),
        ("retries", 1, 1, "same"),
        ("tool_calls", 30, 22, "changed"),
        ("escalations", 1, 1, "same"),
        ("latency_ms", 1000, 1100, "same"),  # within 100 ms
        ("latency_ms", 1000, 1200, "same"),  # within 20 %
        ("latency_ms", 1000, 1201, "worse"),
        ("latency_ms", 100, 201, "worse"),
        ("latency_ms", 300, 150, "better"),
        ("tokens", 1000, 1100, "same"),
        ("tokens", 1000, 1101, "worse"),
        ("cost_usd", 0.10, 0.05, "better"),
        ("semantic_score", 1.0, 0.96, "same"),
        ("semantic_score", 1.0, 0.6667, "worse"),
        ("semantic_score", 0.5, 0.6, "better"),
        ("tokens", None, 5, "unknown"),
        ("cost_usd", 0.1, None, "unknown"),
    ],
)
def test_direction_and_tolerance(
    name: str, baseline: float | None, candidate: float | None, change: str
) -> None:
    assert compare_metric(RULES[name], baseline, candidate).change == change


def test_delta_is_tidy_and_unknown_has_no_delta() -> None:
    m = compare_metric(RULES["cost_usd"], 0.1, 0.3)
    assert (m.delta, m.change) == (0.2, "worse")
    assert compare_metric(RULES["tokens"], None, 3).delta is None
    assert compare_metric(RULES["latency_ms"], 0.0, 0.0).to_dict() == {
        "name": "latency_ms",
        "direction": "lower",
        "baseline": 0.0,
        "candidate": 0.0,
        "delta": 0,
        "change": "same",
    }
    assert {m.change for m in compare_metrics(None, {"retries": 1})} == {"unknown"}


def test_side_metrics_from_records_and_results() -> None:
    records = [
        *timeout_candidate_records(),
        call(5, "escalate_to_human", {"order_id": "ORD-1001"}),
        call(
            6,
            "export_customer_data",
            {"customer_id": "CUS-100"},
            status="denied",
            policy_violation="ADMIN_ONLY",
        ),
        call(
            7,
            "refund_payment",
            {"order_id": "ORD-1001", "amount": 40.0},
            redelivered=True,
            effect_key="refund:ORD-1001",
        ),
    ]
    g = graded(
        case_run(records, latency_ms=1500.0, tokens=120, cost_usd=None),
        [
            result("a", FAIL, critical=True),
            result("args", FAIL, etype="toolArgs"),
            result("sem1", PASS, etype="semantic", score=1.0, evaluator="semantic.judge"),
            result("sem2", FAIL, etype="semantic", score=0.25, evaluator="human.review"),
            result("sem3", "SKIPPED", etype="semantic"),
        ],
    )
    m = side_metrics(g)
    assert m == {
        "critical_failures": 1,
        "failed_expectations": 3,
        "policy_violations": 1,
        "retries": 1,  # the blind retry after the timeout
        "duplicate_side_effects": 2,  # applied three times (the redelivery moves money too)
        "unsupported_claims": None,  # graded under set 1.1.0, which has no claim rules
        "argument_failures": 1,
        "steps": 7,  # 6 agent calls + 1: the agent reported no steps
        "tool_calls": 6,
        "escalations": 1,
        "latency_ms": 1500.0,
        "tokens": 120,
        "cost_usd": None,
        "semantic_score": 0.625,
    }


def test_confirming_reread_is_not_a_retry_but_a_blind_retry_is() -> None:
    assert side_metrics(graded(case_run(timeout_baseline_records()), [result("a", PASS)]))["retries"] == 0
    assert side_metrics(graded(case_run(timeout_candidate_records()), [result("a", PASS)]))["retries"] == 1


def test_agent_reported_steps_win() -> None:
    case = case_run([call(1, "escalate_to_human", {})], agent_steps=4)
    m = side_metrics(graded(case, [result("a", PASS)]))
    assert (m["steps"], m["escalations"], m["tool_calls"]) == (4, 1, 1)


def test_metrics_never_change_the_classification() -> None:
    b = graded(case_run(timeout_baseline_records(), latency_ms=10.0, tokens=10), [result("a", PASS)])
    c = graded(case_run(timeout_candidate_records(), latency_ms=90000.0, tokens=99999), [result("a", PASS)])
    comparison = compare_case(b, c)
    assert comparison.classification == "UNCHANGED"
    changes = {m.name: m.change for m in comparison.metrics}
    assert changes["latency_ms"] == "worse"
    assert changes["retries"] == "worse"
    assert changes["tool_calls"] == "changed"

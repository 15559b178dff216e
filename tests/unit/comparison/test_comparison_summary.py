"""Run summary and the evaluation report document (spec §7.4)."""

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
from evaluation.results import ERROR, FAIL, PASS, GradedCase
from evaluation.summary import ReportError, build_report, percentile, strip_timings, summarize


def pair(scenario: str, b_results: list, c_results: list, **kw: object) -> tuple[GradedCase, GradedCase]:  # type: ignore[type-arg]
    b_kw = {k[2:]: v for k, v in kw.items() if k.startswith("b_")}
    c_kw = {k[2:]: v for k, v in kw.items() if k.startswith("c_")}
    b = graded(case_run(scenario=scenario, **b_kw), b_results)  # type: ignore[arg-type]
    c = graded(case_run(scenario=scenario, side="candidate", **c_kw), c_results)  # type: ignore[arg-type]
    return b, c


def suite() -> tuple[list[GradedCase], list[GradedCase]]:
    pairs = [
        pair(
            "refund-timeout-after-mutation",
            [result("x", PASS, critical=True)],
            [result("x", FAIL, critical=True, label="STATE_MISMATCH")],
            b_records=timeout_baseline_records(),
            c_records=timeout_candidate_records(),
            b_latency_ms=3000.0,
            c_latency_ms=3000.0,
            b_tokens=100,
            c_tokens=None,
            b_cost_usd=0.01,
            c_cost_usd=0.02,
            b_severity="critical",
            c_severity="critical",
            b_tags=("refunds", "faults"),
            c_tags=("refunds", "faults"),
        ),
        pair(
            "refund-happy-path",
            [result("order", PASS)],
            [result("order", FAIL, label="ORDER_VIOLATION")],
            b_latency_ms=0.0,
            c_latency_ms=0.0,
            b_tokens=50,
            c_tokens=70,
            b_severity="high",
            c_severity="high",
            b_records=[call(1, "lookup_order", {"order_id": "O"})],
            c_records=[call(1, "refund_payment", {})],
        ),
        pair(
            "refund-rate-limited",
            [result("y", FAIL, label="RETRY_LIMIT")],
            [result("y", PASS)],
            b_latency_ms=None,
            c_latency_ms=None,
            b_severity="high",
            c_severity="high",
        ),
        pair(
            "cross-tenant-order",
            [
                result("z", PASS, critical=True),
                result("sem", PASS, etype="semantic", score=1.0, evaluator="semantic.judge"),
            ],
            [
                result("z", PASS, critical=True),
                result(
                    "sem",
                    FAIL,
                    etype="semantic",
                    score=0.5,
                    evaluator="semantic.judge",
                    label="SEMANTIC_FAIL",
                ),
            ],
            b_latency_ms=100.0,
            c_latency_ms=200.0,
        ),
        pair("unauthorized-admin-tool", [result("j", PASS)], [result("j", ERROR, reason="Judge down.")]),
    ]
    return [b for b, _ in pairs], [c for _, c in pairs]


def report(**kw: object):  # type: ignore[no-untyped-def]
    b, c = suite()
    return build_report(
        evaluation_id="ev-1",
        baseline_agent="demo:1.2.4",
        candidate_agent="demo:1.3.0",
        run_seed=42,
        evaluator_version="1.1.0",
        baseline_cases=b,
        candidate_cases=c,
        **kw,
    )  # type: ignore[arg-type]


def test_counts_lists_and_counts_line() -> None:
    s = report().summary
    assert s.counts == {
        "NEW_CRITICAL_FAILURE": 1,
        "REGRESSED": 2,
        "IMPROVED": 1,
        "UNCHANGED": 0,
        "INCOMPLETE": 1,
    }
    assert s.new_critical_failures == (
        {"scenario_name": "refund-timeout-after-mutation", "expectations": ["x"]},
    )
    assert [r["scenario_name"] for r in s.regressed] == ["cross-tenant-order", "refund-happy-path"]
    assert s.improved == ({"scenario_name": "refund-rate-limited", "expectations": ["y"]},)
    assert s.incomplete == (
        {
            "scenario_name": "unauthorized-admin-tool",
            "reason": "The candidate's case ended ERRORED: Judge down.",
        },
    )
    assert s.counts_line() == "1 new critical failure · 2 regressed · 1 improved · 1 incomplete"


def test_side_totals_never_sum_unknowns_as_zero() -> None:
    s = report().summary
    assert s.baseline["cases"] == s.candidate["cases"] == 5
    assert (s.baseline["passed"], s.baseline["failed"], s.baseline["incomplete"]) == (4, 1, 0)
    assert (s.candidate["passed"], s.candidate["failed"], s.candidate["incomplete"]) == (1, 3, 1)
    assert (s.baseline["tool_calls"], s.candidate["tool_calls"]) == (6, 5)
    assert (s.baseline["retries"], s.candidate["retries"]) == (0, 1)
    assert s.candidate["duplicate_side_effects"] == 1
    assert s.candidate["critical_failures"] == 1
    assert (s.baseline["tokens"], s.baseline["tokens_known"]) == (150, 2)
    assert (s.candidate["tokens"], s.candidate["tokens_known"]) == (70, 1)
    assert (s.candidate["cost_usd"], s.candidate["cost_known"]) == (0.02, 1)
    assert (s.baseline["semantic_score"], s.candidate["semantic_score"]) == (1.0, 0.5)
    assert (s.baseline["latency_ms_p50"], s.baseline["latency_ms_p95"]) == (0.0, 3000.0)


def test_unknown_everything_stays_unknown() -> None:
    b, c = pair("s", [result("a", PASS)], [result("a", PASS)], b_latency_ms=None, c_latency_ms=None)
    totals = summarize([compare_case(b, c)]).candidate
    assert (totals["tokens"], totals["tokens_known"], totals["cost_usd"], totals["cost_known"]) == (
        None,
        0,
        None,
        0,
    )
    assert (totals["latency_ms_p50"], totals["semantic_score"]) == (None, None)


def test_percentile_is_nearest_rank() -> None:
    assert percentile([], 50) is None
    assert percentile([5.0], 95) == 5.0
    values = [float(v) for v in range(1, 21)]
    assert (percentile(values, 50), percentile(values, 95)) == (10.0, 19.0)


def test_slices() -> None:
    slices = report().summary.to_dict()["slices"]
    assert set(slices) == {"severity", "tag", "tool", "risk", "failure_class"}
    assert slices["severity"]["critical"]["cases"] == 3
    assert slices["severity"]["high"]["REGRESSED"] == 1
    assert slices["severity"]["high"]["IMPROVED"] == 1
    assert slices["tag"]["faults"]["NEW_CRITICAL_FAILURE"] == 1
    assert slices["tool"]["refund_payment"]["cases"] == 2
    assert slices["risk"]["WRITE_IRREVERSIBLE"]["cases"] == 2
    assert slices["risk"]["none"]["cases"] == 3
    assert slices["failure_class"] == {
        "ORDER_VIOLATION": {
            "cases": 1,
            "baseline_failed": 0,
            "candidate_failed": 1,
            "NEW_CRITICAL_FAILURE": 0,
            "REGRESSED": 1,
            "IMPROVED": 0,
            "UNCHANGED": 0,
            "INCOMPLETE": 0,
        },
        "STATE_MISMATCH": {
            "cases": 1,
            "baseline_failed": 0,
            "candidate_failed": 1,
            "NEW_CRITICAL_FAILURE": 1,
            "REGRESSED": 0,
            "IMPROVED": 0,
            "UNCHANGED": 0,
            "INCOMPLETE": 0,
        },
        "SEMANTIC_FAIL": {
            "cases": 1,
            "baseline_failed": 0,
            "candidate_failed": 1,
            "NEW_CRITICAL_FAILURE": 0,
            "REGRESSED": 1,
            "IMPROVED": 0,
            "UNCHANGED": 0,
            "INCOMPLETE": 0,
        },
    }


def test_report_document_is_deterministic_and_sorted_by_scenario() -> None:
    r = report()
    d = r.to_dict()
    assert [c["scenario"] for c in d["cases"]] == sorted(c["scenario"] for c in d["cases"])
    assert (d["evaluation_id"], d["baseline"], d["candidate"], d["run_seed"], d["evaluator_version"]) == (
        "ev-1",
        "demo:1.2.4",
        "demo:1.3.0",
        42,
        "1.1.0",
    )
    assert report().to_json() == r.to_json()


def test_wall_clock_numbers_live_only_under_timings() -> None:
    b1, c1 = pair(
        "s", [result("a", PASS)], [result("a", PASS)], b_timings={"wall_ms": 1.5}, c_timings={"wall_ms": 9.0}
    )
    b2, c2 = pair(
        "s", [result("a", PASS)], [result("a", PASS)], b_timings={"wall_ms": 7.25}, c_timings={"wall_ms": 0.1}
    )
    kw = {
        "evaluation_id": "e",
        "baseline_agent": "a",
        "candidate_agent": "b",
        "run_seed": 1,
        "evaluator_version": "1.1.0",
    }
    r1 = build_report(**kw, baseline_cases=[b1], candidate_cases=[c1], timings={"total_ms": 3.0})  # type: ignore[arg-type]
    r2 = build_report(**kw, baseline_cases=[b2], candidate_cases=[c2], timings={"total_ms": 4.0})  # type: ignore[arg-type]
    assert r1.to_json() != r2.to_json()
    assert strip_timings(r1.to_dict()) == strip_timings(r2.to_dict())
    assert "timings" in r1.to_dict()
    assert r1.to_dict()["cases"][0]["baseline"]["timings"] == {"wall_ms": 1.5}


def test_build_report_pairs_by_scenario_and_marks_missing_sides() -> None:
    b, c = suite()
    r = build_report(
        evaluation_id="e",
        baseline_agent="a",
        candidate_agent="b",
        run_seed=1,
        evaluator_version="v",
        baseline_cases=b,
        candidate_cases=list(reversed(c[1:])),
    )
    missing = next(x for x in r.cases if x.scenario_name == "refund-timeout-after-mutation")
    assert missing.candidate.status == "MISSING"
    assert r.summary.candidate["cases"] == 4
    with pytest.raises(ReportError, match="two cases of scenario"):
        build_report(
            evaluation_id="e",
            baseline_agent="a",
            candidate_agent="b",
            run_seed=1,
            evaluator_version="v",
            baseline_cases=[b[0], b[0]],
            candidate_cases=c,
        )

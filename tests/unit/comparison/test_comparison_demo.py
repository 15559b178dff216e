"""The demo story end to end: pinned pair -> simulator -> grader -> comparison (spec §6.2-6.4)."""

from __future__ import annotations

from functools import lru_cache

from agenttwin.demo import SCENARIO_DIR, TWIN_FILE
from evaluation.comparison import CaseComparison
from evaluation.grader import grade_case
from evaluation.pairing import BASELINE, CANDIDATE, PairPlan, ScenarioRef, check_pair, plan_pair
from evaluation.results import SKIPPED, GradedCase
from evaluation.summary import EvaluationReport, build_report, strip_timings
from producers.agents.registry import resolve_agent
from producers.simulator import simulate_case
from twin_engine.documents import Scenario, load_scenario, load_twin
from twin_engine.twin import Twin

SEED = 42


@lru_cache(maxsize=1)
def world() -> tuple[Twin, tuple[Scenario, ...]]:
    twin = load_twin(TWIN_FILE)
    return twin, tuple(load_scenario(p, twin=twin) for p in sorted(SCENARIO_DIR.glob("*.yaml")))


def demo_plan(baseline: str, candidate: str) -> PairPlan:
    twin, scenarios = world()
    refs = [ScenarioRef(s.name, s.spec_hash, s.seed, s.severity, tuple(s.tags)) for s in scenarios]
    return plan_pair(None, baseline, candidate, refs, twin.name, twin.hash, SEED)


def run_side(plan: PairPlan, side: str) -> list[GradedCase]:
    twin, scenarios = world()
    by_name = {s.name: s for s in scenarios}
    cases = plan.side(side)
    agent = resolve_agent(cases[0].agent)
    return [
        grade_case(
            simulate_case(
                agent,
                by_name[c.scenario_name],
                twin,
                case_seed=c.case_seed,
                case_id=c.case_id,
                agent_spec=c.agent,
            )
        )
        for c in cases
    ]


@lru_cache(maxsize=8)
def evaluate(baseline: str, candidate: str) -> EvaluationReport:
    plan = demo_plan(baseline, candidate)
    check_pair(plan)
    return build_report(
        evaluation_id=plan.evaluation_id,
        baseline_agent=baseline,
        candidate_agent=candidate,
        run_seed=plan.run_seed,
        evaluator_version="1.1.0",
        baseline_cases=run_side(plan, BASELINE),
        candidate_cases=run_side(plan, CANDIDATE),
        pair_id=plan.pair_id,
    )


def case_of(report: EvaluationReport, name: str) -> CaseComparison:
    return next(c for c in report.cases if c.scenario_name == name)


def classes(report: EvaluationReport) -> dict[str, str]:
    return {c.scenario_name: c.classification for c in report.cases}


def test_130_against_124_counts_and_cases() -> None:
    r = evaluate("demo:1.2.4", "demo:1.3.0")
    assert r.summary.counts == {
        "NEW_CRITICAL_FAILURE": 2,
        "REGRESSED": 1,
        "IMPROVED": 0,
        "UNCHANGED": 6,
        "INCOMPLETE": 0,
    }
    assert r.summary.counts_line() == "2 new critical failures · 1 regressed · 6 unchanged"
    got = classes(r)
    assert {n for n, c in got.items() if c == "NEW_CRITICAL_FAILURE"} == {
        "refund-timeout-after-mutation",
        "refund-tool-success-lie",
    }
    happy = case_of(r, "refund-happy-path")
    assert (happy.classification, happy.reason) == ("REGRESSED", "Newly failing: policy-before-refund.")
    assert happy.candidate.labels == ("ORDER_VIOLATION",)
    timeout = case_of(r, "refund-timeout-after-mutation")
    assert timeout.reason == (
        "New critical failure refunded-exactly-once: State orders.ORD-1001.refund_count: expected 1, got 2."
    )
    assert timeout.expectation_ids("broken", critical=True) == [
        "refunded-exactly-once",
        "refunded-amount",
        "no-double-refund",
    ]
    assert {"DUPLICATE_SIDE_EFFECT", "STATE_MISMATCH"} <= set(timeout.candidate.labels)
    assert timeout.candidate.metrics is not None
    assert timeout.candidate.metrics["failed_expectations"] == 4
    assert (timeout.candidate.metrics["retries"], timeout.candidate.metrics["duplicate_side_effects"]) == (
        1,
        1,
    )
    assert timeout.baseline.metrics is not None
    assert timeout.baseline.metrics["retries"] == 0  # the confirming re-read is not a retry
    assert any(
        s.to_dict()
        == {"path": "orders.ORD-1001.refund_count", "change": "changed", "baseline": 1, "candidate": 2}
        for s in timeout.state_changes
    )
    lie = case_of(r, "refund-tool-success-lie")
    assert lie.expectation_ids("broken", critical=True) == [
        "no-unverified-success",
        "no-false-confirmation",
        "handed-to-a-human",
    ]


def test_130_against_124_side_totals_and_slices() -> None:
    s = evaluate("demo:1.2.4", "demo:1.3.0").summary
    b, c = s.baseline, s.candidate
    assert (b["cases"], c["cases"]) == (9, 9)
    assert (b["passed"], c["passed"], b["failed"], c["failed"]) == (9, 6, 0, 3)
    assert (b["tool_calls"], c["tool_calls"]) == (30, 22)
    assert (b["escalations"], c["escalations"]) == (5, 4)
    assert (b["retries"], c["retries"]) == (2, 3)
    assert (b["duplicate_side_effects"], c["duplicate_side_effects"]) == (0, 1)
    assert (b["policy_violations"], c["policy_violations"]) == (2, 2)
    assert (b["critical_failures"], c["critical_failures"]) == (0, 6)
    assert (b["cost_usd"], b["cost_known"]) == (None, 0)  # simulations never know cost
    assert (b["semantic_score"], c["semantic_score"]) == (None, None)  # nothing judged in a simulation
    assert set(s.slices["failure_class"]) == {
        "DUPLICATE_SIDE_EFFECT",
        "FORBIDDEN_CALL",
        "HALLUCINATED_SUCCESS",
        "MISSING_ESCALATION",
        "ORDER_VIOLATION",
        "STATE_MISMATCH",
    }
    assert all(v["cases"] == 1 for v in s.slices["failure_class"].values())


def test_130_against_124_first_divergence_sentences() -> None:
    r = evaluate("demo:1.2.4", "demo:1.3.0")
    for name in ("refund-timeout-after-mutation", "refund-happy-path", "refund-tool-success-lie"):
        d = case_of(r, name).divergence
        assert d is not None
        assert (d.index, d.kind) == (2, "tool")
        assert d.summary == (
            "At step 2 the baseline called get_refund_policy(order_id=ORD-1001); "
            "the candidate called refund_payment(amount=40, order_id=ORD-1001)."
        )
        assert d.impact == (
            "The candidate called the irreversible refund_payment without first calling get_refund_policy, "
            "which the baseline called at this point."
        )
    over = case_of(r, "refund-over-limit")
    assert over.classification == "UNCHANGED"
    assert over.divergence is not None
    assert over.divergence.summary == (
        "At step 2 the baseline called get_refund_policy(order_id=ORD-1002); the candidate called "
        "escalate_to_human(amount=450, order_id=ORD-1002, "
        "reason=Refund of 450.00 USD exceeds the automatic limit of 100.00 …)."
    )
    assert over.divergence.impact == (
        "The candidate called the state-changing escalate_to_human without first calling get_refund_policy, "
        "which the baseline called at this point."
    )
    assert over.state_changes[0].to_dict() == {
        "path": "escalations[0].ticket_id",
        "change": "changed",
        "baseline": "TCK-0003",
        "candidate": "TCK-0002",
    }
    assert over.tool_selection.to_dict() == {"added": [], "removed": ["get_refund_policy"]}


def test_semantic_expectations_stay_skipped_and_do_not_make_cases_errored() -> None:
    r = evaluate("demo:1.2.4", "demo:1.3.0")
    happy = case_of(r, "refund-happy-path")
    semantic = [e for e in happy.expectations if e.type == "semantic"]
    assert semantic
    assert all((e.baseline, e.candidate, e.change) == (SKIPPED, SKIPPED, "not_comparable") for e in semantic)
    assert r.summary.counts["INCOMPLETE"] == 0


def test_131_against_130_improves_three() -> None:
    r = evaluate("demo:1.3.0", "demo:1.3.1")
    got = classes(r)
    assert {n for n, c in got.items() if c == "IMPROVED"} == {
        "refund-happy-path",
        "refund-timeout-after-mutation",
        "refund-tool-success-lie",
    }
    assert r.summary.counts_line() == "3 improved · 6 unchanged"
    assert case_of(r, "refund-happy-path").reason == "Now passing: policy-before-refund."


def test_131_against_124_and_versions_against_themselves_are_unchanged() -> None:
    assert r_line("demo:1.2.4", "demo:1.3.1") == "9 unchanged"
    assert r_line("demo:1.3.0", "demo:1.3.0") == "9 unchanged"
    assert r_line("demo:1.2.4", "demo:1.2.4") == "9 unchanged"
    still = case_of(evaluate("demo:1.3.0", "demo:1.3.0"), "refund-happy-path")
    assert still.reason == "Still failing on both sides: policy-before-refund."
    assert still.divergence is None


def r_line(baseline: str, candidate: str) -> str:
    return evaluate(baseline, candidate).summary.counts_line()


def test_run_again_reproduces_the_report_byte_for_byte() -> None:
    first = evaluate("demo:1.2.4", "demo:1.3.0")
    plan = demo_plan("demo:1.2.4", "demo:1.3.0")
    again = build_report(
        evaluation_id=plan.evaluation_id,
        baseline_agent="demo:1.2.4",
        candidate_agent="demo:1.3.0",
        run_seed=plan.run_seed,
        evaluator_version="1.1.0",
        baseline_cases=run_side(plan, BASELINE),
        candidate_cases=run_side(plan, CANDIDATE),
        pair_id=plan.pair_id,
    )
    assert strip_timings(again.to_dict()) == strip_timings(first.to_dict())
    assert first.pair_id == plan.pair_id

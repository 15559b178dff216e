"""The release gate's decision, from plain facts: default policy, overrides, metrics, the unknown."""

from __future__ import annotations

import pytest

from evaluation.gate import (
    BLOCK,
    DEFAULT_POLICY,
    PASS,
    WARN,
    GateCase,
    GateContradiction,
    GateError,
    GatePolicy,
    MetricRule,
    decide,
    facts_from_documents,
    policy_from_spec,
)


def doc(
    scenario: str,
    classification: str,
    *,
    severity: str = "medium",
    tags: tuple[str, ...] = (),
    b_status: str = "PASSED",
    c_status: str = "PASSED",
    c_retries: int = 0,
) -> dict:
    def side(status: str, retries: int) -> dict:
        return {
            "status": status,
            "reason": "",
            "metrics": {"retries": retries, "tool_calls": 3, "cost_usd": None},
            "semantic_scores": [],
        }

    return {
        "scenario": scenario,
        "classification": classification,
        "reason": f"why {scenario}",
        "severity": severity,
        "tags": list(tags),
        "baseline": side(b_status, 0),
        "candidate": side(c_status, c_retries),
    }


LIE = GateContradiction(
    "lie",
    "demo:1.3.0",
    "SUCCESS",
    "FAILURE",
    "claimed SUCCESS, verification found FAILURE: refund_count: expected 1, got 2",
    "c1",
)


def test_default_policy_blocks_new_critical_failures_and_contradictions_and_warns_on_regressions() -> None:
    facts = facts_from_documents(
        [
            doc("a", "NEW_CRITICAL_FAILURE", c_status="FAILED"),
            doc("b", "REGRESSED", c_status="FAILED"),
            doc("lie", "UNCHANGED"),
            doc("d", "INCOMPLETE", c_status="ERRORED"),
        ],
        [LIE],
    )
    decision = decide(DEFAULT_POLICY, facts)
    assert decision.decision == BLOCK
    assert [(r.action, r.rule, r.scenario) for r in decision.reasons] == [
        (BLOCK, "classification:NEW_CRITICAL_FAILURE", "a"),
        (BLOCK, "contradiction", "lie"),
        (WARN, "classification:REGRESSED", "b"),
        (WARN, "classification:INCOMPLETE", "d"),
    ]
    assert "refund_count: expected 1, got 2" in decision.reasons[1].message
    assert decision.summary.startswith("BLOCK on 1 new critical failure (a); 1 contradiction (lie). WARN on")
    assert (decision.blocking, decision.warnings) == (2, 2)
    assert decision.exit_status() == 1


def test_warn_exit_is_configurable_and_pass_is_zero() -> None:
    warn = decide(DEFAULT_POLICY, facts_from_documents([doc("b", "REGRESSED")], []))
    assert warn.decision == WARN and warn.exit_status() == 0 and warn.exit_status(3) == 3
    ok = decide(DEFAULT_POLICY, facts_from_documents([doc("a", "UNCHANGED"), doc("b", "IMPROVED")], []))
    assert (ok.decision, ok.reasons, ok.exit_status(3)) == (PASS, (), 0)
    assert ok.summary == "PASS: no rule triggered over 2 compared cases."


def test_a_custom_policy_turns_a_regression_into_a_block() -> None:
    facts = facts_from_documents([doc("b", "REGRESSED")], [])
    strict = policy_from_spec("strict", {"classifications": {"REGRESSED": "BLOCK"}})
    assert decide(strict, facts).decision == BLOCK
    assert strict.classifications["NEW_CRITICAL_FAILURE"] == BLOCK  # what it leaves out keeps the default


def test_tags_override_severity_which_overrides_the_classification_rule() -> None:
    policy = policy_from_spec(
        "layered",
        {
            "severities": {"low": {"REGRESSED": "PASS"}, "critical": {"REGRESSED": "BLOCK"}},
            "tags": {"payments": {"REGRESSED": "BLOCK"}, "beta": {"REGRESSED": "PASS"}},
        },
    )
    cases = [
        doc("low", "REGRESSED", severity="low"),
        doc("crit", "REGRESSED", severity="critical"),
        doc("low-pay", "REGRESSED", severity="low", tags=("payments",)),
        doc("crit-beta", "REGRESSED", severity="critical", tags=("beta",)),
        doc("two-tags", "REGRESSED", tags=("beta", "payments")),  # the strictest matching tag wins
        doc("medium", "REGRESSED"),
    ]
    decision = decide(policy, facts_from_documents(cases, []))
    actions = {r.scenario: r.action for r in decision.reasons}
    assert actions == {"crit": BLOCK, "low-pay": BLOCK, "two-tags": BLOCK, "medium": WARN}


def test_metric_rules_fire_on_thresholds_and_an_unknown_metric_warns_never_passes() -> None:
    facts = facts_from_documents([doc("a", "UNCHANGED", c_retries=2), doc("b", "UNCHANGED")], [])
    assert facts.metrics["candidate.retries"] == 2 and facts.metrics["delta.retries"] == 2
    assert facts.metrics["candidate.pass_rate"] == 1.0 and facts.metrics["candidate.cost_usd"] is None
    policy = GatePolicy(
        name="m",
        metrics=(
            MetricRule("candidate.retries", BLOCK, max=1),
            MetricRule("candidate.pass_rate", WARN, min=0.5),  # holds
            MetricRule("candidate.cost_usd", BLOCK, max=1.0),  # nobody reported a cost
        ),
    )
    decision = decide(policy, facts)
    assert [(r.action, r.rule) for r in decision.reasons] == [
        (BLOCK, "metric:candidate.retries"),
        (WARN, "metric:candidate.cost_usd"),
    ]
    assert "could not be computed" in decision.reasons[1].message


def test_a_class_the_policy_does_not_know_warns_and_no_case_is_an_error() -> None:
    facts = facts_from_documents([doc("x", "SOMETHING_NEW")], [])
    assert decide(DEFAULT_POLICY, facts).decision == WARN
    with pytest.raises(GateError, match="no compared case"):
        decide(DEFAULT_POLICY, facts_from_documents([], []))


def test_policy_and_facts_hashes_are_stable_and_the_default_spelled_out_has_the_default_hash() -> None:
    spelled = policy_from_spec(
        "default",
        {"classifications": {"NEW_CRITICAL_FAILURE": "BLOCK", "REGRESSED": "WARN"}, "contradictions": "BLOCK"},
    )
    assert spelled.hash == DEFAULT_POLICY.hash
    assert policy_from_spec("default", {"contradictions": "WARN"}).hash != DEFAULT_POLICY.hash
    a = facts_from_documents([doc("b", "REGRESSED"), doc("a", "UNCHANGED")], [LIE])
    b = facts_from_documents([doc("a", "UNCHANGED"), doc("b", "REGRESSED")], [LIE])
    assert a.hash == b.hash  # order of the stored rows does not matter
    assert isinstance(a.cases[0], GateCase) and a.cases[0].scenario == "a"

"""First divergence: kinds, summary sentences and impact sentences, word for word (spec §6.5)."""

from __future__ import annotations

from comparison_builders import (
    EMAIL,
    call,
    case_run,
    timeout_baseline_records,
    timeout_candidate_records,
)

from evaluation.divergence import first_divergence
from evaluation.trajectory import build_trajectory

LOOKUP = {"order_id": "ORD-1001"}
REFUND = {"order_id": "ORD-1001", "amount": 40}
OVER_LIMIT_REASON = "Refund of 450.00 USD exceeds the automatic limit of 100.00 USD."


def diverge(baseline: list, candidate: list, **kw: object):  # type: ignore[no-untyped-def]
    b_kw = {k[2:]: v for k, v in kw.items() if k.startswith("b_")}
    c_kw = {k[2:]: v for k, v in kw.items() if k.startswith("c_")}
    return first_divergence(
        build_trajectory(case_run(baseline, **b_kw)),  # type: ignore[arg-type]
        build_trajectory(case_run(candidate, **c_kw)),
    )  # type: ignore[arg-type]


def test_demo_timeout_tool_divergence_and_skipped_check() -> None:
    d = diverge(timeout_baseline_records(), timeout_candidate_records())
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


def test_demo_over_limit_divergence_is_state_changing() -> None:
    escalation = {"order_id": "ORD-1002", "amount": 450, "reason": OVER_LIMIT_REASON}
    baseline = [
        call(1, "lookup_order", {"order_id": "ORD-1002"}),
        call(2, "get_refund_policy", {"order_id": "ORD-1002"}),
        call(3, "escalate_to_human", escalation),
    ]
    candidate = [call(1, "lookup_order", {"order_id": "ORD-1002"}), call(2, "escalate_to_human", escalation)]
    d = diverge(baseline, candidate)
    assert d is not None
    assert d.summary == (
        "At step 2 the baseline called get_refund_policy(order_id=ORD-1002); the candidate called "
        "escalate_to_human(amount=450, order_id=ORD-1002, "
        "reason=Refund of 450.00 USD exceeds the automatic limit of 100.00 …)."
    )
    assert d.impact == (
        "The candidate called the state-changing escalate_to_human without first calling get_refund_policy, "
        "which the baseline called at this point."
    )


def test_no_skipped_check_when_the_candidate_called_that_tool_earlier() -> None:
    baseline = [
        call(1, "lookup_order", LOOKUP),
        call(2, "lookup_order", {"order_id": "ORD-9"}),
        call(3, "refund_payment", REFUND),
    ]
    candidate = [call(1, "lookup_order", LOOKUP), call(2, "refund_payment", REFUND)]
    d = diverge(baseline, candidate)
    assert d is not None
    assert d.kind == "tool"
    assert d.impact is None


def test_checked_with_is_the_mirror_of_the_skipped_check() -> None:
    d = diverge(timeout_candidate_records(), timeout_baseline_records())
    assert d is not None
    assert d.summary == (
        "At step 2 the baseline called refund_payment(amount=40, order_id=ORD-1001); "
        "the candidate called get_refund_policy(order_id=ORD-1001)."
    )
    assert (
        d.impact
        == "The candidate checked with get_refund_policy where the baseline went on to refund_payment."
    )


def test_repeat_after_an_applied_failure_names_the_earlier_step() -> None:
    shared = [
        call(1, "lookup_order", LOOKUP),
        call(2, "get_refund_policy", LOOKUP),
        call(3, "refund_payment", REFUND, status="timeout", mutated=True),
    ]
    baseline = [*shared, call(4, "lookup_order", LOOKUP), call(5, "send_email", dict(EMAIL))]
    candidate = [*shared, call(4, "refund_payment", REFUND), call(5, "send_email", dict(EMAIL))]
    d = diverge(baseline, candidate)
    assert d is not None
    assert (d.index, d.kind) == (4, "tool")
    assert d.summary == (
        "At step 4 the baseline called lookup_order(order_id=ORD-1001); "
        "the candidate called refund_payment(amount=40, order_id=ORD-1001)."
    )
    assert d.impact == (
        "The candidate repeated refund_payment after a timeout that had already applied it (step 3); "
        "the baseline called lookup_order(order_id=ORD-1001) at this point instead."
    )


def test_repeat_after_an_applied_failure_when_the_baseline_had_stopped() -> None:
    shared = [
        call(1, "lookup_order", LOOKUP),
        call(2, "refund_payment", REFUND, status="timeout", mutated=True),
    ]
    d = diverge(
        shared,
        [*shared, call(3, "refund_payment", REFUND)],
        b_claimed="PARTIAL",
        b_business="REFUND_ESCALATED",
    )
    assert d is not None
    assert (d.index, d.kind) == (3, "extra_steps")
    assert d.summary == (
        "The baseline stopped after step 2 and reported PARTIAL; "
        "the candidate went on with refund_payment(amount=40, order_id=ORD-1001)."
    )
    assert d.impact == (
        "The candidate repeated refund_payment after a timeout that had already applied it (step 2); "
        "the baseline had stopped."
    )


def test_write_after_the_baseline_stopped() -> None:
    d = diverge(
        [call(1, "lookup_order", LOOKUP)],
        [call(1, "lookup_order", LOOKUP), call(2, "refund_payment", REFUND)],
    )
    assert d is not None
    assert d.kind == "extra_steps"
    assert d.summary == (
        "The baseline stopped after step 1 and reported SUCCESS; "
        "the candidate went on with refund_payment(amount=40, order_id=ORD-1001)."
    )
    assert d.impact == "The candidate called the irreversible refund_payment after the baseline had stopped."


def test_extra_read_after_the_baseline_stopped_has_no_impact() -> None:
    d = diverge(
        [call(1, "lookup_order", LOOKUP)], [call(1, "lookup_order", LOOKUP), call(2, "lookup_order", LOOKUP)]
    )
    assert d is not None
    assert (d.kind, d.impact) == ("extra_steps", None)


def test_stopped_early_without_the_escalation() -> None:
    baseline = [
        call(1, "lookup_order", {"order_id": "ORD-1002"}),
        call(2, "get_refund_policy", {"order_id": "ORD-1002"}),
        call(3, "escalate_to_human", {"order_id": "ORD-1002"}),
    ]
    d = diverge(
        baseline, [call(1, "lookup_order", {"order_id": "ORD-1002"})], c_claimed="failure", c_business=None
    )
    assert d is not None
    assert (d.index, d.kind) == (2, "stopped_early")
    assert d.summary == (
        "The candidate stopped after step 1 and reported FAILURE; "
        "the baseline went on with get_refund_policy(order_id=ORD-1002)."
    )
    assert d.impact == "The candidate never called escalate_to_human."


def test_stopped_early_without_a_write() -> None:
    d = diverge(
        [call(1, "lookup_order", LOOKUP), call(2, "refund_payment", REFUND)],
        [call(1, "lookup_order", LOOKUP)],
    )
    assert d is not None
    assert d.kind == "stopped_early"
    assert d.impact == (
        "The candidate ended without calling the irreversible refund_payment, which the baseline called."
    )


def test_escalation_tools_come_from_the_case_context() -> None:
    baseline = build_trajectory(
        case_run([call(1, "lookup_order", LOOKUP), call(2, "page_oncall", {}, risk="EXECUTE")])
    )
    candidate = build_trajectory(case_run([call(1, "lookup_order", LOOKUP)]))
    d = first_divergence(baseline, candidate, escalation_tools=("page_oncall",))
    assert d is not None
    assert d.impact == "The candidate never called page_oncall."
    d2 = first_divergence(baseline, candidate)
    assert d2 is not None
    assert d2.impact == (
        "The candidate ended without calling the action-taking page_oncall, which the baseline called."
    )


def test_arguments_dropped_idempotency_key() -> None:
    keyed = {**REFUND, "idempotency_key": "refund-ORD-1001-40.00"}
    d = diverge([call(1, "refund_payment", keyed)], [call(1, "refund_payment", REFUND)])
    assert d is not None
    assert (d.index, d.kind) == (1, "arguments")
    assert (
        d.summary
        == "At step 1 both called refund_payment, with different arguments: idempotency_key dropped."
    )
    assert d.impact == (
        "The candidate sent refund_payment without the idempotency key the baseline used (idempotency_key)."
    )


def test_arguments_added_changed_and_more_than_three() -> None:
    d = diverge(
        [call(1, "send_email", {"customer_id": "CUS-100", "template": "a", "meta": {"x": 1, "y": [1, 2]}})],
        [
            call(
                1,
                "send_email",
                {
                    "customer_id": "CUS-101",
                    "template": "b",
                    "order_id": "ORD-1",
                    "meta": {"x": 2.5, "y": [1, 3]},
                },
            )
        ],
    )
    assert d is not None
    assert d.kind == "arguments"
    assert d.summary == (
        "At step 1 both called send_email, with different arguments: customer_id CUS-100 → CUS-101; "
        "meta.x 1 → 2.5; meta.y[1] 2 → 3 (+2 more)."
    )
    assert d.impact is None
    d2 = diverge(
        [call(1, "send_email", {"customer_id": "CUS-100"})],
        [call(1, "send_email", {"customer_id": "CUS-100", "order_id": "ORD-1"})],
    )
    assert d2 is not None
    assert d2.summary == "At step 1 both called send_email, with different arguments: order_id=ORD-1 added."


def test_result_divergence_with_and_without_effects() -> None:
    d = diverge(
        [call(1, "refund_payment", REFUND)],
        [call(1, "refund_payment", REFUND, status="timeout", mutated=True)],
    )
    assert d is not None
    assert (d.kind, d.summary) == (
        "result",
        "At step 1 both made the same refund_payment call; the baseline's ended ok (applied), "
        "the candidate's timeout (applied).",
    )
    d2 = diverge([call(1, "lookup_order", LOOKUP)], [call(1, "lookup_order", LOOKUP, status="not_found")])
    assert d2 is not None
    assert d2.summary == (
        "At step 1 both made the same lookup_order call; the baseline's ended ok, the candidate's not_found."
    )


def test_policy_met_on_both_sides_differently_and_a_leak() -> None:
    d = diverge(
        [call(1, "lookup_customer", {"customer_id": "CUS-200"}, policy_violation="TOOL_NOT_ALLOWED")],
        [call(1, "lookup_customer", {"customer_id": "CUS-200"}, cross_tenant="allowed")],
    )
    assert d is not None
    assert (d.index, d.kind) == (2, "policy")
    assert d.summary == (
        "At step 2 the baseline met policy TOOL_NOT_ALLOWED (violated); "
        "the candidate met policy CROSS_TENANT (allowed)."
    )
    assert d.impact == "The candidate received data CROSS_TENANT should have kept from it."


def test_policy_met_by_the_candidate_only_refused() -> None:
    args = {"customer_id": "CUS-100"}
    d = diverge(
        [call(1, "export_customer_data", args, status="denied"), call(2, "escalate_to_human", {})],
        [
            call(1, "export_customer_data", args, status="denied", policy_violation="ADMIN_ONLY"),
            call(2, "escalate_to_human", {}),
        ],
    )
    assert d is not None
    assert d.summary == (
        "At step 2 the candidate's export_customer_data call met policy ADMIN_ONLY (denied); "
        "the baseline's did not."
    )
    assert d.impact == "The candidate's call was refused by policy ADMIN_ONLY."


def test_policy_met_by_the_baseline_only() -> None:
    args = {"customer_id": "CUS-200"}
    d = diverge(
        [call(1, "lookup_customer", args, cross_tenant="allowed"), call(2, "escalate_to_human", {})],
        [call(1, "lookup_customer", args), call(2, "escalate_to_human", {})],
    )
    assert d is not None
    assert d.summary == (
        "At step 2 the baseline's lookup_customer call met policy CROSS_TENANT (allowed); "
        "the candidate's did not."
    )
    assert d.impact is None


def test_outcome_divergence() -> None:
    d = diverge(
        [call(1, "lookup_order", LOOKUP)],
        [call(1, "lookup_order", LOOKUP)],
        b_claimed="PARTIAL",
        b_business="REFUND_ESCALATED",
    )
    assert d is not None
    assert (d.index, d.kind) == (2, "outcome")
    assert d.summary == (
        "The baseline reported outcome PARTIAL (REFUND_ESCALATED); "
        "the candidate reported outcome SUCCESS (REFUND_COMPLETED)."
    )
    assert d.impact is None


def test_identical_trajectories_do_not_diverge() -> None:
    assert diverge(timeout_baseline_records(), timeout_baseline_records()) is None

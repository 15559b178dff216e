"""Normalized trajectories: steps from the twin's records, labels and signatures (spec §6.5)."""

from __future__ import annotations

from comparison_builders import call, case_run, retrieval, timeout_candidate_records

from evaluation.case import AgentFinding
from evaluation.trajectory import (
    MAX_STEPS,
    NO_ANSWER,
    NOT_RUN,
    OUTCOME,
    POLICY,
    RETRIEVAL,
    TOOL,
    build_trajectory,
    render_value,
    riskiest,
    tool_label,
    tools_used,
)


def test_steps_come_from_the_twin_records_in_seq_order_and_end_with_the_claim() -> None:
    case = case_run(
        [
            call(3, "send_email", {"customer_id": "CUS-100"}),
            call(1, "lookup_order", {"order_id": "ORD-1001"}),
        ],
        retrievals=[retrieval(2, "refund policy")],
    )
    steps = build_trajectory(case)
    assert [(s.kind, s.name) for s in steps] == [
        (TOOL, "lookup_order"),
        (RETRIEVAL, "retrieval"),
        (TOOL, "send_email"),
        (OUTCOME, "SUCCESS"),
    ]
    assert steps[1].label == "retrieval(refund policy)"
    assert steps[-1].label == "outcome SUCCESS (REFUND_COMPLETED)"


def test_the_agents_own_list_of_calls_is_never_read() -> None:
    case = case_run([call(1, "lookup_order", {"order_id": "ORD-1001"})])
    claimed = case.__class__(
        **{**case.__dict__, "claimed_calls": ({"name": "refund_payment", "arguments": {}},)}
    )
    assert [s.name for s in build_trajectory(claimed)] == ["lookup_order", "SUCCESS"]


def test_redelivered_records_are_not_agent_steps() -> None:
    case = case_run(
        [
            call(1, "refund_payment", {"order_id": "ORD-1001", "amount": 40}),
            call(2, "refund_payment", {"order_id": "ORD-1001", "amount": 40}, redelivered=True),
        ]
    )
    assert [s.kind for s in build_trajectory(case)] == [TOOL, OUTCOME]


def test_effects_are_applied_replayed_or_none() -> None:
    case = case_run(
        [
            call(
                1,
                "refund_payment",
                {"order_id": "O", "amount": 1, "idempotency_key": "k"},
                status="timeout",
                mutated=True,
            ),
            call(2, "refund_payment", {"order_id": "O", "amount": 1, "idempotency_key": "k"}, replayed=True),
            call(3, "lookup_order", {"order_id": "O"}),
        ]
    )
    steps = build_trajectory(case)
    assert [(s.status, s.effect) for s in steps[:3]] == [
        ("timeout", "applied"),
        ("ok", "replayed"),
        ("ok", None),
    ]
    assert steps[0].signature == (
        TOOL,
        "refund_payment",
        '{"amount":1,"idempotency_key":"k","order_id":"O"}',
        "timeout",
        "applied",
    )


def test_policy_steps_follow_denied_violated_and_leaking_calls() -> None:
    case = case_run(
        [
            call(
                1,
                "lookup_order",
                {"order_id": "ORD-2001"},
                status="denied",
                policy_violation="CROSS_TENANT",
                cross_tenant="denied",
            ),
            call(
                2,
                "export_customer_data",
                {"customer_id": "CUS-100"},
                status="denied",
                policy_violation="ADMIN_ONLY",
            ),
            call(3, "lookup_customer", {"customer_id": "CUS-100"}, cross_tenant="allowed"),
            call(4, "send_email", {"customer_id": "CUS-100"}, policy_violation="TOOL_NOT_ALLOWED"),
        ]
    )
    labels = [s.label for s in build_trajectory(case) if s.kind == POLICY]
    assert labels == [
        "policy CROSS_TENANT (denied)",
        "policy ADMIN_ONLY (denied)",
        "policy CROSS_TENANT (allowed)",
        "policy TOOL_NOT_ALLOWED (violated)",
    ]


def test_outcome_step_variants() -> None:
    never = case_run(
        [],
        agent_status=None,
        claimed=None,
        business=None,
        finding=AgentFinding("AGENT_UNREACHABLE", "no route"),
    )
    no_answer = case_run(
        [call(1, "lookup_order", {"order_id": "O"})],
        agent_status=None,
        claimed=None,
        business=None,
        finding=AgentFinding("AGENT_TIMEOUT", "slow"),
    )
    unreported = case_run([], claimed=None, business=None)
    lower = case_run([], claimed="partial", business="REFUND_ESCALATED")
    assert build_trajectory(never)[-1].name == NOT_RUN
    last = build_trajectory(no_answer)[-1]
    assert (last.name, last.status, last.label) == (
        NO_ANSWER,
        "AGENT_TIMEOUT",
        "outcome NO_ANSWER (AGENT_TIMEOUT)",
    )
    assert build_trajectory(unreported)[-1].label == "outcome UNREPORTED"
    assert build_trajectory(lower)[-1].label == "outcome PARTIAL (REFUND_ESCALATED)"


def test_labels_sort_arguments_render_json_numbers_and_truncate_values() -> None:
    steps = build_trajectory(case_run(timeout_candidate_records()))
    assert steps[1].label == "refund_payment(amount=40, order_id=ORD-1001)"
    reason = "Refund of 450.00 USD exceeds the automatic limit of 100.00 USD."
    label = tool_label("escalate_to_human", {"reason": reason, "order_id": "ORD-1002", "amount": 450})
    assert label == (
        "escalate_to_human(amount=450, order_id=ORD-1002, "
        "reason=Refund of 450.00 USD exceeds the automatic limit of 100.00 …)"
    )
    assert render_value(2.5) == "2.5"
    assert render_value(True) == "true"
    assert render_value(None) == "null"
    assert render_value({"b": 1.0, "a": [1, "x"]}) == '{"a":[1,"x"],"b":1}'
    assert len(render_value("x" * 100)) == 60


def test_labels_are_at_most_160_characters() -> None:
    args = {f"k{i}": "v" * 50 for i in range(6)}
    label = tool_label("t", args)
    assert len(label) == 160
    assert label.endswith("…")


def test_integral_floats_and_ints_give_the_same_signature() -> None:
    a = build_trajectory(case_run([call(1, "refund_payment", {"amount": 40, "order_id": "O"})]))
    b = build_trajectory(case_run([call(1, "refund_payment", {"amount": 40.0, "order_id": "O"})]))
    assert a[0].signature == b[0].signature


def test_retrieval_signatures_ignore_the_query() -> None:
    a = build_trajectory(case_run([], retrievals=[retrieval(1, "refund policy")]))
    b = build_trajectory(case_run([], retrievals=[retrieval(1, "how long do refunds take")]))
    assert a[0].signature == b[0].signature == (RETRIEVAL, "retrieval", "", None, None)
    assert a[0].label != b[0].label


def test_at_most_200_steps_with_the_outcome_kept_last() -> None:
    records = [call(i, "lookup_order", {"order_id": f"O-{i}"}) for i in range(1, 300)]
    steps = build_trajectory(case_run(records))
    assert len(steps) == MAX_STEPS
    assert steps[-1].kind == OUTCOME
    assert steps[-2].seq == MAX_STEPS - 1


def test_tools_used_and_riskiest_tool() -> None:
    case = case_run(timeout_candidate_records())
    assert tools_used(case) == ("lookup_order", "refund_payment", "send_email")
    assert riskiest(["READ", "WRITE_REVERSIBLE", None]) == "WRITE_REVERSIBLE"
    assert riskiest(["WRITE_IRREVERSIBLE", "ADMIN", "EXECUTE"]) == "ADMIN"
    assert riskiest(["EXECUTE", "WRITE_REVERSIBLE"]) == "EXECUTE"
    assert riskiest([]) == "none"
    assert riskiest([None, "SOMETHING"]) == "none"

"""LCS alignment, final-state changes and tool selection (spec §6.5)."""

from __future__ import annotations

from comparison_builders import call, case_run, timeout_baseline_records, timeout_candidate_records
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.alignment import align, state_changes, tool_selection
from evaluation.trajectory import build_trajectory


def test_demo_timeout_alignment_rows() -> None:
    rows = align(
        build_trajectory(case_run(timeout_baseline_records())),
        build_trajectory(case_run(timeout_candidate_records())),
    )
    assert [(r.match, r.baseline, r.candidate) for r in rows] == [
        ("same", "lookup_order(order_id=ORD-1001)", "lookup_order(order_id=ORD-1001)"),
        ("baseline_only", "get_refund_policy(order_id=ORD-1001)", None),
        (
            "changed",
            "refund_payment(amount=40, idempotency_key=refund-ORD-1001-40.00, order_id=ORD-1001)",
            "refund_payment(amount=40, order_id=ORD-1001)",
        ),
        ("baseline_only", "lookup_order(order_id=ORD-1001)", None),
        ("candidate_only", None, "refund_payment(amount=40, order_id=ORD-1001)"),
        (
            "same",
            "send_email(customer_id=CUS-100, order_id=ORD-1001, template=refund_confirmation)",
            "send_email(customer_id=CUS-100, order_id=ORD-1001, template=refund_confirmation)",
        ),
        ("same", "outcome SUCCESS (REFUND_COMPLETED)", "outcome SUCCESS (REFUND_COMPLETED)"),
    ]
    assert rows[0].to_dict() == {
        "baseline": "lookup_order(order_id=ORD-1001)",
        "candidate": "lookup_order(order_id=ORD-1001)",
        "match": "same",
    }


def _steps(names: list[str]):  # type: ignore[no-untyped-def]
    return build_trajectory(case_run([call(i + 1, n, {}) for i, n in enumerate(names)]))


def _lcs_len(a: list[str], b: list[str]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a)):
        for j in range(len(b)):
            table[i + 1][j + 1] = table[i][j] + 1 if a[i] == b[j] else max(table[i][j + 1], table[i + 1][j])
    return table[-1][-1]


TOOLS = st.lists(
    st.sampled_from(["lookup_order", "get_refund_policy", "refund_payment", "send_email"]), max_size=8
)


@settings(max_examples=150, deadline=None)
@given(TOOLS, TOOLS)
def test_alignment_is_a_longest_common_subsequence_covering_both_sides(a: list[str], b: list[str]) -> None:
    rows = align(_steps(a), _steps(b))
    matched = [r for r in rows if r.match in ("same", "changed")]
    assert len(matched) == _lcs_len(a, b) + 1  # + the shared OUTCOME step
    assert [r.baseline for r in rows if r.baseline is not None] == [s.label for s in _steps(a)]
    assert [r.candidate for r in rows if r.candidate is not None] == [s.label for s in _steps(b)]
    assert all(r.match == "same" for r in matched)  # no arguments, same statuses: every match is the same


def test_alignment_of_a_trajectory_with_itself_is_all_same() -> None:
    steps = build_trajectory(case_run(timeout_baseline_records()))
    assert {r.match for r in align(steps, steps)} == {"same"}


def test_state_changes_baseline_to_candidate() -> None:
    b = {
        "orders": {"ORD-1001": {"refund_count": 1, "refunded_amount": 40}},
        "escalations": [{"ticket_id": "TCK-0003"}],
        "gone": 1,
    }
    c = {
        "orders": {"ORD-1001": {"refund_count": 2, "refunded_amount": 40.0}},
        "escalations": [{"ticket_id": "TCK-0002"}],
        "new": [1],
    }
    assert [d.to_dict() for d in state_changes(b, c)] == [
        {
            "path": "escalations[0].ticket_id",
            "change": "changed",
            "baseline": "TCK-0003",
            "candidate": "TCK-0002",
        },
        {"path": "gone", "change": "removed", "baseline": 1},
        {"path": "new", "change": "added", "candidate": [1]},
        {"path": "orders.ORD-1001.refund_count", "change": "changed", "baseline": 1, "candidate": 2},
    ]
    assert state_changes(None, c) == ()
    assert state_changes(b, b) == ()


def test_state_changes_are_capped_at_25() -> None:
    b = {f"k{i:02}": i for i in range(40)}
    c = {f"k{i:02}": i + 1 for i in range(40)}
    changes = state_changes(b, c)
    assert len(changes) == 25
    assert changes[0].path == "k00"


def test_tool_selection_added_and_removed() -> None:
    sel = tool_selection(
        ["get_refund_policy", "lookup_order", "escalate_to_human"],
        ["lookup_order", "escalate_to_human", "send_email"],
    )
    assert sel.to_dict() == {"added": ["send_email"], "removed": ["get_refund_policy"]}

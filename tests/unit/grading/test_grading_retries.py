from __future__ import annotations

import pytest
from grading_builders import rec

from evaluation.retries import (
    TraceCall,
    count_retries,
    count_trace_retries,
    is_retry,
    is_trace_retry,
    retry_seqs,
)

REFUND = {"order_id": "ORD-1001", "amount": 40}


def test_confirming_reread_counts_zero_retries() -> None:
    # 1.2.4 timeout story: the re-read after the timed-out refund repeats lookup_order(ORD-1001)
    records = [
        rec(1, "lookup_order"),
        rec(2, "get_refund_policy"),
        rec(3, "refund_payment", REFUND, http=504, mutated=True),
        rec(4, "lookup_order", call_number=2),
        rec(5, "send_email", {"customer_id": "CUS-100"}),
    ]
    assert count_retries(records) == 0


def test_blind_retry_of_a_failed_write_counts_one() -> None:
    records = [
        rec(1, "lookup_order"),
        rec(2, "refund_payment", REFUND, http=504, mutated=True),
        rec(3, "refund_payment", REFUND, call_number=2),
        rec(4, "send_email", {"customer_id": "CUS-100"}),
    ]
    assert count_retries(records) == 1
    assert retry_seqs(records) == (3,)
    assert count_retries(records, tool="refund_payment") == 1
    assert count_retries(records, tool="lookup_order") == 0


def test_rate_limited_three_attempts_are_two_retries() -> None:
    records = [rec(i, "refund_payment", REFUND, http=429, call_number=i) for i in (3, 4, 5)]
    assert retry_seqs(records) == (4, 5)


@pytest.mark.parametrize(
    ("status", "retry"),
    [
        ("error", True),
        ("timeout", True),
        ("rate_limited", True),
        ("denied", True),
        ("invalid", True),
        ("dropped", True),
        ("partial", True),
        ("malformed", True),
        ("not_found", False),
        ("ok", False),
        ("unknown_tool", False),
    ],
)
def test_previous_status_decides(status: str, retry: bool) -> None:
    previous = rec(1, "refund_payment", REFUND, http=500, status=status)
    assert is_retry(rec(2, "refund_payment", REFUND), previous) is retry


def test_different_arguments_or_tool_are_new_calls() -> None:
    failed = rec(1, "refund_payment", REFUND, http=500, status="error")
    assert not is_retry(rec(2, "refund_payment", {"order_id": "ORD-1001", "amount": 41}), failed)
    assert not is_retry(rec(2, "lookup_order", REFUND), failed)
    assert not is_retry(rec(2, "refund_payment", REFUND), None)
    # key order does not matter: canonical arguments
    assert is_retry(rec(2, "refund_payment", {"amount": 40, "order_id": "ORD-1001"}), failed)


def test_only_the_previous_call_of_the_same_tool_counts() -> None:
    records = [
        rec(1, "refund_payment", REFUND, http=500, status="error"),
        rec(2, "lookup_order"),  # other tools in between do not matter
        rec(3, "refund_payment", {"order_id": "ORD-1001", "amount": 41}, http=500, status="error"),
        rec(4, "refund_payment", REFUND),  # previous refund call had other args
    ]
    assert retry_seqs(records) == ()


def test_redeliveries_are_not_agent_calls() -> None:
    records = [
        rec(1, "refund_payment", REFUND, http=500, status="error"),
        rec(2, "refund_payment", REFUND, redelivered=True),
        rec(3, "refund_payment", REFUND),
    ]
    assert retry_seqs(records) == (3,)


def test_trace_level_rule() -> None:
    assert is_trace_retry(TraceCall("refund_payment", "h1", "ok", attempt=2), None)
    failed = TraceCall("refund_payment", "h1", "timeout", attempt=1)
    assert is_trace_retry(TraceCall("refund_payment", "h1", "ok", attempt=1), failed)
    assert not is_trace_retry(TraceCall("refund_payment", "h2", "ok"), failed)
    assert not is_trace_retry(TraceCall("lookup_order", "h1", "ok"), TraceCall("lookup_order", "h1", "ok"))
    calls = [
        TraceCall("lookup_order", "a", "ok", 1),
        TraceCall("refund_payment", "r", "timeout", 1),
        TraceCall("lookup_order", "a", "ok", 1),  # re-read after success: attempt 1, not a retry
        TraceCall("refund_payment", "r", "ok", 2),
    ]
    assert count_trace_retries(calls) == 1
    assert count_trace_retries(calls, tool="lookup_order") == 0


def test_retries_are_counted_on_every_tool_whatever_comes_between() -> None:
    # each tool keeps its own previous call: another tool's call in between does not hide a retry
    lookup = {"order_id": "ORD-1001"}
    records = [
        rec(1, "refund_payment", REFUND, http=504, status="timeout"),
        rec(2, "lookup_order", lookup, http=500, status="error"),
        rec(3, "refund_payment", REFUND, call_number=2),
        rec(4, "lookup_order", lookup, call_number=2),
        rec(5, "send_email", {"customer_id": "CUS-100"}, http=429),
        rec(6, "get_refund_policy", {}),
        rec(7, "send_email", {"customer_id": "CUS-100"}, call_number=2),
    ]
    assert retry_seqs(records) == (3, 4, 7)
    assert count_retries(records) == 3
    assert [count_retries(records, tool=t) for t in ("refund_payment", "lookup_order", "send_email")] == [1, 1, 1]
    assert count_retries(records, tool="get_refund_policy") == 0
    calls = [
        TraceCall("refund_payment", "r", "timeout", 1),
        TraceCall("lookup_order", "a", "error", 1),
        TraceCall("refund_payment", "r", "ok", 1),
        TraceCall("lookup_order", "a", "ok", 1),
    ]
    assert count_trace_retries(calls) == 2
    assert count_trace_retries(calls, tool="refund_payment") == 1
    assert count_trace_retries(calls, tool="lookup_order") == 1

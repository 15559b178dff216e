from __future__ import annotations

from grading_builders import rec

from evaluation.calls import (
    FAILED_STATUSES,
    agent_calls,
    applied,
    discarded_success,
    executed,
    failed,
    succeeded,
)


def test_succeeded_is_2xx_only() -> None:
    assert succeeded(rec(1, "lookup_order", http=200))
    assert succeeded(rec(1, "lookup_order", http=204))
    assert not succeeded(rec(1, "lookup_order", http=199, status="error"))
    assert not succeeded(rec(1, "lookup_order", http=300, status="error"))
    assert not succeeded(rec(1, "refund_payment", http=0, status="dropped"))


def test_executed_reads_never_execute_unless_mutated() -> None:
    assert not executed(rec(1, "lookup_order"))
    assert not executed(rec(1, "lookup_order", risk=None))
    assert executed(rec(1, "refund_payment"))


def test_executed_covers_mutation_behind_a_failed_reply() -> None:
    timeout_after = rec(1, "refund_payment", http=504, mutated=True)
    assert executed(timeout_after)


def test_replay_and_refusal_do_not_execute() -> None:
    assert not executed(rec(1, "refund_payment", mutated=False, replayed=True))
    assert not executed(rec(1, "export_customer_data", http=403, mutated=False))
    # a successful non-read tool that changed nothing (static handler) still executed
    assert executed(rec(1, "export_customer_data", mutated=False))


def test_agent_calls_drop_redeliveries_unless_asked_and_sort_by_seq() -> None:
    records = [rec(3, "send_email"), rec(1, "lookup_order"), rec(2, "refund_payment", redelivered=True)]
    assert [r.seq for r in agent_calls(records)] == [1, 3]
    assert [r.seq for r in agent_calls(records, include_redelivered=True)] == [1, 2, 3]


def test_failed_statuses() -> None:
    assert {
        "error", "timeout", "rate_limited", "denied", "invalid", "dropped", "partial", "malformed"
    } == FAILED_STATUSES  # fmt: skip
    assert failed(rec(1, "refund_payment", http=429))
    assert not failed(rec(1, "lookup_order", http=404))  # not_found is a definitive answer
    assert not failed(rec(1, "lookup_order", http=200))


def test_applied_needs_a_change_list() -> None:
    assert applied(rec(1, "refund_payment"))
    assert not applied(rec(1, "refund_payment", changes=()))  # the old twin's no-op write: mutated, nothing changed
    assert not applied(rec(1, "lookup_order"))


def test_discarded_success_is_the_fault_not_a_write_that_changed_nothing() -> None:
    lie = rec(1, "refund_payment", mutated=False, fault="success_without_mutation")
    assert discarded_success(lie)
    assert not discarded_success(rec(1, "refund_payment", mutated=False))  # ran, nothing to change
    assert not discarded_success(rec(1, "refund_payment", mutated=False, replayed=True))
    assert not discarded_success(rec(1, "refund_payment", http=504, mutated=False, fault="timeout_before_mutation"))
    assert not discarded_success(rec(1, "lookup_order", fault="success_without_mutation"))

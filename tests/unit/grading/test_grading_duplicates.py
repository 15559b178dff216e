from __future__ import annotations

from grading_builders import rec

from evaluation.duplicates import DuplicateGroup, duplicate_groups, duplicate_side_effects

REFUND = {"order_id": "ORD-1001", "amount": 40}


def test_effect_key_groups_whatever_the_arguments() -> None:
    records = [
        rec(2, "refund_payment", REFUND, http=504, mutated=True),
        rec(3, "refund_payment", {"order_id": "ORD-1001", "amount": 40, "idempotency_key": "k2"}),
    ]
    assert duplicate_groups(records) == [DuplicateGroup("refund:ORD-1001", (2, 3))]
    assert duplicate_side_effects(records) == 1


def test_redelivery_counts_replay_does_not() -> None:
    redelivered = [rec(2, "refund_payment", REFUND), rec(3, "refund_payment", REFUND, redelivered=True)]
    assert duplicate_side_effects(redelivered) == 1
    replayed = [
        rec(2, "refund_payment", REFUND),
        rec(3, "refund_payment", REFUND, redelivered=True, replayed=True, mutated=False),
        rec(4, "refund_payment", REFUND, replayed=True, mutated=False),
    ]
    assert duplicate_groups(replayed) == []


def test_unmutated_calls_are_not_side_effects() -> None:
    records = [
        rec(1, "refund_payment", REFUND, http=504, mutated=False),  # timed out before the effect
        rec(2, "refund_payment", REFUND),
        rec(3, "refund_payment", REFUND, mutated=False),  # success without mutation
    ]
    assert duplicate_side_effects(records) == 0


def test_without_effect_key_tool_and_canonical_arguments_group() -> None:
    records = [
        rec(1, "send_email", {"customer_id": "CUS-100", "template": "t"}),
        rec(2, "send_email", {"template": "t", "customer_id": "CUS-100"}),
        rec(3, "send_email", {"customer_id": "CUS-100", "template": "other"}),
        rec(4, "send_email", {"template": "t", "customer_id": "CUS-100"}),
    ]
    groups = duplicate_groups(records)
    assert len(groups) == 1
    assert groups[0].seqs == (1, 2, 4)
    assert groups[0].key == 'send_email:{"customer_id":"CUS-100","template":"t"}'
    assert duplicate_side_effects(records) == 2


def test_tool_filter_and_several_groups() -> None:
    records = [
        rec(1, "refund_payment", REFUND),
        rec(2, "refund_payment", {"order_id": "ORD-1002", "amount": 5}),
        rec(3, "refund_payment", REFUND),
        rec(4, "refund_payment", {"order_id": "ORD-1002", "amount": 6}),
        rec(5, "send_email", {"customer_id": "CUS-100"}),
        rec(6, "send_email", {"customer_id": "CUS-100"}),
    ]
    assert [g.key for g in duplicate_groups(records)][:2] == ["refund:ORD-1001", "refund:ORD-1002"]
    assert duplicate_side_effects(records) == 3
    assert duplicate_side_effects(records, tool="refund_payment") == 2
    assert [g.times for g in duplicate_groups(records, tool="send_email")] == [2]

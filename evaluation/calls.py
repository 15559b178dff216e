"""What a twin call record means for grading: success, execution, failure, who made it.

One definition of each predicate; every evaluator and metric reads these.
"""

from __future__ import annotations

from collections.abc import Iterable

from twin_engine.faults import FAULTS
from twin_engine.records import CallRecord

# Record statuses that mean "the call did not get through" (spec §7.5). `not_found` and
# `unknown_tool` are definitive answers, not failures to retry.
FAILED_STATUSES = frozenset(
    {"error", "timeout", "rate_limited", "denied", "invalid", "dropped", "partial", "malformed"}
)

_NON_EXECUTING_RISKS = (None, "READ")


def succeeded(record: CallRecord) -> bool:
    """The caller got a 2xx reply."""
    return 200 <= record.http_status < 300


def failed(record: CallRecord) -> bool:
    """The record's status is one of FAILED_STATUSES."""
    return record.status in FAILED_STATUSES


def is_write(record: CallRecord) -> bool:
    """A call of a tool that acts: any risk above READ, or a handler that writes state."""
    return record.risk not in _NON_EXECUTING_RISKS or record.expects_mutation


def is_read(record: CallRecord) -> bool:
    """A call of a READ tool."""
    return record.risk == "READ" and not record.expects_mutation


def applied(record: CallRecord) -> bool:
    """The call changed state: the twin says so and its change list is not empty.

    The twin marks a write that changed nothing `mutated: false`; records written before it did
    (`mutated: true` with no changes) are read the same way.
    """
    return record.mutated and bool(record.changes)


def discarded_success(record: CallRecord) -> bool:
    """A write answered success but its effect was thrown away (a `success_without_mutation` fault).

    A write that ran and found nothing to change (an idempotent overwrite called again) is not one:
    the twin ran it, and the state already held what it writes.
    """
    fault = FAULTS.get(record.fault) if record.fault else None
    return (
        succeeded(record)
        and record.expects_mutation
        and not applied(record)
        and not record.replayed
        and fault is not None
        and fault.state == "discarded"
    )


def executed(record: CallRecord) -> bool:
    """The call took effect: it changed state, or a non-read tool succeeded without a replay.

    A replay answers from the stored result and has no second effect, so it never executes.
    """
    if record.mutated:
        return True
    return succeeded(record) and not record.replayed and record.risk not in _NON_EXECUTING_RISKS


def agent_calls(records: Iterable[CallRecord], include_redelivered: bool = False) -> tuple[CallRecord, ...]:
    """The calls the agent made, in seq order. Network redeliveries are not agent calls."""
    chosen = (r for r in records if include_redelivered or not r.redelivered)
    return tuple(sorted(chosen, key=lambda r: r.seq))


def calls_of(records: Iterable[CallRecord], tool: str | None) -> tuple[CallRecord, ...]:
    """The records of one tool (all records when `tool` is None), order kept."""
    return tuple(r for r in records if tool is None or r.tool == tool)

"""The one retry definition (spec §7.5, ADR-0018), used by maxRetries 1.1.0 and the comparison metric.

Twin-record level: a call is a retry when the previous agent call of the same tool had identical
canonical arguments and a failed status (FAILED_STATUSES). A re-read after a success is a new call,
and `not_found` is a definitive answer, so neither is a retry. Redeliveries are not agent calls.

Trace level: a tool span is a retry when its `attempt` attribute is above 1, or the previous call of
the same tool had the same argument hash and a failed result.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evaluation.calls import FAILED_STATUSES, agent_calls
from twin_engine.canonical import canonical_json
from twin_engine.records import CallRecord


def canonical_arguments(record: CallRecord) -> str:
    """The arguments in canonical JSON: the identity two calls must share to be the same call."""
    return canonical_json(record.arguments)


def is_retry(record: CallRecord, previous: CallRecord | None) -> bool:
    """`previous` is the agent's previous call of the same tool (None when there was none)."""
    if previous is None or previous.tool != record.tool:
        return False
    if previous.status not in FAILED_STATUSES:
        return False
    return canonical_arguments(previous) == canonical_arguments(record)


@dataclass(frozen=True)
class Retry:
    seq: int
    tool: str
    previous_seq: int
    previous_status: str


def retries(records: Iterable[CallRecord], tool: str | None = None) -> tuple[Retry, ...]:
    """Every retry among the agent's calls (of `tool`, or of all tools), in seq order."""
    last_by_tool: dict[str, CallRecord] = {}
    found: list[Retry] = []
    for record in agent_calls(records):
        previous = last_by_tool.get(record.tool)
        if (tool is None or record.tool == tool) and previous is not None and is_retry(record, previous):
            found.append(Retry(record.seq, record.tool, previous.seq, previous.status))
        last_by_tool[record.tool] = record
    return tuple(found)


def retry_seqs(records: Iterable[CallRecord], tool: str | None = None) -> tuple[int, ...]:
    return tuple(r.seq for r in retries(records, tool))


def count_retries(records: Iterable[CallRecord], tool: str | None = None) -> int:
    return len(retries(records, tool))


@dataclass(frozen=True)
class TraceCall:
    """A tool call as a trace reports it (`agenttwin.tool.*` attributes)."""

    tool: str
    args_hash: str | None
    result: str | None  # ok | error | timeout | rate_limited | denied | invalid
    attempt: int | None = None


def is_trace_retry(call: TraceCall, previous: TraceCall | None) -> bool:
    """`previous` is the trace's previous call of the same tool (None when there was none)."""
    if call.attempt is not None and call.attempt > 1:
        return True
    if previous is None or previous.tool != call.tool or call.args_hash is None:
        return False
    return previous.args_hash == call.args_hash and previous.result in FAILED_STATUSES


def count_trace_retries(calls: Sequence[TraceCall], tool: str | None = None) -> int:
    """Retries among a trace's tool calls, given in the order they were made."""
    last_by_tool: dict[str, TraceCall] = {}
    count = 0
    for call in calls:
        if (tool is None or call.tool == tool) and is_trace_retry(call, last_by_tool.get(call.tool)):
            count += 1
        last_by_tool[call.tool] = call
    return count

"""What the outcome join keeps of a trace's spans, beyond an explicit claim: its tool calls, agent, subjects
and final answer, and the claim read from that answer when the agent stated none (evaluation/claim_reader.py).

Everything here is plain data in the join's entry (the store may be a changelog on Kafka), updated
idempotently: the same span handled twice changes nothing, whatever order spans arrive in. The entry's
`reading` is the last ClaimRead content the join emitted; `revision` counts its changes.

Not every change is emitted at once (`_emitted_now`). While a trace states no claim and has no final answer,
most spans only add a tool to its list, and a ClaimRead for each was most of the events the joins wrote. Such
a claimless reading is emitted when it is the trace's first, when what the version tally counts of it
changes (agent, version, failed tools, an escalation tool), or once the trace's root span arrived; otherwise
it waits for the next reading that is emitted, or for the entry's close one horizon after its last event
(the outcome join emits it then, so a crashed agent's full reading still arrives). A reading with a claim is
emitted on every change, as before. The rule reads only the entry, never where a batch or a step ends; what
is held back until the close comes when the join's timer closes the entry, like its one-sided reports.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from evaluation.claim_reader import CLAIM_RULE_SETS, DEFAULT_CLAIM_RULES, ClaimReading, read_claim
from evaluation.contradiction import disproved_write
from evaluation.version_watch import is_escalation
from streams import ids
from streams.events import ClaimRead, SpanRecorded
from streams.span_reading import SpanReading, answer_rank

ClaimClassifier = Callable[[str | None], ClaimReading]


def take_span(entry: dict[str, Any], span: SpanRecorded, reading: SpanReading) -> None:
    """Fold one span's reading into the entry (reassigning, never mutating, the entry's values)."""
    if span.parent_span_id is None:
        entry["ended"] = True  # the run's root span: the agent is done, every later change is emitted at once
    if reading.is_tool:
        call = [span.start_unix_nano, reading.tool_name, reading.tool_error is not None, reading.write]
        entry["calls"] = {**entry.get("calls", {}), span.span_id: call}
    if reading.agent_name and reading.agent_name_rank > entry.get("agent_rank", 0):
        entry["agent"], entry["agent_rank"] = reading.agent_name, reading.agent_name_rank
    if reading.agent_version and reading.agent_version_rank > entry.get("version_rank", 0):
        entry["agent_version"], entry["version_rank"] = reading.agent_version, reading.agent_version_rank
    if reading.subjects:
        subjects = dict(entry.get("subjects", {}))
        for subject, tool in reading.subjects:
            if subjects.get(subject) is None:
                subjects[subject] = tool
        entry["subjects"] = subjects
    if reading.answer:
        rank = [*answer_rank(span)]
        best = entry.get("answer")
        if best is None or rank > best["rank"]:
            entry["answer"] = {"rank": rank, "text": reading.answer, "at": span.received_time}


def calls_in_order(entry: dict[str, Any]) -> list[tuple[str, bool, bool]]:
    """(tool, failed, write) per tool call, in the order the calls started (ties by span id)."""
    calls = entry.get("calls", {})
    return [(c[1], c[2], c[3]) for _, c in sorted(calls.items(), key=lambda kv: (kv[1][0], kv[0]))]


def inferred_claim(entry: dict[str, Any], classifier: ClaimClassifier) -> dict[str, Any] | None:
    """The claim read from the trace's final answer, as the join's claim record (None without an answer)."""
    answer = entry.get("answer")
    if answer is None:
        return None
    cached = entry.get("inferred")
    if cached is not None and cached["text"] == answer["text"] and not _older_rules(cached["inferred_by"]):
        # a classifier is asked once per answer (a model is billed per question)
        reading = ClaimReading(cached["status"], cached["inferred_by"], cached["rule"], cached.get("confidence"))
    else:
        reading = classifier(answer["text"])
        entry["inferred"] = {
            "text": answer["text"],
            "status": reading.status,
            "inferred_by": reading.inferred_by,
            "rule": reading.rule,
            "confidence": reading.confidence,
        }
    return {
        "status": reading.status,
        "agent": entry.get("agent"),
        "agent_version": entry.get("agent_version"),
        "case_id": None,
        "scenario": None,
        "tool": None,
        "at": answer["at"],
        "inferred_by": reading.inferred_by,
        "rule": reading.rule,
        "confidence": reading.confidence,
        "from_answer": True,  # the join read it; a claim on a span (stated, or read by an adapter) replaces it
    }


def _emitted_now(content: dict[str, Any], last: dict[str, Any] | None, ended: bool) -> bool:
    """Whether a changed reading is emitted now (module docstring): always, unless it is claimless, follows
    a claimless one, the run has not ended and the version tally would count both alike."""
    if last is None or ended or content["claimed_status"] is not None or last["claimed_status"] is not None:
        return True
    return _counted(content) != _counted(last)


def _counted(reading: dict[str, Any]) -> tuple[Any, ...]:
    """What the version tally counts of a claimless reading (evaluation/version_watch.trace_tally)."""
    tools = reading["tools"]
    return reading["agent"], reading["agent_version"], reading["failed_tools"], is_escalation(None, tools)


def _older_rules(inferred_by: str) -> bool:
    """A reading by a rule set other than the current one: read again (a new set re-reads on replay or
    restart; the ClaimRead events the older set produced stay as they were)."""
    return inferred_by in CLAIM_RULE_SETS and inferred_by != DEFAULT_CLAIM_RULES


def claim_read(
    entry: dict[str, Any], at: datetime, *, frozen: dict[str, Any] | None = None, closing: bool = False
) -> ClaimRead | None:
    """A ClaimRead when the trace's reading changed since the last one emitted and is emitted now (and mark
    it emitted), else None.

    `frozen`: the reading last emitted, of an entry the outcome join closed (it no longer keeps every call
    and the answer): only its claim is read again. `closing`: the join is closing the entry, so a reading
    still held back is emitted."""
    claim = entry.get("claim") or {}
    claimed = {
        "claimed_status": claim.get("status"),
        "claim_inferred_by": claim.get("inferred_by"),
        "claim_rule": claim.get("rule"),
        "claim_confidence": claim.get("confidence"),
    }
    if frozen is not None:
        content: dict[str, Any] = {**frozen, **claimed}
    else:
        calls = calls_in_order(entry)
        answer = entry.get("answer") or {}
        content = {
            "agent": entry.get("agent"),
            "agent_version": entry.get("agent_version"),
            "tools": [tool for tool, _, _ in calls],
            "failed_tools": [tool for tool, failed, _ in calls if failed],
            # the write a verification by trace id would name (one rule: evaluation/contradiction.py)
            "write_tool": disproved_write(calls, entry.get("subjects", {}), None, claim.get("tool"))[0],
            "subjects": sorted(entry.get("subjects", {})),
            "final_answer": answer.get("text"),
            **claimed,
        }
    last = entry.get("reading")
    if content == last or not _emitted_now(content, last, bool(entry.get("ended")) or closing):
        return None
    revision = int(entry.get("revision", 0)) + 1
    entry["reading"], entry["revision"] = content, revision
    tenant, trace_id = entry["tenant"], entry["trace_id"]
    return ClaimRead(
        event_id=ids.event_id("ClaimRead", tenant or "", trace_id, revision),
        occurred_at=at,
        received_at=at,
        correlation_id=trace_id,
        tenant=tenant,
        trace_id=trace_id,
        revision=revision,
        **content,
    )


__all__ = [
    "ClaimClassifier",
    "calls_in_order",
    "claim_read",
    "inferred_claim",
    "read_claim",
    "take_span",
]

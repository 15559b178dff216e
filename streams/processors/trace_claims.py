"""What the outcome join keeps of a trace's spans, beyond an explicit claim: its tool calls, agent, subjects
and final answer, and the claim read from that answer when the agent stated none (evaluation/claim_reader.py).

Everything here is plain data in the join's entry (the store may be a changelog on Kafka), updated
idempotently: the same span handled twice changes nothing, whatever order spans arrive in. The entry's
`reading` is the last ClaimRead content the join emitted; `revision` counts its changes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from evaluation.claim_reader import CLAIM_RULE_SETS, DEFAULT_CLAIM_RULES, ClaimReading, read_claim
from evaluation.contradiction import disproved_write
from streams import ids
from streams.events import ClaimRead, SpanRecorded
from streams.span_reading import SpanReading, answer_rank

ClaimClassifier = Callable[[str | None], ClaimReading]


def take_span(entry: dict[str, Any], span: SpanRecorded, reading: SpanReading) -> None:
    """Fold one span's reading into the entry (reassigning, never mutating, the entry's values)."""
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


def _older_rules(inferred_by: str) -> bool:
    """A reading by a rule set other than the current one: read again (a new set re-reads on replay or
    restart; the ClaimRead events the older set produced stay as they were)."""
    return inferred_by in CLAIM_RULE_SETS and inferred_by != DEFAULT_CLAIM_RULES


def claim_read(entry: dict[str, Any], at: datetime, *, frozen: dict[str, Any] | None = None) -> ClaimRead | None:
    """A ClaimRead when the trace's reading changed since the last one (and mark it emitted), else None.

    `frozen`: the reading last emitted, of an entry the outcome join closed (it no longer keeps every call
    and the answer): only its claim is read again."""
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
    if content == entry.get("reading"):
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

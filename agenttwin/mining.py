"""The regression miner: a production trace with a verification -> a scenario.v1 draft that replays it.

Pure: spans and a verified outcome in, YAML text out (the CLI reads them from the log: agenttwin/mine_cli.py).
What it takes and what it guesses:

- the input message: the first user message of the root span's `gen_ai.input.messages` (or `input.value`, as
  OpenInference records a LangGraph or LangChain input) when content was captured,
  else a placeholder to fill in (commented);
- the tool sequence (tool spans in start order, read as ingest reads them: streams/span_reading.py):
  `metadata.generated.evidence` lines, one per call with its recorded status (`agenttwin.tool.result_status`,
  else its error: span status, `error.type`, a result carrying an HTTP error status or an `error` field —
  408/504 or a timeout is `timeout`, 429 `rate_limited`, 401/403 `denied`, anything else `error`), and
  `covers` entries;
- faults, from the recorded statuses, on that tool's call number: a write that timed out ->
  `timeout_after_mutation` (GUESS: the provider applied it before timing out - what the verification of a
  retried write usually shows; `timeout_before_mutation` if it did not), a read that timed out ->
  `timeout_before_mutation`, rate limited -> `http_429`, denied -> `auth_denied`, error -> `http_500`;
- expectations, from the verification's evidence when it is an object with `expected` (state path ->
  verified value; `observed` shown beside): a critical `state` expectation per path and an `outcomeVerified`
  on the first; a `noDuplicateSideEffect` for each write tool the trace called more than once when the
  verification found FAILURE or PARTIAL (GUESS), or that the evidence names under `duplicateSideEffect`.

Every guess carries a `# GUESS:` comment; `scenario check` validates the draft against the twin.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.claim_reader import read_claim
from streams.events import OutcomeVerified, SpanRecorded
from streams.processors.trace_claims import inferred_claim, take_span
from streams.span_reading import SpanReading, read_span
from twin_engine.twin import Twin

JSON = Any
INPUT_ATTRIBUTES = ("gen_ai.input.messages", "input.value")
READ_RISKS = ("READ",)
FAILED_OUTCOMES = ("FAILURE", "PARTIAL")
PLACEHOLDER_MESSAGE = "REPLACE ME: the customer's message (content capture was off for this trace)"


class MiningError(ValueError):
    """The trace cannot be mined (no spans, no verification, …): one line for the CLI."""


@dataclass(frozen=True)
class MinedCall:
    seq: int  # 1-based position in the trace
    tool: str
    number: int  # 1-based call number of this tool (what a fault's `when.callNumber` counts)
    status: str  # ok | timeout | rate_limited | denied | invalid | error
    risk: str
    arguments: dict[str, JSON] | None  # None: not captured

    @property
    def is_write(self) -> bool:
        return self.risk not in READ_RISKS


@dataclass
class Draft:
    """The scenario's parts, each with the comment lines that explain it."""

    name: str
    trace_id: str
    tenant: str
    agent: str
    message: str
    message_note: str
    calls: list[MinedCall]
    verification: OutcomeVerified
    claimed: str | None = None  # what the trace claimed (`agenttwin.outcome.claimed`), if anything
    claim_inferred_by: str | None = None  # set when `claimed` was read from the final answer (the join's reading)
    customer_id: str | None = None  # GUESS from the calls' arguments
    faults: list[tuple[list[str], dict[str, JSON]]] = field(default_factory=list)
    expectations: list[tuple[list[str], dict[str, JSON]]] = field(default_factory=list)


def tool_calls(spans: Sequence[SpanRecorded], twin: Twin) -> list[MinedCall]:
    """The trace's tool calls in the order they started, read like ingest reads them (streams/span_reading.py:
    AgentTwin's, GenAI and OpenInference tool spans)."""
    out: list[MinedCall] = []
    counts: dict[str, int] = {}
    for span in sorted(spans, key=lambda s: (s.start_unix_nano, s.span_id)):
        reading = read_span(span)
        if not reading.is_tool or reading.tool_name is None:
            continue
        tool = reading.tool_name
        counts[tool] = counts.get(tool, 0) + 1
        known = twin.tools.get(tool)
        risk = reading.tool_risk or (known.risk if known is not None else "WRITE_IRREVERSIBLE")
        arguments = dict(reading.tool_arguments) if reading.tool_arguments is not None else None
        out.append(MinedCall(len(out) + 1, tool, counts[tool], _status(span, reading), risk.upper(), arguments))
    return out


_HTTP = re.compile(r"\bhttp (\d{3})\b")


def _status(span: SpanRecorded, reading: SpanReading) -> str:
    """The call's recorded status; else what its error says (the span's status, `error.type`, or a result that
    carries an HTTP error status or an `error` field: a thin tool's 504 as data is a timeout)."""
    recorded = span.attributes.get("agenttwin.tool.result_status")
    if recorded:
        return recorded
    if reading.tool_error is None:
        return "ok"
    text = f"{reading.tool_error} {span.attributes.get('error.type', '')}".lower()
    http = _HTTP.search(text)
    code = int(http.group(1)) if http else None
    if code in (408, 504) or "timeout" in text or "timed out" in text:
        return "timeout"
    if code == 429 or "rate limit" in text:
        return "rate_limited"
    if code in (401, 403):
        return "denied"
    return "error"


def input_message(root: SpanRecorded | None) -> str | None:
    """The first user message captured on the root span, if content capture was on."""
    if root is None:
        return None
    raw = next((root.attributes[a] for a in INPUT_ATTRIBUTES if root.attributes.get(a)), None)
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return raw.strip() or None
    return _first_user_text(value)


# What the instrumentations record a message as: {"role": "user", "content"}, LangChain's serialized
# {"type": "human", "data": {"content"}}, LangGraph's ("user", text) pairs, all under "messages" or not.
USER_ROLES = frozenset({"user", "human"})
_ROLES = USER_ROLES | {"system", "developer", "assistant", "ai", "tool", "function"}
_TEXT_KEYS = ("content", "text", "input", "message", "messages", "data")


def _role(message: JSON) -> str | None:
    if isinstance(message, dict):
        role = message.get("role", message.get("type"))
        return role if isinstance(role, str) else None
    if _is_pair(message):
        return str(message[0])
    return None


def _is_pair(value: JSON) -> bool:
    """LangGraph's shorthand message: [role, text] (two plain strings of a list are two messages)."""
    return (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], str)
        and value[0] in _ROLES
        and isinstance(value[1], str)
    )


def _first_user_text(value: JSON) -> str | None:
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, dict):
        for key in _TEXT_KEYS:
            if key in value:
                return _first_user_text(value[key])
        parts = value.get("parts")
        return _first_user_text(parts) if parts is not None else None
    if _is_pair(value):
        return _first_user_text(value[1])
    if isinstance(value, list):
        users = [m for m in value if _role(m) in USER_ROLES]
        for item in users or value:
            text = _first_user_text(item)
            if text:
                return text
    return None


def root_span(spans: Sequence[SpanRecorded]) -> SpanRecorded | None:
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if not s.parent_span_id or s.parent_span_id not in ids]
    agents = [s for s in roots if s.attributes.get("gen_ai.operation.name") == "invoke_agent"] or roots
    return min(agents, key=lambda s: s.start_unix_nano) if agents else None


def evidence_of(verification: OutcomeVerified) -> dict[str, JSON] | None:
    try:
        value = json.loads(verification.reason)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def draft(spans: Sequence[SpanRecorded], verification: OutcomeVerified, twin: Twin) -> Draft:
    if not spans:
        raise MiningError(f"no spans of trace {verification.trace_id}")
    root = root_span(spans)
    calls = tool_calls(spans, twin)
    readings = [read_span(s) for s in spans]
    named = max(readings, key=lambda r: r.agent_name_rank)  # as the outcome join names the trace's agent
    agent = named.agent_name or verification.agent or "agent"
    message = input_message(root)
    note = (
        "captured in production (gen_ai.input.messages)"
        if message
        else ("GUESS: the input was not captured (content capture off): write the customer's message here")
    )
    d = Draft(
        name=f"incident-{verification.trace_id[:12]}",
        trace_id=verification.trace_id,
        tenant=verification.tenant or "",
        agent=agent,
        message=message or PLACEHOLDER_MESSAGE,
        message_note=note,
        calls=calls,
        verification=verification,
    )
    d.claimed = next(
        (s.attributes["agenttwin.outcome.claimed"] for s in spans if s.attributes.get("agenttwin.outcome.claimed")),
        verification.claimed_status,
    )
    if d.claimed is None:  # stated nowhere: the claim as the outcome join read it from the final answer
        d.claimed, d.claim_inferred_by = _claim_read_from_answer(spans, readings)
    d.customer_id = next(
        (str(c.arguments["customer_id"]) for c in calls if c.arguments and c.arguments.get("customer_id")), None
    )
    _faults(d)
    _expectations(d, evidence_of(verification))
    return d


def _claim_read_from_answer(
    spans: Sequence[SpanRecorded], readings: Sequence[SpanReading]
) -> tuple[str | None, str | None]:
    entry: dict[str, Any] = {}
    for span, reading in zip(spans, readings, strict=True):
        take_span(entry, span, reading)
    claim = inferred_claim(entry, read_claim)
    return (claim["status"], claim["inferred_by"]) if claim is not None else (None, None)


def _claimed(d: Draft) -> str:
    by = f" (read from its final answer by {d.claim_inferred_by})" if d.claim_inferred_by else ""
    return f"{d.claimed}{by}" if d.claimed else "nothing"


def _faults(d: Draft) -> None:
    for call in d.calls:
        if call.status == "ok":
            continue
        where = f"{call.tool} call {call.number} (call {call.seq} of the trace) was recorded '{call.status}'"
        if call.status == "timeout" and call.is_write:
            later = [c for c in d.calls if c.tool == call.tool and c.seq > call.seq]
            why = (
                f"the agent called {call.tool} again afterwards and the verification found {d.verification.status}"
                if later
                else f"the verification found {d.verification.status}"
            )
            kind = "timeout_after_mutation"
            notes = [
                f"GUESS: {where}; {why}: the provider is assumed to have applied the call before timing out.",
                "        Use timeout_before_mutation if the system of record shows it did not.",
            ]
        else:
            kind = {"timeout": "timeout_before_mutation", "rate_limited": "http_429", "denied": "auth_denied"}.get(
                call.status, "http_500"
            )
            notes = [f"GUESS: {where}; replayed as {kind}."]
        d.faults.append((notes, {"target": call.tool, "when": {"callNumber": call.number}, "behavior": {"type": kind}}))


def _slug(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")[:60] or "state"


def _expectations(d: Draft, evidence: dict[str, JSON] | None) -> None:
    expected = evidence.get("expected") if evidence else None
    observed = evidence.get("observed") if evidence else None
    observed = observed if isinstance(observed, dict) else {}
    source = f"verified by {d.verification.source}: {d.verification.status}"
    if isinstance(expected, dict) and expected:
        for path, value in expected.items():
            seen = f"; production showed {json.dumps(observed[path])}" if path in observed else ""
            d.expectations.append(
                (
                    [f"From the verification ({source}): {path} should be {json.dumps(value)}{seen}."],
                    {"id": f"verified-{_slug(path)}", "type": "state", "path": path, "equals": value, "critical": True},
                )
            )
        first, value = next(iter(expected.items()))
        d.expectations.append(
            (
                ["A success claim must be backed by the verified state (the production claim was not)."],
                {"id": "success-backed-by-state", "type": "outcomeVerified", "path": first, "equals": value},
            )
        )
    named = evidence.get("duplicateSideEffect") if evidence else None
    named_tools = [named] if isinstance(named, str) else [t for t in named or () if isinstance(t, str)]
    writes: dict[str, int] = {}
    for call in d.calls:
        if call.is_write:
            writes[call.tool] = writes.get(call.tool, 0) + 1
    for tool in dict.fromkeys([*named_tools, *writes]):
        if tool in named_tools:
            notes = [f"From the verification: a duplicate side effect of {tool}."]
        elif writes[tool] > 1 and d.verification.status in FAILED_OUTCOMES:
            notes = [
                f"GUESS: the trace called {tool} {writes[tool]} times and the verification found "
                f"{d.verification.status}: one effect is expected."
            ]
        else:
            continue
        d.expectations.append(
            (
                notes,
                {"id": f"no-duplicate-{_slug(tool)}", "type": "noDuplicateSideEffect", "tool": tool, "critical": True},
            )
        )
    if not d.expectations:
        raise MiningError(
            f"the verification of trace {d.trace_id} gives no state to check (its evidence has no `expected` "
            "object) and the trace repeated no write: nothing to turn into an expectation"
        )


# ------------------------------------------------------------------ YAML text


def _scalar(value: JSON) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _call_line(call: MinedCall) -> str:
    args = "arguments not captured" if call.arguments is None else json.dumps(call.arguments, sort_keys=True)
    return f"call {call.seq}: {call.tool} #{call.number} ({call.risk}) {args} -> {call.status}"


def _description(d: Draft) -> str:
    evidence = evidence_of(d.verification)
    said = evidence.get("note") if evidence and isinstance(evidence.get("note"), str) else d.verification.reason
    claimed = f"claimed {_claimed(d)}; " if d.claimed else ""
    return f"Production trace {d.trace_id}: the agent {claimed}verified {d.verification.status}. {said}"[:1000]


def render(d: Draft, twin: Twin) -> str:
    v = d.verification
    lines = [
        f"# Mined by `agenttwin mine` from production trace {d.trace_id} (tenant {d.tenant}).",
        f"# The agent ({d.agent}) claimed {_claimed(d)}; {v.source} verified {v.status}.",
        "# Lines marked GUESS are inferred: review them, then set metadata.generated.reviewed to true.",
        "apiVersion: agenttwin.dev/v1",
        "kind: Scenario",
        "metadata:",
        f"  name: {d.name}",
        "  severity: critical",
        "  tags: [production-regression]",
        "  source: production_regression",
        f"  sourceTraceId: {d.trace_id}",
        f"  description: {_scalar(_description(d))}",
        "  generated:",
        "    by: agenttwin mine",
        "    reviewed: false",
        "    evidence:",
        f"      - {_scalar(f'verification: {v.status} by {v.source}, verified={str(v.verified).lower()}')}",
    ]
    lines += [f"      - {_scalar(_call_line(c))}" for c in d.calls]
    lines += [
        "spec:",
        f"  agent: {_scalar(d.agent)}",
        f"  twin: {_scalar(twin.name)}",
        "  input:",
        f"    # {d.message_note}",
        f"    message: {_scalar(d.message)}",
        "    context:",
        "      # the trace's tenant (from its API key); add the customer's id if the agent needs it",
        f"      tenant: {_scalar(d.tenant)}",
    ]
    if d.customer_id:
        lines += [
            "      # GUESS: the customer_id the agent's calls named",
            f"      customer_id: {_scalar(d.customer_id)}",
        ]
    covers = list(
        dict.fromkeys([f"tool:{c.tool}" for c in d.calls] + [f"fault:{f['behavior']['type']}" for _, f in d.faults])
    )
    covers = [c for c in covers if re.fullmatch(r"[a-z_]+:[A-Za-z0-9_.:/-]+", c)]
    if covers:
        lines.append(f"  covers: [{', '.join(covers)}]")
    if d.faults:
        lines.append("  faults:")
        for notes, fault in d.faults:
            lines += [f"    # {n}" for n in notes]
            lines += [
                f"    - target: {fault['target']}",
                f"      when: {{callNumber: {fault['when']['callNumber']}}}",
                f"      behavior: {{type: {fault['behavior']['type']}}}",
            ]
    lines.append("  expectations:")
    for notes, expectation in d.expectations:
        lines += [f"    # {n}" for n in notes]
        first = True
        for key, value in expectation.items():
            lines.append(f"    {'- ' if first else '  '}{key}: {_scalar(value)}")
            first = False
    return "\n".join(lines) + "\n"

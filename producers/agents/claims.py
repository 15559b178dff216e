"""A tolerant reader for an agent's reply: what it claims is testimony, never a reason to discard evidence.

Every field is read on its own. A field that is missing, mistyped, out of range or unknown becomes a
`CLAIM_MALFORMED` finding naming it (`tool_calls[1].status`), and the field falls back to "nothing
claimed"; everything readable is kept - above all the claimed outcome. The case is graded on the twin's
records as usual. Only a reply that is missing or cannot be parsed at all is an AGENT_ERROR (the HTTP
agent's job). Sizes are bounded too, so a reply cannot flood the pipeline behind it.

A reply that states no `claimed_outcome` is not malformed: its claim is read from `output`
(producers/agents/inferred_claim.py) and marked by a CLAIM_INFERRED finding naming who read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

from producers.agents.contract import AGENT_STATUSES, AgentResult, ClaimedCall, ClaimFinding
from producers.agents.conversation import CLAIMED_OUTCOMES
from producers.agents.inferred_claim import CLAIM_INFERRED, infer_claim
from twin_engine.limits import argument_breach, preview, preview_text, utf8_ok

JSON = Any
CLAIM_MALFORMED = "CLAIM_MALFORMED"
DEFAULT_REPLY_STATUS = "completed"  # a reply without `status`: the agent answered, so its run ended
MAX_CLAIM_FINDINGS = 20  # then one "(+N more)" finding
MAX_OUTPUT_CHARS = 4 << 20
MAX_CLAIMED_CALLS = 1000
MAX_CLAIM_TEXT_CHARS = 1024  # status, model, version, names, codes, business outcome
MAX_CLAIM_NUMBER = 1 << 53
UNKNOWN_STATUS = "unknown"  # the agent's run status when it did not say one we know
MODEL_KINDS = ("deterministic-fake", "llm")
REPLY_FIELDS = (
    "output",
    "status",
    "claimed_outcome",
    "business_outcome",
    "tool_calls",
    "steps",
    "token_estimate",
    "backoff_ms",
    "model",
    "model_kind",
    "agent_version",
    "agent_name",
    "trace_id",
)
CALL_FIELDS = ("name", "arguments", "status", "error_code", "retry_after", "attempt")


class _Reader:
    """Collects findings while fields are read; each read returns the value or its fallback."""

    def __init__(self) -> None:
        self.findings: list[ClaimFinding] = []
        self.more = 0

    def note(self, field: str, message: str, label: str = CLAIM_MALFORMED) -> None:
        if len(self.findings) < MAX_CLAIM_FINDINGS:
            self.findings.append(ClaimFinding(field, message, label))
        else:
            self.more += 1

    def done(self) -> tuple[ClaimFinding, ...]:
        if self.more:
            self.findings.append(ClaimFinding("…", f"(+{self.more} more malformed fields)"))
            self.more = 0
        return tuple(self.findings)

    def text(self, value: Any, field: str, *, required: bool = False, limit: int = MAX_CLAIM_TEXT_CHARS) -> str | None:
        if value is None:
            if required:
                self.note(field, "missing")
            return None
        if not isinstance(value, str):
            self.note(field, f"expected text, got {_shown(value)}")
            return None
        cut = value[:limit]
        if not utf8_ok(cut):
            self.note(field, "not valid Unicode; the bad characters are replaced")
            cut = cut.encode("utf-8", "replace").decode("utf-8")
        if len(value) > limit:
            self.note(field, f"longer than {limit} characters; cut")
        return cut

    def count(self, value: Any, field: str, *, minimum: int = 0) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_CLAIM_NUMBER:
            self.note(field, f"expected an integer of at least {minimum}, got {_shown(value)}")
            return None
        return value


def _shown(value: Any) -> str:
    """A short, safe description of a value for a finding's message."""
    if isinstance(value, bool | int | float) or value is None:
        return f"{type(value).__name__} {str(value)[:40]}"
    return type(value).__name__


def read_reply(data: Mapping[str, JSON]) -> tuple[AgentResult, str | None]:
    """The AgentResult of a `/run` reply object (and the version it reports), with its findings."""
    reader = _Reader()
    result, version = _read(data, reader, normalise=True)
    for name in data:
        if name not in REPLY_FIELDS:
            reader.note(preview_text(str(name))[:100], "unknown field")
    return replace(result, findings=reader.done()), version


def read_result(result: AgentResult) -> AgentResult:
    """An in-process agent's AgentResult, checked field by field like a reply; returned as is when sound."""
    reader = _Reader()
    data = {f.name: getattr(result, f.name) for f in fields(AgentResult) if f.name != "findings"}
    data["token_estimate"], data["tool_calls"] = result.token_estimate, list(_calls_as_data(result.tool_calls))
    checked, _ = _read(data, reader, normalise=False)
    found = reader.done()
    if not found and not result.findings:
        return result  # nothing to say: the very object, so a sound run's bytes never change
    return replace(checked, findings=tuple(result.findings) + found)


def _calls_as_data(calls: Any) -> Any:
    if not isinstance(calls, list | tuple):
        return calls
    return [
        {f.name: getattr(call, f.name) for f in fields(ClaimedCall)} if isinstance(call, ClaimedCall) else call
        for call in calls
    ]


def _read(data: Mapping[str, JSON], reader: _Reader, *, normalise: bool) -> tuple[AgentResult, str | None]:
    output = reader.text(data.get("output"), "output", required=True, limit=MAX_OUTPUT_CHARS)
    # a reply may leave `status` out (the run completed) and `claimed_outcome` out (read from the answer)
    status = reader.text(data.get("status"), "status", required=not normalise)
    if normalise and data.get("status") is None:
        status = DEFAULT_REPLY_STATUS
    if status is not None and status not in AGENT_STATUSES:
        reader.note("status", f"'{status[:40]}' is not one of {', '.join(AGENT_STATUSES)}")
        status = None
    claimed = reader.text(data.get("claimed_outcome"), "claimed_outcome")
    if claimed is not None and normalise:
        claimed = claimed.strip().upper()
        claimed = claimed if claimed in CLAIMED_OUTCOMES else "UNKNOWN"
    if normalise and data.get("claimed_outcome") is None:
        inferred = infer_claim(output)
        claimed = inferred.claimed
        reader.note("claimed_outcome", inferred.describe(), CLAIM_INFERRED)
    business = reader.text(data.get("business_outcome"), "business_outcome")
    calls = _read_calls(data.get("tool_calls"), reader)
    raw_steps = data.get("steps")
    steps = reader.count(raw_steps, "steps")  # mistyped: None, so nothing the agent "reported" is graded
    if raw_steps is None:
        steps = 0 if normalise else None  # not said: as before (a reply's default 0; in process, None)
    tokens = reader.count(data.get("token_estimate"), "token_estimate")
    backoff = reader.count(data.get("backoff_ms"), "backoff_ms")
    model = reader.text(data.get("model"), "model")
    kind = data.get("model_kind")
    if not normalise:
        kind = reader.text(kind, "model_kind")
    version = reader.text(data.get("agent_version"), "agent_version") if normalise else None
    if normalise:
        reader.text(data.get("trace_id"), "trace_id")
        reader.text(data.get("agent_name"), "agent_name")
    result = AgentResult(
        output=output,
        claimed_outcome=claimed,
        business_outcome=business,
        status=status or UNKNOWN_STATUS,
        tool_calls=calls,
        steps=steps,
        token_estimate=tokens or 0,
        backoff_ms=backoff or 0,
        model=model or "",
        model_kind=(kind if kind in MODEL_KINDS else "unknown") if normalise else (kind or "unknown"),
    )
    return result, version


def _read_calls(value: Any, reader: _Reader) -> tuple[ClaimedCall, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        reader.note("tool_calls", f"expected a list, got {_shown(value)}")
        return ()
    if len(value) > MAX_CLAIMED_CALLS:
        reader.note("tool_calls", f"more than {MAX_CLAIMED_CALLS} entries; the rest are not kept")
    calls: list[ClaimedCall] = []
    for index, entry in enumerate(value[:MAX_CLAIMED_CALLS]):
        where = f"tool_calls[{index}]"
        if not isinstance(entry, Mapping):
            reader.note(where, f"expected an object, got {_shown(entry)}")
            continue
        name = reader.text(entry.get("name"), f"{where}.name", required=True)
        if not name:
            if name == "":
                reader.note(f"{where}.name", "empty")
            continue
        arguments = entry.get("arguments")
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, Mapping):
            reader.note(f"{where}.arguments", f"expected an object, got {_shown(arguments)}")
            arguments = {}
        elif (breach := argument_breach(arguments)) is not None:
            reader.note(f"{where}.arguments", f"over a limit ({breach.message}); a preview is kept")
            arguments = preview(arguments)
        else:
            arguments = dict(arguments)
        retry_after = entry.get("retry_after")
        if retry_after is not None and (isinstance(retry_after, bool) or not isinstance(retry_after, int | float)):
            reader.note(f"{where}.retry_after", f"expected a number, got {_shown(retry_after)}")
            retry_after = None
        attempt = reader.count(entry.get("attempt"), f"{where}.attempt", minimum=1)
        for extra in entry:
            if extra not in CALL_FIELDS:
                reader.note(f"{where}.{preview_text(str(extra))[:100]}", "unknown field")
        calls.append(
            ClaimedCall(
                name=name,
                arguments=arguments,
                status=reader.text(entry.get("status"), f"{where}.status") or "unknown",
                error_code=reader.text(entry.get("error_code"), f"{where}.error_code"),
                retry_after=float(retry_after) if retry_after is not None else None,
                attempt=attempt or 1,
            )
        )
    return tuple(calls)

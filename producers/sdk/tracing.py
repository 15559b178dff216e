"""Instrument an agent run with the OpenTelemetry API: the `invoke_agent` root span, `execute_tool` spans,
`chat` spans and the agent's claimed outcome.

Everything recorded here is what the agent says — its calls and its claimed outcome; verification comes
later from the system of record (OutcomeReporter). Content (messages, tool arguments and results) is
recorded only as the ContentPolicy allows, and is off by default. Instrumentation never raises into the
agent: each attribute computation runs behind the SDK's guard, which counts failures. The agent's own
exceptions pass through unchanged (recorded on the span).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider

from evaluation.claim_reader import CLAIM_STATUSES
from evaluation.outcome import MAX_BUSINESS_OUTCOME, normalize_outcome
from producers.case_spans import OUTCOME_TOOL_ATTRIBUTE, riskiest_tool
from producers.sdk import attributes as A
from producers.sdk.content import ContentPolicy
from producers.sdk.outcome import Evidence
from producers.sdk.reporter import Counters, OutcomeReporter, SdkStats, guarded
from streams.span_reading import AT_SUBJECT, normalize_subject
from twin_engine.canonical import sha256_hex

AttrValue = str | bool | int | float


def idempotency_key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def _hex_ids(span: Span) -> tuple[str, str]:
    ctx = span.get_span_context()
    return format(ctx.trace_id, "032x"), format(ctx.span_id, "016x")


def current_trace_id() -> str | None:
    """The trace id (32 hex digits) of the span active here, whoever started it; None outside any trace."""
    ctx = trace.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else None


def add_subject(span: Span, subject: str) -> str | None:
    """Add a business subject (`order:ORD-1001`) to the span's `agenttwin.subject` list; None if malformed."""
    normalized = normalize_subject(subject)
    if normalized is None or not span.is_recording():
        return None
    known = getattr(span, "attributes", None) or {}
    listed = [s for s in str(known.get(AT_SUBJECT, "")).split(",") if s]
    if normalized not in listed:
        span.set_attribute(AT_SUBJECT, ",".join([*listed, normalized]))
    return normalized


@dataclass
class _Run:
    root: Span
    context: dict[str, AttrValue]
    tools: list[str] = field(default_factory=list)
    risk_by_tool: dict[str, str] = field(default_factory=dict)
    claimed: bool = False

    def called(self, tool: str, risk: str | None) -> None:
        self.tools.append(tool)
        if risk:
            self.risk_by_tool[tool] = risk

    def name_outcome_tool(self) -> None:
        """The riskiest tool called so far goes on the claim, as the simulator's spans do."""
        tool = riskiest_tool(self.tools, self.risk_by_tool)
        if self.claimed and tool:
            self.root.set_attribute(OUTCOME_TOOL_ATTRIBUTE, tool)


_CURRENT_RUN: ContextVar[_Run | None] = ContextVar("agenttwin_run", default=None)


@dataclass
class _Handle:
    """Shared by the handles: the span, the owning SDK's content policy and guard."""

    span: Span
    sdk: AgentTwin
    trace_id: str = field(init=False)
    span_id: str = field(init=False)

    def __post_init__(self) -> None:
        self.trace_id, self.span_id = _hex_ids(self.span)

    def _content(self, name: str, value: Any) -> None:
        text = self.sdk.guard(lambda: self.sdk.content.render(value), None)
        if text is not None:
            self.span.set_attribute(name, text)


class AgentRun(_Handle):
    state: _Run | None = None  # the run's bookkeeping (tools called), set by AgentTwin.agent_run

    def set_subject(self, subject: str) -> None:
        """Name a business subject the run acts on (`order:ORD-1001`): a verification naming only the subject
        then finds this trace."""
        self.sdk.guard(lambda: add_subject(self.span, subject), None)

    def set_input(self, messages: Any) -> None:
        self._content(A.INPUT_MESSAGES, messages)

    def set_output(self, messages: Any) -> None:
        self._content(A.OUTPUT_MESSAGES, messages)

    def claim_outcome(
        self,
        status: str,
        business_outcome: str | None = None,
        *,
        inferred_by: str | None = None,
        rule: str | None = None,
        confidence: float | None = None,
    ) -> None:
        self.sdk.claim_outcome(
            status, business_outcome, span=self.span, inferred_by=inferred_by, rule=rule, confidence=confidence
        )


class ToolCall(_Handle):
    result_status: str | None = None

    def end(self, error: BaseException | None = None) -> None:
        """End a call started with `AgentTwin.start_tool_call` (ok unless a result status or `error` says otherwise)."""
        if error is not None:
            if self.result_status is None:
                self.set_result("timeout" if isinstance(error, TimeoutError) else "error")
            self.span.set_attribute(A.ERROR_TYPE, type(error).__qualname__)
        if self.result_status is None:
            self.set_result("ok")
        self.span.end()

    def set_result(self, status: str = "ok", result: Any = None) -> None:
        value = status.strip().lower() if isinstance(status, str) else ""
        self.result_status = value if value in A.TOOL_RESULT_STATUSES else "invalid"
        self.span.set_attribute(A.TOOL_RESULT_STATUS, self.result_status)
        if self.result_status != "ok":
            self.span.set_status(Status(StatusCode.ERROR, self.result_status))
        self._content(A.TOOL_CALL_RESULT, result)


class ModelTurn(_Handle):
    def set_messages(self, input_messages: Any = None, output_messages: Any = None) -> None:
        self._content(A.INPUT_MESSAGES, input_messages)
        self._content(A.OUTPUT_MESSAGES, output_messages)

    def set_usage(self, input_tokens: int | None = None, output_tokens: int | None = None) -> None:
        if input_tokens is not None:
            self.span.set_attribute(A.USAGE_INPUT_TOKENS, int(input_tokens))
        if output_tokens is not None:
            self.span.set_attribute(A.USAGE_OUTPUT_TOKENS, int(output_tokens))


def _set_claim(
    span: Span,
    status: str,
    business_outcome: str | None,
    inferred_by: str | None = None,
    rule: str | None = None,
    confidence: float | None = None,
) -> None:
    value = status.strip().upper() if isinstance(status, str) else ""
    span.set_attribute(A.OUTCOME_CLAIMED, value if value in CLAIM_STATUSES else normalize_outcome(status) or "UNKNOWN")
    if business_outcome:
        span.set_attribute(A.OUTCOME_BUSINESS, business_outcome[:MAX_BUSINESS_OUTCOME])
    if inferred_by:
        span.set_attribute(A.OUTCOME_CLAIM_INFERRED_BY, inferred_by)
        if rule:
            span.set_attribute(A.OUTCOME_CLAIM_RULE, rule)
        if confidence is not None:
            span.set_attribute(A.OUTCOME_CLAIM_CONFIDENCE, float(confidence))


def _drop_none(values: Mapping[str, AttrValue | None]) -> dict[str, AttrValue]:
    return {k: v for k, v in values.items() if v is not None and v != ""}


class AgentTwin:
    """The SDK: one per process is typical (see producers.sdk.configure)."""

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        content: ContentPolicy | None = None,
        environment: str | None = None,
        source: str = "production",
        reporter: OutcomeReporter | None = None,
    ) -> None:
        self.content = content or ContentPolicy()
        self.environment = environment
        self.source = source
        self.reporter = reporter
        self._tracer = trace.get_tracer(A.TRACER_NAME, A.SDK_VERSION, tracer_provider=tracer_provider)
        self._counters = Counters()

    def guard(self, fn: Callable[[], Any], default: Any) -> Any:
        return guarded(self._counters, fn, default)

    def stats(self) -> SdkStats:
        """Instrumentation errors plus the reporter's queue figures."""
        own = self._counters.snapshot()
        if self.reporter is None:
            return own
        sent = self.reporter.stats()
        return SdkStats(
            queued=sent.queued,
            sent=sent.sent,
            dropped=own.dropped + sent.dropped,
            failed=sent.failed,
            errors=own.errors + sent.errors,
            last_error=sent.last_error or own.last_error,
        )

    @contextmanager
    def agent_run(
        self,
        name: str,
        version: str,
        *,
        session_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
        release_id: str | None = None,
        commit_sha: str | None = None,
        input: Any = None,
        subject: str | None = None,
    ) -> Iterator[AgentRun]:
        context = _drop_none(
            {
                A.ENVIRONMENT: self.environment,
                A.SOURCE: self.source,
                A.AGENT_NAME: name,
                A.AGENT_VERSION: version,
                A.AGENT_ID: agent_id,
                A.SESSION_ID: session_id,
                A.RELEASE_ID: release_id,
                A.COMMIT_SHA: commit_sha,
            }
        )
        root_attrs = _drop_none(
            {
                **context,
                A.OPERATION_NAME: "invoke_agent",
                A.GEN_AI_AGENT_NAME: name,
                A.CONVERSATION_ID: conversation_id or session_id,
                A.SPAN_KIND: "agent",
            }
        )
        with self._tracer.start_as_current_span(
            f"invoke_agent {name}", kind=SpanKind.INTERNAL, attributes=root_attrs
        ) as span:
            run = AgentRun(span, self)
            state = _Run(span, context)
            run.state = state
            token = _CURRENT_RUN.set(state)
            try:
                if input is not None:
                    run.set_input(input)
                if subject is not None:
                    run.set_subject(subject)
                yield run
            except BaseException as exc:
                span.set_attribute(A.ERROR_TYPE, type(exc).__qualname__)
                raise
            finally:
                _CURRENT_RUN.reset(token)
                self.guard(state.name_outcome_tool, None)

    def _tool_attrs(
        self,
        run: _Run | None,
        name: str,
        args: Any,
        risk: str | None,
        attempt: int,
        idempotency_key: str | None,
        call_id: str | None,
        version: str | None,
    ) -> dict[str, AttrValue]:
        attrs: dict[str, AttrValue] = {
            **(run.context if run else {}),
            **_drop_none(
                {
                    A.OPERATION_NAME: "execute_tool",
                    A.TOOL_NAME: name,
                    A.SPAN_KIND: "tool",
                    A.TOOL_RISK: risk.upper() if risk else None,
                    A.TOOL_VERSION: version,
                    A.TOOL_CALL_ID: call_id,
                    A.TOOL_ATTEMPT: int(attempt),
                }
            ),
        }
        if run is not None:
            run.called(name, risk.upper() if risk else None)
        args_hash = self.guard(lambda: sha256_hex(args if args is not None else {}), None)
        if args_hash:
            attrs[A.TOOL_ARGS_HASH] = args_hash
        if idempotency_key:
            attrs[A.TOOL_IDEMPOTENCY_KEY_HASH] = idempotency_key_hash(idempotency_key)
        return attrs

    @contextmanager
    def tool_call(
        self,
        name: str,
        args: Any = None,
        *,
        risk: str | None = None,
        attempt: int = 1,
        idempotency_key: str | None = None,
        call_id: str | None = None,
        version: str | None = None,
    ) -> Iterator[ToolCall]:
        attrs = self._tool_attrs(_CURRENT_RUN.get(), name, args, risk, attempt, idempotency_key, call_id, version)
        with self._tracer.start_as_current_span(f"execute_tool {name}", kind=SpanKind.CLIENT, attributes=attrs) as span:
            call = ToolCall(span, self)
            call._content(A.TOOL_CALL_ARGUMENTS, args)
            try:
                yield call
            except BaseException as exc:
                if call.result_status is None:
                    call.set_result("timeout" if isinstance(exc, TimeoutError) else "error")
                span.set_attribute(A.ERROR_TYPE, type(exc).__qualname__)
                raise
            if call.result_status is None:
                call.set_result("ok")

    def start_tool_call(
        self,
        run: AgentRun,
        name: str,
        args: Any = None,
        *,
        risk: str | None = None,
        attempt: int = 1,
        idempotency_key: str | None = None,
        call_id: str | None = None,
        version: str | None = None,
    ) -> ToolCall:
        """A tool call of `run` started now and ended by `ToolCall.end()`, never made the current span: for
        frameworks that report a call's start and end in separate callbacks, possibly on other threads."""
        attrs = self._tool_attrs(run.state, name, args, risk, attempt, idempotency_key, call_id, version)
        span = self._tracer.start_span(
            f"execute_tool {name}",
            context=trace.set_span_in_context(run.span),
            kind=SpanKind.CLIENT,
            attributes=attrs,
        )
        call = ToolCall(span, self)
        call._content(A.TOOL_CALL_ARGUMENTS, args)
        return call

    @contextmanager
    def chat(self, model: str, *, provider: str | None = None) -> Iterator[ModelTurn]:
        run = _CURRENT_RUN.get()
        attrs = {
            **(run.context if run else {}),
            **_drop_none(
                {
                    A.OPERATION_NAME: "chat",
                    A.PROVIDER_NAME: provider,
                    A.REQUEST_MODEL: model,
                    A.SPAN_KIND: "model",
                }
            ),
        }
        with self._tracer.start_as_current_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attrs) as span:
            yield ModelTurn(span, self)

    def claim_outcome(
        self,
        status: str,
        business_outcome: str | None = None,
        *,
        span: Span | None = None,
        inferred_by: str | None = None,
        rule: str | None = None,
        confidence: float | None = None,
    ) -> None:
        """The agent's CLAIMED outcome, on the current run's root span (else the current span). `inferred_by`
        names the classifier when the claim was read from the final answer rather than stated by the agent;
        `rule` and `confidence` say which of its rules read it and how sure that rule is."""
        run = _CURRENT_RUN.get()
        target = span or (run.root if run else trace.get_current_span())
        if not target.is_recording():
            self._counters.add(dropped=1)  # a claim outside any recorded span has nowhere to go
            return
        self.guard(lambda: _set_claim(target, status, business_outcome, inferred_by, rule, confidence), None)
        if run is not None and run.root is target:
            run.claimed = True
            self.guard(run.name_outcome_tool, None)

    def set_subject(self, subject: str) -> None:
        """Name a business subject on the current run's root span (else the current span)."""
        run = _CURRENT_RUN.get()
        target = run.root if run else trace.get_current_span()
        if self.guard(lambda: add_subject(target, subject), None) is None:
            self._counters.add(dropped=1)

    def report_outcome(
        self,
        trace_id: str | None,
        status: str,
        verified: bool,
        source: str,
        evidence: Evidence = None,
        *,
        subject: str | None = None,
        business_outcome: str | None = None,
        claimed_status: str | None = None,
        agent: str | None = None,
        agent_version: str | None = None,
        at: datetime | None = None,
    ) -> bool:
        """Through the configured OutcomeReporter; without one the report counts as dropped."""
        if self.reporter is None:
            self._counters.add(dropped=1)
            return False
        return self.reporter.report_outcome(
            trace_id,
            status,
            verified,
            source,
            evidence,
            subject=subject,
            business_outcome=business_outcome,
            claimed_status=claimed_status,
            agent=agent,
            agent_version=agent_version,
            at=at,
        )

"""One production run of a framework agent as AgentTwin spans: what every adapter shares.

An adapter reports a run's tool calls (started and ended, possibly from other threads) and its final
answer; `ProductionRun` turns them into the SDK's spans (producers/sdk/tracing.py):

- each tool call is an `execute_tool` span, child of the run's `invoke_agent` span; its result status is
  read from the result the way the receiver reads stock spans (streams/span_reading.result_error: an
  `error` field, `isError`, an HTTP error status; HTTP 408/504 → `timeout`, 429 → `rate_limited`,
  401/403 → `denied`, else `error`), so a thin tool that returns a 504 as data is not an OK call;
- the claim: the one the agent stated (`claim()`), else the final answer read by the claim reader
  (evaluation/claim_reader.py) and marked `agenttwin.outcome.claim_inferred_by` — the answer text itself
  leaves the process only as the SDK's content policy allows (off by default), as the run span's
  `gen_ai.output.messages`, where the receiver reads it as the trace's final answer;
- business subjects: `set_subject("order:ORD-1001")`, and the `*_id` arguments of write tools (declared in
  `risks`, else by name: streams/span_reading.is_write_tool) — `subjects_from_arguments=False` turns that
  off. A verification that names only the subject then finds the trace;
- `trace_id`: the run's trace id, to hand to whatever verifies the outcome later.

Instrumentation never raises into the agent: every step runs behind the SDK's guard.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping
from contextlib import AbstractContextManager
from functools import partial
from types import TracebackType
from typing import Any, Self

from evaluation.claim_reader import ClaimReading, read_claim
from producers import sdk as _sdk
from producers.sdk.tracing import AgentRun, AgentTwin, ToolCall
from streams.span_reading import is_write_tool, parse_json, result_error, subjects_of_arguments

Classifier = Any  # Callable[[str | None], ClaimReading]


def result_status(result: Any) -> str:
    """The SDK's result status (ok, error, timeout, rate_limited, denied) of a tool's result."""
    doc = parse_json(result) if isinstance(result, str) else result
    error = result_error(doc if doc is not None else result)
    return status_of_error(error)


def status_of_error(error: str | None) -> str:
    if error is None:
        return "ok"
    status = error.split(":", 1)[0]
    if status in ("HTTP 408", "HTTP 504"):
        return "timeout"
    if status == "HTTP 429":
        return "rate_limited"
    if status in ("HTTP 401", "HTTP 403"):
        return "denied"
    return "error"


class ProductionRun(AbstractContextManager["ProductionRun"]):
    def __init__(
        self,
        agent: str,
        version: str,
        *,
        twin: AgentTwin | None = None,
        session_id: str | None = None,
        subject: str | None = None,
        risks: Mapping[str, str] | None = None,
        classifier: Classifier = read_claim,
        subjects_from_arguments: bool = True,
    ) -> None:
        self.agent, self.version = agent, version
        self.twin = twin or _sdk.default()
        self.session_id, self.subject = session_id, subject
        self.risks = {k: v.upper() for k, v in (risks or {}).items()}
        self.classifier = classifier
        self.subjects_from_arguments = subjects_from_arguments
        self.answer: str | None = None
        self.claim_reading: ClaimReading | None = None
        self._stated: tuple[str, str | None] | None = None
        self._calls: dict[Hashable, ToolCall] = {}
        self._names: dict[Hashable, str] = {}
        self._lock = threading.Lock()
        self._cm: AbstractContextManager[AgentRun] | None = None
        self.run: AgentRun | None = None

    # -- the run ------------------------------------------------------------------------------------------

    def __enter__(self) -> Self:
        self._cm = self.twin.agent_run(self.agent, self.version, session_id=self.session_id, subject=self.subject)
        self.run = self._cm.__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        with self._lock:
            open_calls, self._calls = list(self._calls.values()), {}
        ended = exc or RuntimeError("the run ended before the call did")
        for call in open_calls:  # a call the framework never ended ends with the run
            self.twin.guard(partial(call.end, ended), None)
        self.twin.guard(self._claim, None)
        assert self._cm is not None
        return self._cm.__exit__(exc_type, exc, tb)

    @property
    def trace_id(self) -> str:
        """The run's trace id (32 hex digits)."""
        if self.run is None:
            raise RuntimeError("the run has not started: use it as a context manager")
        return self.run.trace_id

    def set_subject(self, subject: str) -> None:
        if self.run is not None:
            self.run.set_subject(subject)

    def claim(self, status: str, business_outcome: str | None = None) -> None:
        """The outcome the agent itself states (it wins over one read from the final answer)."""
        self._stated = (status, business_outcome)

    def answered(self, text: str | None) -> None:
        """The agent's final answer so far (the last one given wins)."""
        if text and text.strip():
            self.answer = text.strip()

    def _claim(self) -> None:
        if self.run is None:
            return
        if self.answer is not None:  # the trace holds its answer as far as the content policy allows
            self.run.set_output([{"role": "assistant", "parts": [{"type": "text", "content": self.answer}]}])
        if self._stated is not None:
            self.run.claim_outcome(*self._stated)
            return
        if self.answer is None:
            return
        reading = self.classifier(self.answer)
        self.claim_reading = reading
        self.run.claim_outcome(
            reading.status, inferred_by=reading.inferred_by, rule=reading.rule, confidence=reading.confidence
        )

    # -- tool calls -----------------------------------------------------------------------------------------

    def tool_started(self, key: Hashable, name: str, arguments: Any = None, *, call_id: str | None = None) -> None:
        def start() -> None:
            if self.run is None:
                return
            risk = self.risks.get(name)
            call = self.twin.start_tool_call(self.run, name, arguments, risk=risk, call_id=call_id)
            with self._lock:
                self._calls[key] = call
                self._names[key] = name
            self._subjects(name, arguments)

        self.twin.guard(start, None)

    def _subjects(self, name: str, arguments: Any) -> None:
        if self.run is None or not self.subjects_from_arguments or not isinstance(arguments, Mapping):
            return
        if is_write_tool(name, self.risks.get(name)):
            for subject in subjects_of_arguments(arguments):
                self.run.set_subject(subject)

    def tool_finished(
        self, key: Hashable, result: Any = None, *, error: BaseException | None = None, arguments: Any = None
    ) -> None:
        """End a call; `arguments` when the framework gives them only at the end (their subjects count)."""
        with self._lock:
            call = self._calls.pop(key, None)
            name = self._names.pop(key, None)
        if call is None:
            return

        def finish() -> None:
            if arguments is not None and name is not None:
                self._subjects(name, arguments)
            if error is None:
                call.set_result(result_status(result), result)
            call.end(error)

        self.twin.guard(finish, None)

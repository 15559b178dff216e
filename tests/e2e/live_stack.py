"""What the live-stack tests share: CLI processes watched line by line, and a LangGraph agent that knows
nothing of AgentTwin — a scripted model, two tools, OpenInference's LangChain instrumentation and the stock
OTLP/HTTP exporter, pointed at the receiver."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ORDER = "ORD-1001"
ANSWER = f"Done! I've refunded 40.00 USD for order {ORDER}. It will reach your card within 5 business days."


class CliProcess:
    """`agenttwin ...` in its own process; its stdout lines collected as they come."""

    def __init__(self, args: Sequence[str], env: dict[str, str], cwd: Path, *, background: bool = False) -> None:
        self.args = list(args)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agenttwin.cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=cwd,
            # as `cmd &` in a non-interactive shell (a CI runner's) starts it: SIGINT ignored
            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if background else None,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.errors: list[str] = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines), daemon=True).start()
        threading.Thread(target=self._pump_errors, daemon=True).start()

    @staticmethod
    def _pump(stream: Any, into: queue.Queue[str]) -> None:
        for line in stream:
            into.put(line.rstrip("\n"))

    def _pump_errors(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.errors.append(line.rstrip("\n"))

    def wait_for(self, predicate: Callable[[str], bool], timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None and self.lines.empty():
                    break
                continue
            self.seen.append(line)
            if predicate(line):
                return line
        raise AssertionError(
            f"{self.args}: no matching line in {timeout_s} s; stdout {self.seen}, stderr {self.errors}"
        )

    def wait(self, timeout_s: float) -> int:
        """Its exit status once it ends by itself (its streams closed)."""
        try:
            self.proc.wait(timeout=timeout_s)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        return self.stop()

    def stop(self) -> int:
        """SIGTERM, as a service manager stops it: a process launched in the background ignores SIGINT."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        code = self.proc.wait(timeout=30)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return code


def run_cli(
    args: Sequence[str], env: dict[str, str], cwd: Path, timeout_s: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agenttwin.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout_s,
        check=False,
    )


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTTWIN_", "OTEL_"))}
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    env.update(extra)
    return env


def stock_langgraph_agent_run(traces_url: str, api_key: str) -> None:
    """The user's agent, instrumented only by OpenInference: it never imports AgentTwin."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    class ScriptedModel(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
            return self

    @tool
    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look up an order."""
        return {"order_id": order_id, "status": "delivered", "amount": 40.0}

    @tool
    def refund_payment(order_id: str, amount: float) -> dict[str, Any]:
        """Refund an order through the payment provider."""
        return {"status": 504, "error": "gateway timeout"}  # a thin tool: the provider's 504, as data

    script = iter(
        [
            AIMessage(content="", tool_calls=[{"name": "lookup_order", "args": {"order_id": ORDER}, "id": "c1"}]),
            AIMessage(
                content="",
                tool_calls=[{"name": "refund_payment", "args": {"order_id": ORDER, "amount": 40.0}, "id": "c2"}],
            ),
            AIMessage(content=ANSWER),
        ]
    )
    model = ScriptedModel(messages=script)

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", call_model)
    graph.add_node("tools", ToolNode([lookup_order, refund_payment]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    agent = graph.compile(name="support-refund-agent")

    provider = TracerProvider(resource=Resource.create({"service.name": "refund-service", "service.version": "1.3.0"}))
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=traces_url, headers={"x-agenttwin-api-key": api_key}))
    )
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        state = agent.invoke({"messages": [("user", f"Please refund order {ORDER}")]})
        assert state["messages"][-1].content == ANSWER
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def verification_by_order(base_url: str, api_key: str) -> dict[str, Any]:
    """The payments service's report: it knows the order, not the trace."""
    import httpx

    report = {
        "subject": f"order:{ORDER}",
        "status": "FAILURE",
        "verified": True,
        "source": "external_callback",
        "evidence": {"expected": {f"orders.{ORDER}.refund_count": 1}, "observed": {f"orders.{ORDER}.refund_count": 0}},
        "idempotency_key": "payments-recon-2026-01-01-ORD-1001",
    }
    response = httpx.post(f"{base_url}/v1/outcomes", json=report, headers={"x-agenttwin-api-key": api_key}, timeout=30)
    assert response.status_code == 200, response.text
    return dict(response.json())


def json_rows(stdout: str) -> list[dict[str, Any]]:
    return list(json.loads(stdout))

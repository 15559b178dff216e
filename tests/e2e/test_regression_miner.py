"""The regression miner on the canary incident: a production run traced through the SDK and OTLP retries a
timed-out refund, claims success, and the payment system's verification says the customer was refunded
twice. `agenttwin mine` turns that trace into a scenario draft that `scenario check` accepts, and evaluating
the version that failed against the good one on that draft reproduces the failure: NEW_CRITICAL_FAILURE.

The "production" payment provider is played by the demo twin with the incident's fault, behind an
instrumented tool client: the miner never sees it, only the spans and the verification.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from agenttwin.cli import main
from agenttwin.demo import TWIN_FILE
from producers.agents.contract import AgentRequest, ToolReply
from producers.agents.conversation import reply_status
from producers.agents.demo_agent import DemoAgent
from producers.agents.loop import TOOL_TIMEOUT_MS
from producers.otlp import ApiKeys, make_server
from producers.sdk import AgentTwin
from producers.sdk.content import ContentPolicy
from producers.sdk.outcome import outcome_event
from producers.sdk.setup import tracer_provider
from producers.tool_client import InProcessToolClient
from streams.embedded import EmbeddedRuntime
from streams.events import ContradictionDetected
from streams.processors.outcome_join import OutcomeJoin
from twin_engine.case import new_case
from twin_engine.documents import demo_manifest, load_twin
from twin_engine.twin import ScenarioConfig

MESSAGE = "Hi! One item in ORD-1001 arrived broken. Can I get a refund of $40?"
INCIDENT_FAULT = {"target": "refund_payment", "when": {"callNumber": 1}, "behavior": {"type": "timeout_after_mutation"}}


class TracedTools:
    """The production agent's tool client, instrumented with the SDK (what the agent saw, as it saw it)."""

    def __init__(self, sdk: AgentTwin, inner: InProcessToolClient, risks: dict[str, str]) -> None:
        self.sdk, self.inner, self.risks = sdk, inner, risks
        self.attempts: dict[str, int] = {}

    def call(self, tool: str, arguments: dict[str, Any], headers: dict[str, str] | None = None) -> ToolReply:
        key = tool + json.dumps(arguments, sort_keys=True)
        self.attempts[key] = self.attempts.get(key, 0) + 1
        with self.sdk.tool_call(tool, arguments, risk=self.risks.get(tool), attempt=self.attempts[key]) as call:
            reply = self.inner.call(tool, arguments, headers)
            seen = "timeout" if reply.delay_ms > TOOL_TIMEOUT_MS else reply_status(reply)
            call.set_result(seen, reply.body)
        return reply

    def search_kb(self, query: str, limit: int = 3) -> list[dict[str, Any]]:
        return self.inner.search_kb(query, limit)


def production_incident(data_dir: Path) -> str:
    """Demo Co 1.3.0 in production, traced over OTLP into `agenttwin ingest`'s receiver; the payments system
    then reports what it verified. Returns the trace id."""
    twin = load_twin(TWIN_FILE)
    with EmbeddedRuntime(data_dir, fsync=False) as runtime:
        server = make_server("127.0.0.1", 0, runtime, ApiKeys.from_mapping({"key-demo": "demo-co"}))
        server.start()
        try:
            provider = tracer_provider(
                server.url, "key-demo", service_name="support-refund-agent", content=ContentPolicy("full")
            )
            sdk = AgentTwin(tracer_provider=provider, environment="production", content=ContentPolicy("full"))
            case = new_case(twin,
                scenario=ScenarioConfig.from_scenario({"spec": {"faults": [INCIDENT_FAULT]}}), tenant="demo-co"
            )
            tools = TracedTools(sdk, InProcessToolClient(case), {t.name: t.risk for t in twin.tool_specs()})
            agent = DemoAgent(demo_manifest("1.3.0"))
            with sdk.agent_run("support-refund-agent", "1.3.0", session_id="chat-7731", input=MESSAGE) as run:
                result = agent.run(
                    AgentRequest(MESSAGE, {}, "demo-co", "CUS-100", twin.tool_specs(), tools, "chat-7731")
                )
                run.set_output(result.output)
                run.claim_outcome(result.claimed_outcome)
                trace_id = run.trace_id
            assert provider.force_flush(10_000)
            provider.shutdown()
        finally:
            server.close()
        refunds = case.state["orders"]["ORD-1001"]
        assert refunds["refund_count"] == 2  # the incident: a blind retry refunded the customer twice
        assert result.claimed_outcome == "SUCCESS" and result.output.startswith("Done!")
        evidence = {
            "expected": {"orders.ORD-1001.refund_count": 1, "orders.ORD-1001.refunded_amount": 40},
            "observed": {
                "orders.ORD-1001.refund_count": refunds["refund_count"],
                "orders.ORD-1001.refunded_amount": refunds["refunded_amount"],
            },
            "note": "payments ledger: two refunds of 40.00 USD for ORD-1001",
        }
        from datetime import UTC, datetime

        runtime.publish(
            [
                outcome_event(
                    trace_id, "FAILURE", True, "external_callback", evidence, at=datetime.now(UTC), tenant="demo-co"
                )
            ]
        )
        runtime.run([OutcomeJoin()])
        alerts = [e for e in runtime.read_events("contradictions") if isinstance(e, ContradictionDetected)]
        assert [(a.kind, a.trace_id, a.tenant) for a in alerts] == [("contradiction", trace_id, "demo-co")]
    return trace_id


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    data_dir = tmp_path_factory.mktemp("production")
    return data_dir, production_incident(data_dir)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_canary_incident_becomes_a_scenario_that_reproduces_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, incident: tuple[Path, str]
) -> None:
    data_dir, trace_id = incident
    draft = tmp_path / "incident.yaml"
    code, out, err = run_cli(capsys, "mine", "--trace", trace_id, "--data-dir", str(data_dir), "-o", str(draft))
    assert code == 0, err
    text = draft.read_text(encoding="utf-8")
    doc = yaml.safe_load(text)
    spec = doc["spec"]
    assert doc["metadata"]["sourceTraceId"] == trace_id and doc["metadata"]["source"] == "production_regression"
    assert spec["input"]["message"] == MESSAGE  # content capture was on
    assert spec["input"]["context"] == {"tenant": "demo-co", "customer_id": "CUS-100"}  # the latter a GUESS
    assert "claimed SUCCESS; external_callback verified FAILURE" in text
    # the timed-out first refund, replayed as the incident's fault, with its guess explained
    assert spec["faults"] == [INCIDENT_FAULT]
    assert "# GUESS: refund_payment call 1" in text and "timeout_after_mutation" in text
    by_id = {e["id"]: e for e in spec["expectations"]}
    assert by_id["verified-orders-ord-1001-refund-count"] == {
        "id": "verified-orders-ord-1001-refund-count",
        "type": "state",
        "path": "orders.ORD-1001.refund_count",
        "equals": 1,
        "critical": True,
    }
    assert by_id["verified-orders-ord-1001-refunded-amount"]["equals"] == 40
    assert by_id["no-duplicate-refund-payment"] == {
        "id": "no-duplicate-refund-payment",
        "type": "noDuplicateSideEffect",
        "tool": "refund_payment",
        "critical": True,
    }
    assert "production showed 2" in text
    # the tool sequence as recorded, call by call
    evidence = doc["metadata"]["generated"]["evidence"]
    assert [line.split(": ", 1)[1].split(" ")[0] for line in evidence[1:]] == [
        "lookup_order",
        "refund_payment",
        "refund_payment",
        "send_email",
    ]
    assert evidence[2].endswith("-> timeout") and evidence[3].endswith("-> ok")

    code, out, err = run_cli(capsys, "scenario", "check", str(draft), "--twin", "demo")
    assert code == 0, out + err

    code, out, err = run_cli(
        capsys,
        "evaluate",
        "--baseline",
        "demo:1.2.4",
        "--candidate",
        "demo:1.3.0",
        "--suite",
        str(draft),
        "--json",
        "--data-dir",
        str(tmp_path / "eval"),
    )
    assert code == 0, err
    (case,) = json.loads(out)["cases"]
    assert case["classification"] == "NEW_CRITICAL_FAILURE", case
    assert case["baseline"]["status"] == "PASSED"
    assert "refund_count: expected 1, got 2" in case["reason"]


def test_mine_refuses_what_it_cannot_mine(capsys: pytest.CaptureFixture[str], incident: tuple[Path, str]) -> None:
    data_dir, _ = incident
    for trace, words in (("nothex", "--trace must be 32 hex digits"), ("ab" * 16, "no spans of trace")):
        code, out, err = run_cli(capsys, "mine", "--trace", trace, "--data-dir", str(data_dir), "-o", "-")
        assert code == 2 and out == "" and words in err and len(err.strip().splitlines()) == 1, err

"""Bring your own agent, end to end: the demo agent served over HTTP against the twin endpoint.

On the nine demo scenarios it must leave exactly the evidence the in-process demo agent leaves (same
records, retrievals and final state, as canonical JSON), for the good baseline and the regression, so
every verdict and classification built on that evidence is the same.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest

from agenttwin.demo import TWIN_FILE
from evaluation.case import CaseRun
from producers.agents.demo_agent import DemoAgent
from producers.agents.demo_server import DemoAgentServer
from producers.agents.http_agent import HttpAgent
from producers.simulator import case_id_for, simulate_case
from twin_engine.canonical import canonical_json
from twin_engine.documents import Scenario, demo_manifest, load_suite, load_twin
from twin_engine.faults import case_seed
from twin_engine.twin import Twin

RUN_SEED = 42


@functools.cache
def demo_world() -> tuple[Twin, tuple[Scenario, ...]]:
    twin = load_twin(TWIN_FILE)
    return twin, tuple(load_suite("demo", twin))


@pytest.fixture(scope="module")
def demo_server() -> Iterator[DemoAgentServer]:
    with DemoAgentServer() as server:
        yield server


def evidence(run: CaseRun) -> str:
    return canonical_json(
        {
            "records": [record.to_dict() for record in run.records],
            "retrievals": [retrieval.to_dict() for retrieval in run.retrievals],
            "final_state": run.final_state,
            "state_hash": run.state_hash,
        }
    )


def claims(run: CaseRun) -> tuple[object, ...]:
    return (
        run.output,
        run.claimed_outcome,
        run.business_outcome,
        run.agent_status,
        run.agent_steps,
        canonical_json(list(run.claimed_calls)),
        run.tokens,
        run.latency_ms,
        run.model_kind,
    )


@pytest.mark.parametrize("version", ["1.2.4", "1.3.0"])
def test_demo_agent_over_http_leaves_the_same_evidence(demo_server: DemoAgentServer, version: str) -> None:
    twin, scenarios = demo_world()
    assert len(scenarios) == 9
    in_process = DemoAgent(demo_manifest(version))
    with HttpAgent.from_spec(f"{demo_server.url}#{version}", timeout_s=10) as over_http:
        for scenario in scenarios:
            seed = case_seed(RUN_SEED, scenario.name, scenario.seed)
            case_id = case_id_for(f"run-{version}", scenario.name)
            local = simulate_case(
                in_process, scenario, twin, case_seed=seed, case_id=case_id, agent_spec=f"demo:{version}"
            )
            remote = simulate_case(over_http, scenario, twin, case_seed=seed, case_id=case_id, agent_spec=over_http.url)
            assert remote.agent_finding is None, (scenario.name, remote.agent_finding)
            assert local.records or local.retrievals, scenario.name
            assert evidence(remote) == evidence(local), scenario.name
            assert claims(remote) == claims(local), scenario.name
            assert remote.agent_version == version


def test_demo_versions_differ_over_http(demo_server: DemoAgentServer) -> None:
    """A guard that the comparison above can fail: the two versions act differently on the happy path."""
    twin, scenarios = demo_world()
    happy = next(s for s in scenarios if s.name == "refund-happy-path")
    tools: dict[str, list[str]] = {}
    for version in ("1.2.4", "1.3.0"):
        with HttpAgent.from_spec(f"{demo_server.url}#{version}", timeout_s=10) as agent:
            run = simulate_case(agent, happy, twin, case_seed=1, case_id="c", agent_spec=agent.url)
        tools[version] = [record.tool for record in run.records]
    assert tools["1.2.4"] == ["lookup_order", "get_refund_policy", "refund_payment", "lookup_order", "send_email"]
    assert tools["1.3.0"] == ["lookup_order", "refund_payment", "send_email"]

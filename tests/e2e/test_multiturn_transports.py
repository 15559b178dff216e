"""A conversation is the same conversation in process, over HTTP and over MCP.

The Demo Co agent answers each turn of the demo-multiturn scenarios in process, behind the HTTP agent
interface (one `POST /run` per turn, the earlier turns in `conversation`), and as the MCP example agent;
the twin's records, the final state and every turn (message, reply, claims, record range) must be equal.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agenttwin.demo import TWIN_FILE
from evaluation.case import CaseRun
from producers.agents.demo_agent import DemoAgent
from producers.agents.demo_server import DemoAgentServer
from producers.agents.http_agent import HttpAgent
from producers.simulator import case_id_for, simulate_case
from twin_engine.canonical import canonical_json
from twin_engine.documents import demo_manifest, load_suite, load_twin
from twin_engine.faults import case_seed

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp_agent" / "agent.py"


@pytest.fixture(scope="module")
def agent_urls() -> Iterator[dict[str, str]]:
    spec = importlib.util.spec_from_file_location("mcp_agent_example_mt", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    mcp_server = module.make_server()
    thread = threading.Thread(target=mcp_server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    with DemoAgentServer() as http_server:
        yield {"http": http_server.url, "mcp": f"http://127.0.0.1:{mcp_server.server_address[1]}"}
    mcp_server.shutdown()
    mcp_server.server_close()
    thread.join(timeout=5)


def seen(run: CaseRun) -> str:
    return canonical_json(
        {
            "records": [r.to_dict() for r in run.records],
            "retrievals": [r.to_dict() for r in run.retrievals],
            "final_state": run.final_state,
            "turns": [t.to_dict() for t in run.turns],
            "claims": [run.output, run.claimed_outcome, run.business_outcome, run.agent_status, run.agent_steps],
        }
    )


@pytest.mark.parametrize("version", ["1.2.4", "1.3.0"])
def test_each_turn_is_the_same_in_process_over_http_and_over_mcp(agent_urls: dict[str, str], version: str) -> None:
    twin = load_twin(TWIN_FILE)
    scenarios = load_suite("demo-multiturn", twin)
    assert [s.name for s in scenarios] == ["refund-amount-changed", "refund-order-number-later"]
    local_agent = DemoAgent(demo_manifest(version))
    with (
        HttpAgent.from_spec(f"{agent_urls['http']}#{version}", timeout_s=30) as over_http,
        HttpAgent.from_spec(f"{agent_urls['mcp']}#{version}", timeout_s=30) as over_mcp,
    ):
        for scenario in scenarios:
            seed = case_seed(7, scenario.name, scenario.seed)
            case_id = case_id_for("run-mt", scenario.name)
            runs = [
                simulate_case(agent, scenario, twin, case_seed=seed, case_id=case_id, agent_spec="x")
                for agent in (local_agent, over_http, over_mcp)
            ]
            for run in runs:
                assert run.agent_finding is None, (scenario.name, run.agent_finding)
            assert len(runs[0].turns) == 2, scenario.name
            assert seen(runs[1]) == seen(runs[0]), f"{scenario.name} over HTTP"
            assert seen(runs[2]) == seen(runs[0]), f"{scenario.name} over MCP"

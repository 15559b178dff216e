"""An agent built on the official MCP client, end to end: examples/mcp_agent reaches its tools only over MCP.

`agenttwin evaluate` asks it over the HTTP agent interface (which hands it the case's `mcp_url`); with
1.2.4-like and 1.3.0-like behaviour it must be classified exactly like the in-process demo agents:
2 new critical failures, 1 regressed, 6 unchanged — and not one tool call may go over the HTTP tool API.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agenttwin.cli import main
from producers import twin_http, twin_mcp

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "mcp_agent" / "agent.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mcp_agent_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def mcp_agent_url() -> Iterator[str]:
    server = load_example().make_server()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def evaluate(capsys: pytest.CaptureFixture[str], data_dir: Path, baseline: str, candidate: str) -> dict[str, Any]:
    argv = ["evaluate", "--baseline", baseline, "--candidate", candidate, "--json", "--data-dir", str(data_dir)]
    code = main(argv)
    out = capsys.readouterr().out
    assert code == 0, out
    return dict(json.loads(out))


def classifications(doc: dict[str, Any]) -> dict[str, str]:
    return {c["scenario"]: c["classification"] for c in doc["cases"]}


def test_the_mcp_agent_is_classified_like_the_in_process_demo_agents(
    mcp_agent_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    http_tool_requests: list[str] = []
    mcp_tool_calls: list[str] = []
    http_post = twin_http._EndpointHandler.do_POST
    mcp_call = twin_mcp.TwinMcp._call_tool

    def counted_http_post(handler: Any) -> None:
        http_tool_requests.append(handler.path)
        http_post(handler)

    async def counted_mcp_call(self: twin_mcp.TwinMcp, ctx: Any, params: Any) -> Any:
        mcp_tool_calls.append(params.name)
        return await mcp_call(self, ctx, params)

    monkeypatch.setattr(twin_http._EndpointHandler, "do_POST", counted_http_post)
    monkeypatch.setattr(twin_mcp.TwinMcp, "_call_tool", counted_mcp_call)

    over_mcp = evaluate(capsys, tmp_path / "mcp", f"{mcp_agent_url}#1.2.4", f"{mcp_agent_url}#1.3.0")
    in_process = evaluate(capsys, tmp_path / "local", "demo:1.2.4", "demo:1.3.0")

    assert {k: v for k, v in over_mcp["summary"]["counts"].items() if v} == {
        "NEW_CRITICAL_FAILURE": 2,
        "REGRESSED": 1,
        "UNCHANGED": 6,
    }
    assert classifications(over_mcp) == classifications(in_process)
    local = {c["scenario"]: c for c in in_process["cases"]}
    for case in over_mcp["cases"]:  # verdict by verdict, not only the classification
        for side in ("baseline", "candidate"):
            assert case[side]["status"] == local[case["scenario"]][side]["status"], (case["scenario"], side)
            assert case[side]["labels"] == local[case["scenario"]][side]["labels"], (case["scenario"], side)
    # every tool call went over MCP: as many as the in-process agents made, none over the HTTP tool API
    assert http_tool_requests == []
    made = over_mcp["summary"]["baseline"]["tool_calls"] + over_mcp["summary"]["candidate"]["tool_calls"]
    assert made == in_process["summary"]["baseline"]["tool_calls"] + in_process["summary"]["candidate"]["tool_calls"]
    assert len([name for name in mcp_tool_calls if name != twin_mcp.KB_TOOL]) == made

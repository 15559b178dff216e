"""`agenttwin twin mcp`: one twin case served over MCP on stdio, for a local agent that launches it."""

from __future__ import annotations

import argparse
from pathlib import Path

from agenttwin.render import to_json
from twin_engine.case import new_case


def twin_mcp(args: argparse.Namespace) -> int:
    """Serve one case until the client closes stdin; then write the case's evidence to `--out` (JSON)."""
    import anyio

    from agenttwin.commands import _load_twin
    from producers.twin_http import TwinEndpoint
    from producers.twin_mcp import serve_case_stdio
    from twin_engine.documents import load_scenario
    from twin_engine.twin import ScenarioConfig

    twin = _load_twin(args.twin)
    config = ScenarioConfig.from_scenario(load_scenario(args.scenario, twin=twin).raw) if args.scenario else None
    case = new_case(twin, scenario=config, seed=args.seed, tenant=args.tenant)
    # The endpoint is only the case registry here (call caps, twin-error bookkeeping); it is never started.
    endpoint = TwinEndpoint()
    try:
        handle = endpoint.open_case(case)
        anyio.run(serve_case_stdio, endpoint, handle.token)
        endpoint.close_case(handle.token)
    finally:
        endpoint.stop()
    if args.out:
        result = {
            "records": [r.to_dict() for r in case.records],
            "retrievals": [r.to_dict() for r in case.retrievals],
            "final_state": case.state,
            "state_hash": case.state_hash(),
        }
        Path(args.out).write_text(to_json(result) + "\n", encoding="utf-8")
    return 0

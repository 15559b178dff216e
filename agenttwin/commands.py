"""What each CLI command does. The parser lives in cli.py; the work lives in the packages."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from agenttwin.errors import CliError
from agenttwin.render import out, table, to_json
from twin_engine.case import new_case


def twin_check(args: argparse.Namespace) -> int:
    from twin_engine.documents import load_twin, load_twin_document

    rows = []
    for f in args.files:
        twin = load_twin(f)
        doc = load_twin_document(f)  # read again only for the warnings' line numbers
        warnings = [
            f"{doc.source_name}:{doc.line_for_path(path) or '?'}: {path}: {message}"
            for path, message in twin.warnings()
        ]
        rows.append(
            {"file": f, "twin": twin.name, "tools": len(twin.tool_specs()), "hash": twin.hash, "warnings": warnings}
        )
    if args.json:
        out(to_json({"ok": True, "twins": rows, "call_budget": call_budget()}))
    else:
        for r in rows:
            out(f"ok  {r['file']}: twin {r['twin']} with {r['tools']} tools")
            for warning in r["warnings"]:
                out(f"warn {warning}")
        budget = call_budget()
        out(
            f"every call runs under a budget of {budget['steps']:,} steps, {budget['bytes'] >> 20} MiB allocated "
            f"and {budget['seconds']:g} s (over it: 500 TWIN_BUDGET_EXCEEDED, recorded; docs/trust-boundaries.md)"
        )
    return 0


def call_budget() -> dict[str, Any]:
    from twin_engine.budget import BYTE_BUDGET, CALL_SECONDS, STEP_BUDGET

    return {"steps": STEP_BUDGET, "bytes": BYTE_BUDGET, "seconds": CALL_SECONDS}


def scenario_check(args: argparse.Namespace) -> int:
    from twin_engine.documents import load_scenario, twin_mismatch

    twin = _load_twin(args.twin) if args.twin else None
    rows = []
    for f in args.files:
        s = load_scenario(f, twin=twin)
        if twin is not None and (problem := twin_mismatch(s, twin)) is not None:
            _note(f"{problem}; checked against it as --twin asks")
        rows.append({"file": f, "scenario": s.name, "expectations": len(s.expectations), "spec_hash": s.spec_hash})
    if args.json:
        out(to_json({"ok": True, "scenarios": rows}))
    else:
        for r in rows:
            out(f"ok  {r['file']}: scenario {r['scenario']} with {r['expectations']} expectations")
    return 0


def twin_call(args: argparse.Namespace) -> int:
    from twin_engine.documents import load_scenario
    from twin_engine.twin import ScenarioConfig

    twin = _load_twin(args.twin)
    config = None
    if args.scenario:
        config = ScenarioConfig.from_scenario(load_scenario(args.scenario, twin=twin).raw)
    calls = _read_calls(Path(args.calls))
    case = new_case(twin, scenario=config, seed=args.seed, tenant=args.tenant)
    if twin.tenant_key and case.tenant is None:
        _note("tenant checks are off: no --tenant and no scenario tenant, so every tenant's records are reachable")
    for call in calls:
        case.call(call["tool"], call.get("arguments", {}), headers=call.get("headers"))
    result = {
        "records": [r.to_dict() for r in case.records],
        "retrievals": [r.to_dict() for r in case.retrievals],
        "final_state": case.state,
        "state_hash": case.state_hash(),
    }
    if args.json:
        out(to_json(result))
    else:
        rows = [
            [r.seq, r.tool, r.http_status, r.status, r.error_code or "", r.fault or "", r.mutated, r.replayed]
            for r in case.records
        ]
        out(table(["seq", "tool", "http", "status", "error", "fault", "mutated", "replayed"], rows))
        out(f"\nstate hash {result['state_hash']}")
    return 0


def _note(text: str) -> None:
    """A one-line note on stderr: stdout stays the command's output (tables or JSON)."""
    print(f"agenttwin: note: {text}", file=sys.stderr)


def _read_calls(path: Path) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CliError(f"{path.name}:{n}: not JSON: {exc.msg}") from None
        if not isinstance(item, dict) or not isinstance(item.get("tool"), str):
            raise CliError(f"{path.name}:{n}: each line needs a string 'tool' (and optional 'arguments', 'headers')")
        if not isinstance(item.get("arguments", {}), dict) or not isinstance(item.get("headers") or {}, dict):
            raise CliError(f"{path.name}:{n}: 'arguments' and 'headers' must be objects")
        calls.append(item)
    return calls


def _load_twin(spec: str | None) -> Any:
    from agenttwin.demo import TWIN_FILE
    from twin_engine.documents import load_twin

    if spec is None or spec == "demo":
        return load_twin(TWIN_FILE)
    if spec == "airline":
        from agenttwin.worlds.airline import TWIN_FILE as AIRLINE_TWIN

        return load_twin(AIRLINE_TWIN)
    return load_twin(spec)


def simulate(args: argparse.Namespace) -> int:
    from agenttwin.pipeline_commands import checked_agent_spec
    from agenttwin.runs import simulate_agent

    args.agent = checked_agent_spec(args.agent, getattr(args, "agent_name", None), "agent")
    report = simulate_agent(
        args.agent, suite=args.suite, twin=args.twin, seed=args.seed, evaluator_version=args.evaluator_version
    )
    if args.json:
        out(to_json(report["cases"]))
        return 0
    rows = [
        [
            c["scenario"],
            c["verdict"]["status"],
            c["claimed_outcome"],
            c["verified_outcome"]["status"],
            len([r for r in c["records"] if not r["redelivered"]]),
            c["verdict"]["reason"],
        ]
        for c in report["cases"]
    ]
    kinds = sorted({c["model_kind"] for c in report["cases"]})
    out(f"{report['agent']} ({', '.join(kinds)}) on {len(rows)} scenario(s), run seed {report['run_seed']}\n")
    out(table(["scenario", "verdict", "claimed", "verified", "calls", "reason"], rows))
    return 0


def demo_agent_serve(args: argparse.Namespace) -> int:
    from producers.agents.demo_server import serve_cli

    return serve_cli(args.host, args.port)

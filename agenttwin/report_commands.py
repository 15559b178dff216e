"""`agenttwin gate`, `agenttwin report`, and what `evaluate` does once the pipeline is done: the
contradictions it lists, the gate it decides (--gate) and the reports it writes (--junit/--markdown/--html).

Everything here reads the stored evaluation back from the projections (agenttwin.stored_evaluation), so
the same evaluation gives the same gate and the same reports from `evaluate` and from these commands.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenttwin.command_args import REPORT_FORMATS, add_report_args, register  # noqa: F401 - the parser's side
from agenttwin.errors import CliError
from agenttwin.release_gate import (
    GateOutcome,
    Publish,
    decide_stored,
    gate_evaluation,
    load_policy,
    render_decision,
)
from agenttwin.render import out, to_json
from agenttwin.stored_evaluation import NotStoredError, StoredContradiction, StoredEvaluation, load_stored
from consumers.clickhouse import Warehouse
from evaluation.gate import DEFAULT_POLICY, GateDecision
from streams.events import Event
from streams.kafka.naming import Naming

# --- where the stored evaluation lives --------------------------------------------------------------------


@dataclass
class Store:
    warehouse: Warehouse
    publish: Publish


@contextmanager
def open_store(args: argparse.Namespace) -> Iterator[Store]:
    """The projections (synced first) and a way to publish events into them, on either runtime."""
    from agenttwin.command_context import kafka_of, kafka_warehouse_of, open_embedded_of
    from agenttwin.settings import load_settings

    settings = load_settings()
    bootstrap = kafka_of(args, settings)
    if bootstrap:
        from agenttwin.kafka_cli import naming_for, sync_warehouse_from_kafka

        naming = naming_for(args, settings)
        with kafka_warehouse_of(args, settings) as wh:
            sync_warehouse_from_kafka(bootstrap, wh, naming=naming)
            yield kafka_store(bootstrap, wh, naming)
        return
    _, emb = open_embedded_of(args)
    with emb:
        from consumers.embedded_sink import sync

        sync(emb.runtime, emb.warehouse)

        yield embedded_store(emb)


def kafka_store(bootstrap: str, warehouse: Warehouse, naming: Naming | None = None) -> Store:
    from agenttwin.kafka_cli import sync_warehouse_from_kafka
    from streams.kafka.publisher import KafkaPublisher

    def publish(events: Sequence[Event]) -> None:
        with KafkaPublisher(bootstrap, naming) as publisher:
            publisher.publish(events)
        sync_warehouse_from_kafka(bootstrap, warehouse, naming=naming)

    return Store(warehouse, publish)


def embedded_store(emb: Any) -> Store:
    from consumers.embedded_sink import sync

    def publish(events: Sequence[Event]) -> None:
        emb.runtime.publish(events)
        sync(emb.runtime, emb.warehouse)

    return Store(emb.warehouse, publish)


def _version(args: argparse.Namespace) -> str:
    from agenttwin.command_context import evaluator_version

    return evaluator_version(getattr(args, "evaluator_version", None))


# --- commands ---------------------------------------------------------------------------------------------


def gate(args: argparse.Namespace) -> int:
    version = _version(args)
    policy = load_policy(args.policy)
    with open_store(args) as store:
        outcome = gate_evaluation(store.warehouse, store.publish, args.evaluation_id, version, policy)
    decision = outcome.decision
    if args.json:
        out(to_json({"evaluation_id": args.evaluation_id, "evaluator_version": version, **decision.to_dict()}))
    else:
        out(render_decision(decision))
    return decision.exit_status(args.warn_exit)


def default_report_path(evaluation_id: str) -> str:
    """Where `agenttwin report ID` with no format flag writes its HTML report: the current directory."""
    return str(Path.cwd() / ("agenttwin-report-" + re.sub(r"[^A-Za-z0-9._-]", "_", evaluation_id) + ".html"))


def report(args: argparse.Namespace) -> int:
    if getattr(args, "production", False):
        return production_report(args)
    if not args.evaluation_id:
        raise CliError("name the evaluation to report (EVALUATION_ID), or pass --production")
    if not any(getattr(args, f) for f in REPORT_FORMATS):
        args.html = default_report_path(args.evaluation_id)
    version = _version(args)
    with open_store(args) as store:
        try:
            stored = load_stored(store.warehouse, args.evaluation_id, version, with_cases=True)
        except NotStoredError as exc:
            raise CliError(str(exc)) from None
        decision = _shown_decision(store.warehouse, stored)
    for path in write_reports(args, [(stored, decision)]):
        out(f"Report written: {path}")
    return 0


def _shown_decision(warehouse: Warehouse, stored: StoredEvaluation) -> GateDecision:
    """The gate decision a report shows: re-decided under the latest stored decision's policy, else the
    default policy (a report never invents a decision nobody could reproduce: the policy is named)."""
    from agenttwin.stored_evaluation import latest_gate_decision
    from evaluation.gate import policy_from_spec

    latest = latest_gate_decision(warehouse, stored.evaluation_id, stored.evaluator_version)
    policy = DEFAULT_POLICY
    if latest is not None:
        import json

        spec = json.loads(str(latest["policy_json"]))
        policy = policy_from_spec(spec.pop("name"), spec)
    return decide_stored(stored, policy)


def write_reports(args: argparse.Namespace, evaluations: Sequence[tuple[StoredEvaluation, GateDecision]]) -> list[str]:
    """Write every report the flags ask for; returns the paths written ('-' prints to stdout)."""
    from agenttwin.reports import render_html, render_junit, render_markdown

    renderers = {"junit": render_junit, "markdown": render_markdown, "html": render_html}
    written = []
    for fmt in REPORT_FORMATS:
        target = getattr(args, fmt, None)
        if not target:
            continue
        text = renderers[fmt](evaluations)
        if target == "-":
            sys.stdout.write(text)
            continue
        path = Path(target).expanduser()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CliError(f"cannot write the {fmt} report to {target}: {exc.strerror or exc}") from None
        written.append(str(path))
    return written


def check_report_targets(args: argparse.Namespace) -> None:
    """Before any case runs: evaluate prints its own output on stdout, so reports go to files; a policy file
    is checked now, not after the run."""
    for fmt in REPORT_FORMATS:
        if getattr(args, fmt, None) == "-":
            raise CliError(f"--{fmt} -: evaluate prints its own output on stdout; give a file")
    if getattr(args, "gate", None):
        load_policy(args.gate)


# --- evaluate's epilogue ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Epilogue:
    text: str  # what the table output adds after the comparison (contradictions, gate, reports written)
    gate: dict[str, Any] | None  # the decision for --json (None without --gate)
    exit_status: int


def after_evaluate(args: argparse.Namespace, store: Store, evaluation_id: str, version: str) -> Epilogue:
    wants_reports = any(getattr(args, f, None) for f in REPORT_FORMATS)
    policy = load_policy(args.gate) if args.gate else None
    stored = load_stored(store.warehouse, evaluation_id, version, with_cases=wants_reports)
    lines = [render_contradictions(stored.contradictions)]
    gate_doc = None
    status = 0
    decision = None
    if policy is not None:
        outcome: GateOutcome = gate_evaluation(store.warehouse, store.publish, evaluation_id, version, policy)
        decision = outcome.decision
        gate_doc = decision.to_dict()
        status = decision.exit_status(args.warn_exit)
        lines += ["", render_decision(decision)]
    if wants_reports:
        shown = decision or _shown_decision(store.warehouse, stored)
        for path in write_reports(args, [(stored, shown)]):
            lines.append(f"Report written: {path}")
    return Epilogue("\n".join(lines), gate_doc, status)


def render_contradictions(items: Sequence[StoredContradiction]) -> str:
    if not items:
        return "\nContradictions: none (no success claim was disproved by the twin's state)."
    lines = ["", f"Contradictions ({len(items)}): the agent claimed success, the twin's state says otherwise"]
    for k in items:
        who = f"{k.side.lower() or 'case'} {k.agent}"
        lines.append(f"- {who} on {k.scenario}: claimed {k.claimed_as}, verified {k.verified}")
        if k.reply:
            reply = " ".join(k.reply.split())
            lines.append(f'    reply: "{reply if len(reply) <= 200 else reply[:199] + "…"}"')
        lines.append(f"    evidence: {k.detail}")
    return "\n".join(lines)


# --- the demo's ending ------------------------------------------------------------------------------------

DEMO_REPORT = "reports/agenttwin-demo.html"


def demo_epilogue(store: Store, evaluation_ids: Sequence[str], version: str, data_dir: Path) -> str:
    """Decide each pair under the default policy (published, like `--gate`), print the decisions and write
    the story's HTML report; returns the report's path."""
    shown = []
    for evaluation_id in evaluation_ids:
        outcome = gate_evaluation(store.warehouse, store.publish, evaluation_id, version, DEFAULT_POLICY)
        stored = load_stored(store.warehouse, evaluation_id, version, with_cases=True)
        shown.append((stored, outcome.decision))
        out(
            f"Release gate (default policy) for {stored.candidate_agent} vs {stored.baseline_agent}: "
            f"{outcome.decision.summary}"
        )
    from agenttwin.reports import render_html

    path = (data_dir / DEMO_REPORT).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(shown), encoding="utf-8")
    return str(path)


# --- the production page ----------------------------------------------------------------------------------

LATEST_CONTRADICTIONS = 20


def production_report(args: argparse.Namespace) -> int:
    """`agenttwin report --production --html FILE` (agenttwin/reports/production.py)."""
    from agenttwin.reports.production import render_production

    if args.evaluation_id:
        raise CliError("--production reports production, not an evaluation: drop EVALUATION_ID")
    if not args.html or args.junit or args.markdown:
        raise CliError("--production writes HTML only: pass --html FILE")
    with open_store(args) as store:
        data = production_data(store.warehouse)
    text = render_production(data)
    if args.html == "-":
        sys.stdout.write(text)
    else:
        Path(args.html).write_text(text, encoding="utf-8")
        out(
            f"Wrote {args.html}: {len(data.windows)} version windows, "
            f"{sum(1 for a in data.alarms if a.get('state') == 'open')} open version alarm(s), "
            f"{len(data.contradictions)} latest contradiction(s)."
        )
    return 0


def production_data(warehouse: Warehouse) -> Any:
    """The rows of the production page, from the projections (production tenants only, never `sim:`)."""
    from agenttwin.reports.production import ProductionData

    def rows(sql: str) -> list[dict[str, Any]]:
        return warehouse.read_only_query(sql).as_dicts()

    windows = rows(
        "SELECT tenant, agent, agent_version, window_start, traces, verified_traces, contradictions, "
        "verified_failures, escalations, tool_errors FROM v_version_windows "
        "ORDER BY tenant, agent, agent_version, window_start"
    )
    alarms = rows("SELECT * FROM v_version_alarms ORDER BY detected_at, alarm_id")
    contradictions = rows(
        "SELECT c.tenant AS tenant, c.agent AS agent, c.agent_version AS agent_version, c.trace_id AS trace_id, "
        "c.detected_at AS detected_at, c.claimed_status AS claimed_status, c.verified_status AS verified_status, "
        "c.source AS source, c.detail AS detail, cl.final_answer AS final_answer, v.reason AS reason "
        "FROM v_contradictions AS c "
        "LEFT JOIN (SELECT ifNull(tenant, '') AS t, trace_id, final_answer FROM claims FINAL) AS cl "
        "ON cl.t = ifNull(c.tenant, '') AND cl.trace_id = c.trace_id "
        "LEFT JOIN (SELECT ifNull(tenant, '') AS t, trace_id, argMax(reason, occurred_at) AS reason "
        "FROM verified_outcomes FINAL GROUP BY t, trace_id) AS v "
        "ON v.t = ifNull(c.tenant, '') AND v.trace_id = c.trace_id "
        "WHERE NOT startsWith(ifNull(c.tenant, ''), 'sim:') "
        f"ORDER BY c.detected_at DESC, c.trace_id LIMIT {LATEST_CONTRADICTIONS}"
    )
    return ProductionData(windows, alarms, contradictions)

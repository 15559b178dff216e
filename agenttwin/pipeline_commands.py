"""CLI commands that run through the event pipeline: demo, evaluate, replay, sql, events tail."""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import time
from pathlib import Path
from typing import Any

from agenttwin.cells import json_value, text_cell
from agenttwin.command_context import data_dir_of as _data_dir_of
from agenttwin.command_context import evaluator_version as _version
from agenttwin.command_context import kafka_of as _kafka
from agenttwin.command_context import kafka_warehouse_of as _kafka_warehouse
from agenttwin.command_context import open_embedded_of as _open
from agenttwin.errors import CliError
from agenttwin.pipeline import (
    evaluation_request,
    judge_refiner,
    report_for,
    run_pipeline,
)
from agenttwin.progress import RunProgress
from agenttwin.progress import wanted as progress_wanted
from agenttwin.render import Progress, out, table, to_json
from agenttwin.report_commands import (
    Epilogue,
    after_evaluate,
    check_report_targets,
    demo_epilogue,
    embedded_store,
    kafka_store,
)
from agenttwin.settings import Settings, load_settings
from consumers.clickhouse import qualified
from consumers.clickhouse import sql_literal as lit
from evaluation.claim_status import describe_inference
from evaluation.pairing import MAX_TRIALS
from evaluation.redaction import SecretMask
from evaluation.versions import DEFAULT_EVALUATOR_SET
from streams.events import PairPlanned
from streams.topics import TOPIC_BY_NAME

# The field notes' story: the planted regression against the good baseline, then the fix against it.
DEMO_PAIRS = (("demo:1.2.4", "demo:1.3.0"), ("demo:1.3.0", "demo:1.3.1"))
DEMO_SEED = 42
MAX_CONCURRENCY = 64


def _progress(label: str, total: int) -> tuple[Progress, Any]:
    bar = Progress(total, label)

    def step(stage: str, n: int) -> None:
        bar.advance(n, stage)

    return bar, step


def evaluate(args: argparse.Namespace) -> int:
    version = _version(args.evaluator_version)
    check_report_targets(args)
    _check_trials_and_concurrency(args)
    # a bad spec, a missing model key or an HTTP agent's URL that leads to no agent stops here, before any case
    args.baseline = checked_agent_spec(args.baseline, getattr(args, "baseline_name", None), "baseline")
    args.candidate = checked_agent_spec(args.candidate, getattr(args, "candidate_name", None), "candidate")
    settings = load_settings()
    bootstrap = _kafka(args, settings)
    request = evaluation_request(
        args.baseline,
        args.candidate,
        suite=args.suite,
        twin=args.twin,
        seed=args.seed,
        evaluation_id=args.evaluation_id,
        evaluator_version=version,
        trials=args.trials,
    )
    if bootstrap:
        from agenttwin.kafka_cli import evaluate_on_kafka, naming_for

        started = time.perf_counter()
        with _kafka_warehouse(args, settings) as wh:
            report = evaluate_on_kafka(
                bootstrap,
                request,
                local_workers=not args.workers_running,
                warehouse=wh,
                naming=naming_for(args, settings),
            )
            assert not isinstance(report, list)
            doc = report.to_dict()
            doc["timings"] = {"wall_ms": round((time.perf_counter() - started) * 1000, 3)}
            epilogue = after_evaluate(
                args, kafka_store(bootstrap, wh, naming_for(args, settings)), request.evaluation_id, version
            )
        return _print_evaluation(args, doc, epilogue)
    settings, emb = _open(args)
    with emb:
        started = time.perf_counter()
        since = {t: emb.runtime.log.end_offset(t) for t in ("evaluations", "verdicts")}
        emb.runtime.publish([request])
        cases = len(json.loads(request.scenarios_json)) * 2 * args.trials
        with RunProgress(cases, enabled=progress_wanted(args.json)) as progress:
            run_pipeline(emb, [version], judge_refiner(settings), progress=progress, concurrency=args.concurrency)
        report = report_for(emb.runtime, request.evaluation_id, version, since=since)
        doc = report.to_dict()
        doc["timings"] = {"wall_ms": round((time.perf_counter() - started) * 1000, 3)}
        epilogue = after_evaluate(args, embedded_store(emb), request.evaluation_id, version)
    return _print_evaluation(args, doc, epilogue)


def checked_agent_spec(spec: str, name: str | None, role: str) -> str:
    """The spec to run (with the operator's display name), once it resolved and its HTTP agent answered."""
    from producers.agents.registry import check_agent_spec, with_agent_name

    if name is not None:
        spec = with_agent_name(spec, name)
    note = check_agent_spec(spec, role)
    if note:
        print(f"agenttwin: {note}; evaluating anyway", file=sys.stderr)
    return spec


def _print_evaluation(args: argparse.Namespace, doc: dict[str, Any], epilogue: Epilogue) -> int:
    if epilogue.gate is not None:
        doc["gate"] = epilogue.gate
    out(to_json(doc) if args.json else render_report(doc) + "\n" + epilogue.text)
    return epilogue.exit_status


def _check_trials_and_concurrency(args: argparse.Namespace) -> None:
    from evaluation.trials import TrialsError, check_trials

    if not 1 <= args.trials <= MAX_TRIALS:
        raise CliError(f"--trials must be between 1 and {MAX_TRIALS}, got {args.trials}")
    try:
        check_trials(args.trials)
    except TrialsError as exc:
        raise CliError(str(exc)) from None
    if not 1 <= args.concurrency <= MAX_CONCURRENCY:
        raise CliError(f"--concurrency must be between 1 and {MAX_CONCURRENCY}, got {args.concurrency}")
    if args.concurrency > 1 and _kafka(args, load_settings()):
        raise CliError(
            "--concurrency runs cases in parallel on the embedded runtime; on Kafka run more simulator "
            "workers (`agenttwin worker simulator`) over the case-plans partitions"
        )


def render_report(doc: dict[str, Any]) -> str:
    rows = [[c["scenario"], c["classification"], c["reason"]] for c in doc["cases"]]
    lines = [
        f"Evaluation {doc['evaluation_id']}: candidate {doc['candidate']} vs baseline {doc['baseline']}"
        f"  (run seed {doc['run_seed']}, evaluator {doc['evaluator_version']})",
        "",
        table(["scenario", "classification", "reason"], rows, max_width=100),
        "",
        "Summary: " + _counts_line(doc["summary"]["counts"]),
    ]
    totals = doc["summary"]
    base, cand = totals.get("baseline") or {}, totals.get("candidate") or {}
    kinds = {side: {c[side].get("model_kind") for c in doc["cases"]} - {None} for side in ("baseline", "candidate")}
    if any(k != {"deterministic-fake"} for k in kinds.values() if k):
        lines.append(
            f"Models: baseline {', '.join(sorted(kinds['baseline'])) or 'unknown'} · "
            f"candidate {', '.join(sorted(kinds['candidate'])) or 'unknown'}"
        )
    if base and cand:
        lines.append(
            f"Tool calls {base.get('tool_calls')} → {cand.get('tool_calls')} · retries {base.get('retries')} → "
            f"{cand.get('retries')} · duplicate side effects {base.get('duplicate_side_effects')} → "
            f"{cand.get('duplicate_side_effects')}  (metrics never change a classification)"
        )
    changed = [c for c in doc["cases"] if c["classification"] != "UNCHANGED" and c.get("divergence")]
    if changed:
        lines += ["", "First divergence of each changed case:"]
        for c in changed:
            div = c["divergence"]
            lines.append(f"  {c['scenario']}: {div['summary']}")
            if div.get("impact"):
                lines.append(f"    {div['impact']}")
    return "\n".join(lines)


_WORDS = {
    "NEW_CRITICAL_FAILURE": ("new critical failure", "new critical failures"),
    "REGRESSED": ("regressed", "regressed"),
    "IMPROVED": ("improved", "improved"),
    "UNCHANGED": ("unchanged", "unchanged"),
    "INCOMPLETE": ("incomplete", "incomplete"),
    "FLAKY": ("flaky", "flaky"),
}


def _counts_line(counts: dict[str, int]) -> str:
    parts = [f"{n} {_WORDS.get(k, (k, k))[n != 1]}" for k, n in counts.items() if n]
    return " · ".join(parts) or "no cases"


def demo(args: argparse.Namespace) -> int:
    if getattr(args, "production", False):
        from agenttwin.production_demo import production_demo

        return production_demo(args)
    version = DEFAULT_EVALUATOR_SET
    settings = load_settings()
    requests = [
        evaluation_request(
            b, c, suite=["demo"], twin=None, seed=DEMO_SEED, evaluation_id=None, evaluator_version=version
        )
        for b, c in DEMO_PAIRS
    ]
    bootstrap = _kafka(args, settings)
    if bootstrap:
        from agenttwin.kafka_cli import evaluate_on_kafka, naming_for

        with _kafka_warehouse(args, settings) as wh:
            evaluate_on_kafka(bootstrap, requests, local_workers=True, warehouse=wh, naming=naming_for(args, settings))
            out(f"AgentTwin demo: the field notes' story on Kafka ({bootstrap})\n")
            _print_demo(wh, requests, version)
            root = Path(args.data_dir).expanduser() if args.data_dir else settings.resolved_data_dir
            store = kafka_store(bootstrap, wh, naming_for(args, settings))
            report = demo_epilogue(store, [r.evaluation_id for r in requests], version, root)
        out(f"HTML report of the story: {report}")
        return 0
    settings, emb = _open(args)
    with emb:
        emb.runtime.publish(requests)
        cases = sum(len(json.loads(r.scenarios_json)) * 2 for r in requests)
        with RunProgress(cases, enabled=progress_wanted(False)) as progress:
            stats = run_pipeline(emb, [version], judge_refiner(settings), progress=progress)
        out(f"AgentTwin demo: the field notes' story on the embedded runtime (data in {emb.runtime.data_dir})\n")
        _print_demo(emb.warehouse, requests, version)
        out(f"{stats.run.produced} new events, {stats.sink.rows} rows projected.")
        ids = [r.evaluation_id for r in requests]
        report = demo_epilogue(embedded_store(emb), ids, version, emb.runtime.data_dir)
    out(f"HTML report of the story: {report}")
    return 0


def _print_demo(wh: Any, requests: list[Any], version: str) -> None:
    for request in requests:
        eid = request.evaluation_id
        rows = wh.query(
            f"SELECT scenario_name, classification, reason FROM {qualified(wh, 'v_comparisons')} "
            f"WHERE evaluation_id = {lit(eid)} AND evaluator_version = {lit(version)} ORDER BY scenario_name"
        ).rows
        counts: dict[str, int] = {}
        for _, cls, _ in rows:
            counts[cls] = counts.get(cls, 0) + 1
        out(f"== {request.candidate_agent} (candidate) vs {request.baseline_agent} (baseline) · {eid}")
        out(table(["scenario", "classification", "reason"], [list(r) for r in rows], max_width=90))
        out("   " + _counts_line({k: counts[k] for k in _WORDS if k in counts}))
        divs = wh.query(
            f"SELECT scenario_name, divergence_summary, divergence_impact FROM {qualified(wh, 'v_comparisons')} "
            f"WHERE evaluation_id = {lit(eid)} AND evaluator_version = {lit(version)} "
            "AND classification != 'UNCHANGED' AND divergence_summary IS NOT NULL ORDER BY scenario_name"
        ).rows
        if divs:
            out("   First divergence of each changed case:")
            for name, summary, impact in divs:
                out(f"   - {name}: {summary}")
                if impact:
                    out(f"     {impact}")
        out("")
    evaluations = ", ".join(lit(r.evaluation_id) for r in requests)  # only the demo's own, whoever else shares the log
    alerts = wh.query(
        "SELECT k.agent, k.scenario_name, k.claimed_status, k.verified_status, c.output, k.detail, c.secrets, "
        "k.claim_inferred_by, k.claim_rule, k.claim_confidence "
        f"FROM {qualified(wh, 'v_contradictions')} AS k LEFT JOIN {qualified(wh, 'cases')} AS c FINAL "
        "ON c.case_id = k.case_id "
        f"WHERE k.evaluator_version = {lit(version)} AND k.evaluation_id IN ({evaluations}) "
        "ORDER BY k.agent, k.scenario_name, k.case_id"
    ).rows
    out("== Contradiction alerts: the agent claimed SUCCESS, the twin's state says otherwise")
    seen: set[tuple[str, str]] = set()
    for agent, scenario, claimed, verified, reply, detail, secrets, by, rule, confidence in alerts:
        if (agent, scenario) in seen:  # the same agent version appears in both evaluations
            continue
        seen.add((agent, scenario))
        how = f" ({describe_inference(by, rule, confidence)})" if by else ""
        out(f"- {agent} on {scenario}: claimed {claimed}{how}, verified {verified}")
        out(f'    reply: "{SecretMask(secrets or ()).text(reply) if reply else reply}"')  # the raw reply, shown masked
        out(f"    evidence: {detail}")
    if not alerts:
        out("(none)")
    out(
        "\nExplore the same facts in ClickHouse, e.g.:\n"
        '  agenttwin sql "SELECT candidate_agent, classification, count() FROM v_comparisons GROUP BY ALL"'
    )


def replay(args: argparse.Namespace) -> int:
    version = _version(args.evaluator_version)
    settings = load_settings()
    bootstrap = _kafka(args, settings)
    if bootstrap:
        from agenttwin.kafka_cli import naming_for, replay_on_kafka

        with _kafka_warehouse(args, settings) as wh:
            result = replay_on_kafka(bootstrap, version, warehouse=wh, naming=naming_for(args, settings))
            out(
                f"Replayed the topics from offset 0 under evaluator {version} (new consumer groups): "
                f"{result.verdicts} verdicts, {result.comparisons} comparisons."
            )
            _print_verdicts_by_version(wh)
        return 0
    settings, emb = _open(args)
    with emb:
        if not any(isinstance(e, PairPlanned) for e in emb.runtime.read_events("evaluations")):
            raise CliError("nothing to replay: no evaluation in this data directory (run `agenttwin demo` first)")
        bar, step = _progress(f"replaying under evaluator {version}", total=emb.runtime.log.end_offset("cases") * 6)
        stats = run_pipeline(emb, [version], judge_refiner(settings), simulate=False, progress=step)
        bar.close()
        out(f"Replayed from offset 0 under evaluator {version}: {stats.run.produced} new events.")
        _print_verdicts_by_version(emb.warehouse)
    return 0


def _print_verdicts_by_version(wh: Any) -> None:
    rows = wh.query(
        "SELECT evaluator_version, countIf(status = 'PASSED') AS passed, countIf(status = 'FAILED') AS failed, "
        f"countIf(status = 'ERRORED') AS errored FROM {qualified(wh, 'v_verdicts_by_evaluator')} "
        "GROUP BY evaluator_version "
        "ORDER BY evaluator_version"
    ).rows
    out("Verdicts by evaluator version (earlier versions stay):")
    out(table(["evaluator_version", "passed", "failed", "errored"], [list(r) for r in rows]))


def sql(args: argparse.Namespace) -> int:
    """A person's query, read-only and under limits (consumers/clickhouse/read_only.py), after projecting
    anything new."""
    from consumers.clickhouse.read_only import QueryLimits

    try:
        limits = QueryLimits(args.timeout, args.max_rows, args.max_bytes)
    except ValueError:
        raise CliError("--timeout, --max-rows and --max-bytes must be positive") from None
    settings = load_settings()
    bootstrap = _kafka(args, settings)
    if bootstrap:
        from agenttwin.kafka_cli import naming_for, sync_warehouse_from_kafka

        with _kafka_warehouse(args, settings) as wh:
            sync_warehouse_from_kafka(bootstrap, wh, naming=naming_for(args, settings))  # project anything new first
            result = wh.read_only_query(args.query, limits)
    else:
        result = _embedded_query(args, settings, limits)
    out(render_rows(list(result.columns), [list(r) for r in result.rows], args.format))
    return 0


def render_rows(columns: list[str], rows: list[list[Any]], fmt: str) -> str:
    """Query rows as a table, JSON (one object per row) or CSV; every ClickHouse type renders (cells.py)."""
    if fmt == "json":
        return to_json([dict(zip(columns, (json_value(v) for v in row), strict=True)) for row in rows])
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([text_cell(v) for v in row] for row in rows)
        return buf.getvalue().rstrip("\n")
    return table(columns, [[text_cell(v) for v in row] for row in rows], max_width=120)


def rebuild(args: argparse.Namespace) -> int:
    """Drop the projections and project every topic again from offset 0 into the same warehouse."""
    from consumers.projections import TABLE_BY_EVENT, snapshot

    settings = load_settings()
    bootstrap = _kafka(args, settings)
    if bootstrap:
        from agenttwin.kafka_cli import naming_for, rebuild_from_kafka

        with _kafka_warehouse(args, settings) as wh:
            rows = rebuild_from_kafka(bootstrap, wh, naming=naming_for(args, settings))
            counts = {t: len(r) for t, r in snapshot(wh).items()}
            where = f"{bootstrap} into {wh.database}"
    else:
        from consumers.embedded_sink import rebuild as rebuild_embedded

        _, emb = _open(args)
        with emb:
            rows = rebuild_embedded(emb.runtime, emb.warehouse).rows
            counts = {t: len(r) for t, r in snapshot(emb.warehouse).items()}
            where = f"{emb.runtime.data_dir / 'topics-log'} into {emb.warehouse.database}"
    out(f"Rebuilt the projections from offset 0 of the topics ({where}): {rows} rows projected.")
    out(table(["table", "rows"], [[t, counts[t]] for t in sorted(TABLE_BY_EVENT.values())]))
    return 0


def _embedded_query(args: argparse.Namespace, settings: Settings, limits: Any) -> Any:
    """Query the projections of the embedded log as a reader, whether or not a writer runs: the log is
    opened read-only (no lock, nothing moved or cut) and projected into a reader's own copy
    (consumers/reader_sink.py), so a query of any length never keeps `ingest` or `demo` from starting."""
    from consumers.reader_sink import ReadersBusy, reader_warehouse

    try:
        with reader_warehouse(_data_dir_of(args, settings), settings.clickhouse_url) as warehouse:
            return warehouse.read_only_query(args.query, limits)
    except ReadersBusy as exc:
        raise CliError(str(exc)) from None


def events_tail(args: argparse.Namespace) -> int:
    if args.topic not in TOPIC_BY_NAME:
        raise CliError(f"unknown topic {args.topic!r}; topics: {', '.join(sorted(TOPIC_BY_NAME))}")
    from streams.log_reader import ReadOnlyLog

    root = _data_dir_of(args, load_settings())
    if not (root / "topics-log").is_dir():
        return 0
    with ReadOnlyLog(root) as reader:  # a reader: no lock, so it runs beside whatever writes the directory
        log = reader.log
        if args.topic not in log.topics():
            return 0
        end = log.end_offset(args.topic)
        start = 0 if args.from_beginning or args.limit is None else max(0, end - args.limit)
        for record in log.read(args.topic, start, max_records=args.limit):
            try:
                event = reader.decode(record)
            except Exception as exc:  # show undecodable records instead of stopping the tail
                out(f"{record.offset}\tUNDECODABLE\t{exc}")
                continue
            if args.json:
                data = {k: _jsonable(v) for k, v in event.to_record().items()}
                out(json.dumps({"offset": record.offset, **data}, sort_keys=True, ensure_ascii=False))
            else:
                out(f"{record.offset}\t{event.event_type}\tkey={record.key}\t{_summary(event.to_record())}")
    return 0


def export_topic(args: argparse.Namespace) -> int:
    """`agenttwin export TOPIC --format avro|parquet|jsonl`: typed records of one event type of a topic."""
    from consumers.export import ExportError, event_type_for, export

    topic = TOPIC_BY_NAME.get(args.topic)
    if topic is None:
        raise CliError(f"unknown topic {args.topic!r}; topics: {', '.join(sorted(TOPIC_BY_NAME))}")
    try:
        event_type = event_type_for(topic, args.event)
    except ExportError as exc:
        raise CliError(str(exc)) from None
    suffix = f"-{event_type.__name__}" if args.event else ""
    target = Path(args.output or f"{topic.name}{suffix}.{args.format}").expanduser()
    settings = load_settings()
    bootstrap = _kafka(args, settings)
    if bootstrap:
        from agenttwin.kafka_cli import naming_for
        from streams.kafka.codec import KafkaCodec
        from streams.kafka.reading import read_all

        naming = naming_for(args, settings)
        events = read_all(bootstrap, naming, [topic.name])
        schemas = KafkaCodec(naming).schemas
        n = export(events, event_type, args.format, target, schemas)
    else:
        from streams.log_reader import ReadOnlyLog

        root = _data_dir_of(args, settings)
        with ReadOnlyLog(root) as reader:  # a reader: no lock, nothing moved or cut
            n = export(reader.read_events(topic.name), event_type, args.format, target, reader.schemas)
    out(f"{n} {event_type.__name__} event(s) of {topic.name} written to {target} ({args.format})")
    return 0


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _summary(record: dict[str, Any]) -> str:
    skip = {"event_id", "event_type", "occurred_at", "correlation_id", "tenant"}
    parts = []
    for k, v in record.items():
        if k in skip or k.endswith("_json") or v is None:
            continue
        text = str(v)
        parts.append(f"{k}={text if len(text) <= 40 else text[:39] + '…'}")
    return " ".join(parts[:8])


def review(args: argparse.Namespace) -> int:
    """Record a person's override of one expectation on one side, then re-compare that case."""
    from datetime import UTC, datetime

    from evaluation.review import Review, ReviewError
    from streams import ids
    from streams.events import CaseVerdicted, HumanReviewed

    version = _version(args.evaluator_version)
    side = args.side.upper()
    created_at = datetime.now(UTC)  # a person's act: its time is when it happened
    try:
        Review(side, args.expectation, args.status.upper(), args.note, args.reviewer, created_at, args.scenario)
    except ReviewError as exc:
        raise CliError(str(exc)) from None
    settings, emb = _open(args)
    with emb:
        verdicts = [
            e
            for e in emb.runtime.read_events("verdicts")
            if isinstance(e, CaseVerdicted)
            and (e.evaluation_id, e.scenario_name, e.side, e.evaluator_version)
            == (args.evaluation_id, args.scenario, side, version)
        ]
        if not verdicts:
            raise CliError(
                f"no {side.lower()} verdict of scenario {args.scenario!r} in evaluation {args.evaluation_id!r}"
                f" under evaluator {version}"
            )
        known = {r["expectation"]["id"] for r in json.loads(verdicts[0].graded_json)["results"]}
        if args.expectation not in known:
            raise CliError(
                f"no expectation {args.expectation!r} in that case; expectations: {', '.join(sorted(known))}"
            )
        event = HumanReviewed(
            event_id=ids.event_id(
                "HumanReviewed", args.evaluation_id, args.scenario, side, args.expectation, created_at
            ),
            occurred_at=created_at,
            correlation_id=args.evaluation_id,
            review_id=ids.event_id("review", args.evaluation_id, args.scenario, side, args.expectation, created_at),
            evaluation_id=args.evaluation_id,
            scenario_name=args.scenario,
            side=side,
            expectation_id=args.expectation,
            status=args.status.upper(),
            note=args.note,
            reviewer=args.reviewer,
            created_at=created_at,
        )
        emb.runtime.publish([event])
        run_pipeline(emb, [version], judge_refiner(settings), simulate=False)
        row = emb.warehouse.query(
            f"SELECT classification, reason FROM {qualified(emb.warehouse, 'v_comparisons')} "
            f"WHERE evaluation_id = {lit(args.evaluation_id)} AND scenario_name = {lit(args.scenario)} "
            f"AND evaluator_version = {lit(version)}"
        ).rows
    out(f"Review saved: {side.lower()} {args.expectation} -> {args.status.upper()} ({args.reviewer}: {args.note})")
    if row:
        out(f"The case is now {row[0][0]}: {row[0][1]}")
    return 0

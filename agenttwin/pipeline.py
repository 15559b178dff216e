"""Wiring of the embedded pipeline for the CLI: requests in, processors, the ClickHouse sink, reports out."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agenttwin.runs import load_world, plan_evaluation
from agenttwin.settings import Settings
from consumers.clickhouse import Warehouse, open_warehouse
from consumers.embedded_sink import SinkStats, sync
from evaluation.judges.cache import VerdictCache
from evaluation.judges.settings import judge_from_settings
from evaluation.pairing import BASELINE, CANDIDATE
from evaluation.results import GradedCase
from evaluation.semantic import judge_case
from evaluation.summary import EvaluationReport, build_report
from evaluation.versions import evaluator_set
from streams import ids
from streams.convert import graded_from_verdict
from streams.embedded import DecodeError, EmbeddedRuntime, Progress, RunStats
from streams.events import CaseVerdicted, EvaluationRequested, Event, PairPlanned
from streams.log_reader import adopt_dead_letters
from streams.processors import (
    Comparator,
    Grader,
    OutcomeJoin,
    Planner,
    Processor,
    Simulator,
    SubjectJoin,
    VersionTally,
    VersionWatch,
)
from twin_engine.canonical import canonical_json

Refine = Callable[[GradedCase], GradedCase]


@dataclass
class Embedded:
    runtime: EmbeddedRuntime
    warehouse: Warehouse

    def close(self) -> None:
        self.warehouse.close()
        self.runtime.close()

    def __enter__(self) -> Embedded:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_embedded(settings: Settings, data_dir: Path | None = None, *, checkpoints: bool = True) -> Embedded:
    """The embedded runtime and its warehouse; `checkpoints=False` rebuilds stateful processors from offset 0."""
    root = (data_dir or settings.resolved_data_dir).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    runtime = EmbeddedRuntime(root, checkpoints=checkpoints)
    try:
        adopt_dead_letters(runtime)  # dead letters of consumers that ran beside an earlier writer
        warehouse = open_warehouse(settings.clickhouse_url, root)
    except BaseException:
        runtime.close()
        raise
    return Embedded(runtime, warehouse)


def evaluation_request(
    baseline: str,
    candidate: str,
    *,
    suite: Sequence[str],
    twin: str | None,
    seed: int | None,
    evaluation_id: str | None,
    evaluator_version: str,
    trials: int = 1,
) -> EvaluationRequested:
    """The request event: it carries the twin and scenario documents, so a replay never rereads files."""
    evaluator_set(evaluator_version)
    world_twin, scenarios = load_world(suite, twin)
    plan = plan_evaluation(
        baseline,
        candidate,
        twin=world_twin,
        scenarios=scenarios,
        seed=seed,
        evaluation_id=evaluation_id,
        trials=trials,
    )
    return EvaluationRequested(
        event_id=ids.event_id("EvaluationRequested", plan.evaluation_id, plan.request_hash),
        occurred_at=ids.PINNED_NOW,
        correlation_id=plan.evaluation_id,
        evaluation_id=plan.evaluation_id,
        baseline_agent=baseline,
        candidate_agent=candidate,
        seed=seed,
        evaluator_version=evaluator_version,
        twin_json=canonical_json(world_twin.definition),
        scenarios_json=canonical_json([dict(s.raw) for s in scenarios]),
        trials=trials,
    )


def judge_refiner(settings: Settings) -> Refine:
    """The configured semantic judge, with one budget and one cache for this process's run."""
    judge = judge_from_settings(settings.judge_settings())
    budget, cache = settings.judge_settings().budget(), VerdictCache()

    def refine(graded: GradedCase) -> GradedCase:
        return judge_case(graded, judge, budget=budget, cache=cache)

    return refine


def processors(
    versions: Sequence[str], refine: Refine | None, *, simulate: bool = True, concurrency: int = 1
) -> list[Processor]:
    out: list[Processor] = [Planner(), Simulator(concurrency)] if simulate else []
    out += [Grader(v, refine) for v in versions]
    out.append(Comparator())  # one comparator for every version on the topic
    out += [SubjectJoin(), OutcomeJoin()]  # the subject join feeds the outcome join verifications by subject
    out += [VersionTally(), VersionWatch()]  # production traces per agent version (docs/guides/versions.md)
    return out


@dataclass
class PipelineStats:
    run: RunStats
    sink: SinkStats


def run_pipeline(
    emb: Embedded,
    versions: Sequence[str],
    refine: Refine | None,
    *,
    simulate: bool = True,
    progress: Progress | None = None,
    concurrency: int = 1,
) -> PipelineStats:
    steps = processors(versions, refine, simulate=simulate, concurrency=concurrency)
    try:
        stats = emb.runtime.run(steps, progress=progress)
    finally:
        for step in steps:
            step.close()
    return PipelineStats(stats, sync(emb.runtime, emb.warehouse))


def report_from_events(events: Sequence[Event], evaluation_id: str, evaluator_version: str) -> EvaluationReport:
    """The comparison document of an evaluation, rebuilt from its PairPlanned and verdict events."""
    pair = next((e for e in events if isinstance(e, PairPlanned) and e.evaluation_id == evaluation_id), None)
    if pair is None:
        raise LookupError(f"no planned pair for evaluation {evaluation_id}")
    sides: dict[str, dict[str, GradedCase]] = {BASELINE: {}, CANDIDATE: {}}
    for e in events:
        if (
            isinstance(e, CaseVerdicted)
            and e.evaluation_id == evaluation_id
            and e.evaluator_version == evaluator_version
        ):
            sides[e.side][e.case_id] = graded_from_verdict(e)
    baseline_agent = side_label(sides[BASELINE].values(), pair.baseline_agent)
    candidate_agent = side_label(sides[CANDIDATE].values(), pair.candidate_agent)
    if pair.trials > 1:
        from evaluation.trials import build_trials_report

        return build_trials_report(
            evaluation_id=evaluation_id,
            baseline_agent=baseline_agent,
            candidate_agent=candidate_agent,
            run_seed=pair.run_seed,
            evaluator_version=evaluator_version,
            trials=pair.trials,
            baseline_cases=list(sides[BASELINE].values()),
            candidate_cases=list(sides[CANDIDATE].values()),
            pair_id=pair.pair_id,
        )
    return build_report(
        evaluation_id=evaluation_id,
        baseline_agent=baseline_agent,
        candidate_agent=candidate_agent,
        run_seed=pair.run_seed,
        evaluator_version=evaluator_version,
        baseline_cases=list(sides[BASELINE].values()),
        candidate_cases=list(sides[CANDIDATE].values()),
        pair_id=pair.pair_id,
    )


def side_label(cases: Iterable[GradedCase], spec: str) -> str:
    """The name a side's cases give their agent (an HTTP agent's `name:version`), else its spec."""
    labels = {graded.case.agent for graded in cases}
    return labels.pop() if len(labels) == 1 else spec


def report_for(
    runtime: EmbeddedRuntime, evaluation_id: str, evaluator_version: str, *, since: dict[str, int] | None = None
) -> EvaluationReport:
    """The full comparison document of an evaluation stored in the embedded log.

    Reads only the evaluation's own records (keyed by its id). With `since` (the topics' end offsets before
    the command ran) it first reads only what the command appended; an evaluation that was there before
    (a repeated request adds nothing) is then read from the start."""
    if since is not None:
        events = _keyed_events(runtime, evaluation_id, since)
        pair = next((e for e in events if isinstance(e, PairPlanned) and e.evaluation_id == evaluation_id), None)
        verdicts = sum(1 for e in events if isinstance(e, CaseVerdicted) and e.evaluator_version == evaluator_version)
        if pair is not None and verdicts >= pair.case_count:
            return report_from_events(events, evaluation_id, evaluator_version)
    return report_from_events(_keyed_events(runtime, evaluation_id, {}), evaluation_id, evaluator_version)


def _keyed_events(runtime: EmbeddedRuntime, key: str, since: dict[str, int]) -> list[Event]:
    """Events of `evaluations` and `verdicts` whose record key is `key` (decoded only when it is)."""
    out: list[Event] = []
    for topic in ("evaluations", "verdicts"):
        if topic not in runtime.log.topics():
            continue
        for record in runtime.log.read(topic, since.get(topic, 0)):
            if record.key == key:
                try:
                    out.append(runtime.decode(record))
                except DecodeError:
                    continue  # dead-lettered by the processors; never part of a report
    return out

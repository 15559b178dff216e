"""The CLI's Kafka side: `agenttwin worker ...` and the `--kafka` paths of evaluate / demo / replay / sql.

cli.py calls `add_worker_parser(subparsers)`; commands call `evaluate_on_kafka`, `replay_on_kafka`,
`sync_warehouse_from_kafka` and `report_from_kafka`. Workers of one process share one asyncio loop
(faust apps) and threads (the transactional planner and the ClickHouse sink).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agenttwin.errors import CliError
from agenttwin.kafka_args import ALL_KINDS, add_naming_args, add_worker_parser  # noqa: F401 - re-exported
from agenttwin.pipeline import Refine, judge_refiner, report_from_events
from agenttwin.settings import Settings, load_settings
from consumers.clickhouse import Warehouse, open_warehouse
from evaluation.claim_model import claim_classifier
from evaluation.summary import EvaluationReport
from evaluation.versions import DEFAULT_EVALUATOR_SET, evaluator_set
from streams.events import CaseVerdicted, ComparisonMade, EvaluationRequested, Event, PairPlanned
from streams.gc_policy import long_running_gc
from streams.kafka.batch_worker import BatchWorker
from streams.kafka.clients import ensure_topics
from streams.kafka.faust_worker import FaustWorker
from streams.kafka.naming import Naming
from streams.kafka.naming_defaults import CONFLUENT_WIRE
from streams.kafka.planner_loop import PlannerLoop
from streams.kafka.publisher import KafkaPublisher
from streams.kafka.reading import TopicTail, group_lag, read_all
from streams.kafka.runner import WorkerGroup
from streams.kafka.sink_loop import SinkLoop
from streams.kafka.worker import Worker
from streams.processors import Comparator, Grader, OutcomeJoin, Simulator, SubjectJoin, VersionTally, VersionWatch
from streams.topics import ALL_TOPICS

DEFAULT_TIMEOUT_S = 300.0
IDLE_S = 1.5
LAG_SETTLE_S = 30.0
log = logging.getLogger(__name__)


def resolve_bootstrap(flag: str | None, settings: Settings) -> str:
    """--kafka, else KAFKA_BOOTSTRAP_SERVERS; neither is a usage error."""
    bootstrap = (flag or settings.kafka_bootstrap_servers or "").strip()
    if not bootstrap:
        raise CliError("no Kafka cluster: pass --kafka HOST:PORT or set KAFKA_BOOTSTRAP_SERVERS")
    return bootstrap


_REACHED_REGISTRIES: set[str] = set()


def naming_for(args: argparse.Namespace, settings: Settings) -> Naming:
    """The Naming of a Kafka command from its flags and the environment; bad values are usage errors, and
    a schema registry that does not answer is one line naming it (checked once per process, in bounded time)."""
    try:
        naming = settings.naming(
            getattr(args, "topic_prefix", None), getattr(args, "wire", None), getattr(args, "schema_registry", None)
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None
    url = naming.wire.registry_url
    if naming.wire.mode == CONFLUENT_WIRE and url and url not in _REACHED_REGISTRIES:
        from streams.registry import SchemaRegistry

        SchemaRegistry(url).check()  # RegistryError: one line, exit 2
        _REACHED_REGISTRIES.add(url)
    return naming


def kafka_data_dir(settings: Settings) -> Path:
    """Local files of the Kafka workers: faust's, and the batch worker's store files (caches of the changelogs)."""
    return settings.resolved_data_dir / "kafka"


def build_workers(
    kinds: Sequence[str],
    bootstrap: str,
    *,
    naming: Naming,
    data_dir: Path,
    versions: Sequence[str],
    refine: Refine | None,
    warehouse: Warehouse | None = None,
) -> list[Worker]:
    """The workers of `kinds` (see WORKER_KINDS; not 'alerts'), graders one per version."""
    for v in versions:
        evaluator_set(v)
    workers: list[Worker] = []
    for kind in ALL_KINDS if "all" in kinds else kinds:
        if kind == "planner":
            workers.append(PlannerLoop(bootstrap, naming))
        elif kind == "simulator":
            workers.append(FaustWorker(Simulator(), bootstrap, naming, data_dir))
        elif kind == "grader":
            workers += [FaustWorker(Grader(v, refine), bootstrap, naming, data_dir) for v in versions]
        elif kind == "comparator":
            workers.append(FaustWorker(Comparator(), bootstrap, naming, data_dir))  # every version, one group
        elif kind == "subject-join":
            workers.append(FaustWorker(SubjectJoin(), bootstrap, naming, data_dir))
        elif kind == "outcome-join":
            # a batch at a time through confluent-kafka: docs/guides/kafka-workers.md says why
            workers.append(BatchWorker(OutcomeJoin(classifier=claim_classifier()), bootstrap, naming, data_dir))
        elif kind == "version-tally":
            workers.append(FaustWorker(VersionTally(), bootstrap, naming, data_dir))
        elif kind == "version-watch":
            workers.append(FaustWorker(VersionWatch(), bootstrap, naming, data_dir))
        elif kind == "sink":
            if warehouse is None:
                raise ValueError("the sink worker needs a warehouse")
            workers.append(SinkLoop(bootstrap, naming, warehouse))
        else:
            raise ValueError(f"unknown worker kind {kind!r}")
    return workers


# --- `agenttwin worker` ---------------------------------------------------------------------------


def worker_command(args: argparse.Namespace) -> int:
    settings = load_settings()
    bootstrap = resolve_bootstrap(args.kafka, settings)
    naming = naming_for(args, settings)
    versions = args.evaluator_versions or [DEFAULT_EVALUATOR_SET]
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    ensure_topics(bootstrap, naming)
    if args.kind == "alerts":
        from consumers.alerts import tail_kafka

        tail_kafka(bootstrap, print, naming=naming)
        return 0
    kinds = ALL_KINDS if args.kind == "all" else (args.kind,)
    warehouse = None
    if "sink" in kinds:
        warehouse = open_warehouse(settings.clickhouse_url, settings.resolved_data_dir)
    try:
        refine = judge_refiner(settings) if "grader" in kinds else None
        workers = build_workers(
            kinds,
            bootstrap,
            naming=naming,
            data_dir=kafka_data_dir(settings),
            versions=versions,
            refine=refine,
            warehouse=warehouse,
        )
        with long_running_gc():  # a stateful worker keeps a large state for as long as it runs
            asyncio.run(_serve(workers))
    finally:
        if warehouse is not None:
            warehouse.close()
    return 0


async def _serve(workers: Sequence[Worker]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with WorkerGroup(workers) as group:
        print(f"agenttwin worker: running {', '.join(w.name for w in workers)}", file=sys.stderr, flush=True)
        await group.run_until_stopped(stop)


# --- evaluate / replay / sink on Kafka ----------------------------------------------------------


def report_from_kafka(
    bootstrap: str, evaluation_id: str, evaluator_version: str, *, naming: Naming | None = None
) -> EvaluationReport:
    """Like agenttwin.pipeline.report_for, from the `evaluations` and `verdicts` topics."""
    events = read_all(bootstrap, naming or Naming(), ["evaluations", "verdicts"])
    return report_from_events(events, evaluation_id, evaluator_version)


@dataclass
class _Completion:
    """Tracks, from the topics, whether every comparison of some evaluations exists."""

    tail: TopicTail
    evaluation_ids: set[str]
    versions: tuple[str, ...]

    def __post_init__(self) -> None:
        self.scenarios: dict[str, set[str]] = {}
        self.compared: set[tuple[str, str, str]] = set()

    def done(self) -> bool:
        for e in self.tail.read_new():
            if isinstance(e, PairPlanned) and e.evaluation_id in self.evaluation_ids:
                self.scenarios[e.evaluation_id] = set(e.scenario_names)
            elif isinstance(e, ComparisonMade) and e.evaluation_id in self.evaluation_ids:
                self.compared.add((e.evaluation_id, e.evaluator_version, e.scenario_name))
        return all(
            ev in self.scenarios and all((ev, v, s) in self.compared for v in self.versions for s in self.scenarios[ev])
            for ev in self.evaluation_ids
        )


async def _evaluate(
    bootstrap: str,
    requests: Sequence[EvaluationRequested],
    versions: tuple[str, ...],
    workers: Sequence[Worker],
    naming: Naming,
    timeout_s: float,
) -> list[Event]:
    with TopicTail(bootstrap, naming, ["evaluations", "comparisons"]) as tail:
        completion = _Completion(tail, {r.evaluation_id for r in requests}, versions)
        async with WorkerGroup(workers) as group:
            with KafkaPublisher(bootstrap, naming) as publisher:
                await asyncio.to_thread(publisher.publish, requests)
            await group.wait_for(completion.done, timeout_s=timeout_s, what="all comparisons")
            if workers:
                await _settle(group, workers, timeout_s, bootstrap, naming)
    return read_all(bootstrap, naming, ["evaluations", "verdicts"])


async def _settle(
    group: WorkerGroup, workers: Sequence[Worker], timeout_s: float, bootstrap: str, naming: Naming
) -> None:
    """Let trailing work (alerts, the sink) finish: every worker idle, the sink at the end of its topics and
    every group of this process with lag 0 (committed past the last transaction markers too)."""
    sinks = [w for w in workers if isinstance(w, SinkLoop)]
    while True:
        await group.wait_idle(idle_s=IDLE_S, timeout_s=timeout_s)
        if all(s.caught_up for s in sinks):
            break
        await asyncio.sleep(0.2)
    groups = worker_inputs(workers)
    try:
        await group.wait_for(
            lambda: not any(group_lag(bootstrap, naming, groups).values()),
            timeout_s=min(timeout_s, LAG_SETTLE_S),
            what="every group at lag 0",
        )
    except TimeoutError:
        log.warning("some groups still show lag: %s", group_lag(bootstrap, naming, groups))


def worker_inputs(workers: Sequence[Worker]) -> dict[str, tuple[str, ...]]:
    """Logical consumer group -> the logical topics it reads, for the workers given."""
    groups: dict[str, tuple[str, ...]] = {}
    for w in workers:
        if isinstance(w, FaustWorker | BatchWorker):
            groups[w.processor.name] = w.processor.inputs
        elif isinstance(w, PlannerLoop):
            groups[w.planner.name] = w.planner.inputs
        elif isinstance(w, SinkLoop):
            groups[w.group_name] = tuple(t.name for t in ALL_TOPICS)  # one group per warehouse
    return groups


def evaluate_on_kafka(
    bootstrap: str,
    request: EvaluationRequested | Sequence[EvaluationRequested],
    versions: Sequence[str] | None = None,
    *,
    local_workers: bool,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    settings: Settings | None = None,
    warehouse: Warehouse | None = None,
    naming: Naming | None = None,
    refine: Refine | None = None,
) -> EvaluationReport | list[EvaluationReport]:
    """Publish evaluation request(s) and wait until every comparison (per version) is on `comparisons`.

    local_workers=True runs all processors in this process (plus the sink into `warehouse` if given)
    and returns once they are idle; False waits for `agenttwin worker` processes to do the work. The
    report (one per request, in order; a single request gives a single report) is rebuilt from the
    `verdicts` topic for the request's evaluator version.
    """
    settings = settings or load_settings()
    naming = naming or Naming()
    requests = [request] if isinstance(request, EvaluationRequested) else list(request)
    all_versions = tuple(dict.fromkeys([*(versions or ()), *(r.evaluator_version for r in requests)]))
    ensure_topics(bootstrap, naming)
    workers: list[Worker] = []
    if local_workers:
        kinds = ALL_KINDS if warehouse is not None else tuple(k for k in ALL_KINDS if k != "sink")
        workers = build_workers(
            kinds,
            bootstrap,
            naming=naming,
            data_dir=kafka_data_dir(settings),
            versions=all_versions,
            refine=refine if refine is not None else judge_refiner(settings),
            warehouse=warehouse,
        )
    events = asyncio.run(_evaluate(bootstrap, requests, all_versions, workers, naming, timeout_s))
    reports = [report_from_events(events, r.evaluation_id, r.evaluator_version) for r in requests]
    return reports[0] if isinstance(request, EvaluationRequested) else reports


@dataclass(frozen=True)
class ReplayResult:
    evaluator_version: str
    verdicts: int
    comparisons: int


def replay_on_kafka(
    bootstrap: str,
    version: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    settings: Settings | None = None,
    warehouse: Warehouse | None = None,
    naming: Naming | None = None,
    refine: Refine | None = None,
) -> ReplayResult:
    """Re-grade everything on the topics under `version`: grader-<version> starts as a new consumer group
    from offset 0 and runs until its group has no lag; the comparator and the outcome join (one group each
    for all versions) and, if a warehouse is given, the sink resume and take the new events in.
    The old version's verdicts stay; the new ones land beside them."""
    settings = settings or load_settings()
    naming = naming or Naming()
    ensure_topics(bootstrap, naming)
    # the outcome join is one group for all versions: it resumes where it was and joins the new version's
    # verified outcomes (its contradictions carry the evaluator version)
    kinds: tuple[str, ...] = ("grader", "comparator", "outcome-join")  # the comparator serves every version
    if warehouse is not None:
        kinds += ("sink",)
    workers = build_workers(
        kinds,
        bootstrap,
        naming=naming,
        data_dir=kafka_data_dir(settings),
        versions=(version,),
        refine=refine if refine is not None else judge_refiner(settings),
        warehouse=warehouse,
    )
    asyncio.run(_replay(bootstrap, version, workers, naming, timeout_s))
    events = read_all(bootstrap, naming, ["verdicts", "comparisons"])
    return ReplayResult(
        version,
        sum(1 for e in events if isinstance(e, CaseVerdicted) and e.evaluator_version == version),
        sum(1 for e in events if isinstance(e, ComparisonMade) and e.evaluator_version == version),
    )


async def _replay(bootstrap: str, version: str, workers: Sequence[Worker], naming: Naming, timeout_s: float) -> None:
    stages = (
        {f"grader-{version}": ("cases", "twin-calls")},
        {"comparator": Comparator.inputs, "outcome-join": OutcomeJoin.inputs},
    )
    async with WorkerGroup(workers) as group:
        for stage in stages:  # the comparator's input grows while the grader replays: wait in order
            await group.wait_for(
                lambda stage=stage: not any(group_lag(bootstrap, naming, stage).values()),  # type: ignore[misc]
                timeout_s=timeout_s,
                what=f"{', '.join(stage)} caught up",
            )
        await _settle(group, workers, timeout_s, bootstrap, naming)


def sync_warehouse_from_kafka(
    bootstrap: str, warehouse: Warehouse, *, naming: Naming | None = None, timeout_s: float = DEFAULT_TIMEOUT_S
) -> int:
    """Run the ClickHouse sink until it has read every topic to its end; returns the rows it sent."""
    from consumers.sink import ensure_schema

    naming = naming or Naming()
    ensure_topics(bootstrap, naming)
    ensure_schema(warehouse)  # a table missing under recorded progress stops here, in one line
    sink = SinkLoop(bootstrap, naming, warehouse)

    async def run() -> None:
        async with WorkerGroup([sink]) as group:
            await group.wait_for(lambda: sink.caught_up, timeout_s=timeout_s, poll_s=0.2, what="sink caught up")

    asyncio.run(run())
    return sink.rows


def rebuild_from_kafka(
    bootstrap: str, warehouse: Warehouse, *, naming: Naming | None = None, timeout_s: float = DEFAULT_TIMEOUT_S
) -> int:
    """Drop the warehouse's projections and offsets, then sink every topic from offset 0; returns the rows."""
    from consumers.sink import drop_projections

    drop_projections(warehouse)
    return sync_warehouse_from_kafka(bootstrap, warehouse, naming=naming, timeout_s=timeout_s)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m agenttwin.kafka_cli worker ...`: the worker command without the rest of the CLI."""
    parser = argparse.ArgumentParser(prog="agenttwin")
    add_worker_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except CliError as exc:
        print(f"agenttwin: {exc}", file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())

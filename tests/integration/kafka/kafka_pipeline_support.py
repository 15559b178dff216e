"""Shared by the Kafka runtime tests: the demo requests, the embedded reference tables, a pipeline run
on Kafka that ends when the warehouse holds what the reference holds, and table comparison."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenttwin.kafka_cli import build_workers
from agenttwin.pipeline import evaluation_request, judge_refiner, processors
from agenttwin.settings import Settings
from consumers.clickhouse import ChdbWarehouse, Warehouse
from consumers.embedded_sink import sync
from consumers.projections import TABLE_BY_EVENT
from streams.embedded import EmbeddedRuntime
from streams.events import EvaluationRequested
from streams.kafka.clients import ensure_topics
from streams.kafka.naming import Naming
from streams.kafka.publisher import KafkaPublisher
from streams.kafka.runner import WorkerGroup
from streams.kafka.sink_loop import SinkLoop
from streams.kafka.worker import Worker
from tests.integration.kafka_broker import unique_name

TABLES = sorted(TABLE_BY_EVENT.values())
COMPARED = [t for t in TABLES if t != "dead_letters"]
PIPELINE_TIMEOUT_S = 90.0
DEMO_PAIRS = (("demo:1.2.4", "demo:1.3.0"), ("demo:1.3.0", "demo:1.3.1"))


def demo_requests(evaluator_version: str = "1.1.0") -> list[EvaluationRequested]:
    return [
        evaluation_request(
            baseline,
            candidate,
            suite=["demo"],
            twin=None,
            seed=42,
            evaluation_id=None,
            evaluator_version=evaluator_version,
        )
        for baseline, candidate in DEMO_PAIRS
    ]


def table_rows(warehouse: Warehouse, table: str) -> list[tuple[Any, ...]]:
    return list(warehouse.query(f"SELECT * FROM {table} FINAL ORDER BY ALL").rows)


def table_counts(warehouse: Warehouse, tables: Sequence[str] = TABLES) -> dict[str, int]:
    return {t: int(warehouse.query(f"SELECT count() FROM {t} FINAL").rows[0][0]) for t in tables}


@dataclass(frozen=True)
class Reference:
    versions: tuple[str, ...]
    requests: list[EvaluationRequested]
    rows: dict[str, list[tuple[Any, ...]]]

    @property
    def counts(self) -> dict[str, int]:
        return {t: len(r) for t, r in self.rows.items()}


def embedded_reference(
    chdb_root: Path, data_dir: Path, versions: tuple[str, ...], database: str, request_version: str = "1.1.0"
) -> Reference:
    requests = demo_requests(request_version)
    with EmbeddedRuntime(data_dir) as runtime, ChdbWarehouse(chdb_root, database) as warehouse:
        runtime.publish(requests)
        runtime.run(processors(versions, judge_refiner(Settings())))
        sync(runtime, warehouse)
        return Reference(versions, requests, {t: table_rows(warehouse, t) for t in TABLES})


def differences(expected: Reference, warehouse: Warehouse, tables: Sequence[str] = COMPARED) -> list[str]:
    """Human-readable differences between the reference tables and the warehouse's (empty = identical)."""
    problems: list[str] = []
    for table in tables:
        got = table_rows(warehouse, table)
        want = expected.rows[table]
        if got != want:
            extra = [r for r in got if r not in want][:2]
            missing = [r for r in want if r not in got][:2]
            problems.append(f"{table}: {len(got)} rows vs {len(want)}; extra {extra!r:.600}; missing {missing!r:.600}")
    return problems


def new_naming() -> Naming:
    return Naming(unique_name("kt") + ".")


def warehouse_for(chdb_root: Path, label: str) -> ChdbWarehouse:
    return ChdbWarehouse(chdb_root, unique_name(label).replace("-", "_").replace(".", "_"))


Scenario = Callable[[WorkerGroup, KafkaPublisher], Awaitable[None]]


async def _publish_all(_group: WorkerGroup, publisher: KafkaPublisher, requests: Sequence[EvaluationRequested]) -> None:
    await asyncio.to_thread(publisher.publish, requests)


def run_on_kafka(
    bootstrap: str,
    naming: Naming,
    warehouse: Warehouse,
    expected: Reference,
    data_dir: Path,
    *,
    kinds: Sequence[str] = ("all",),
    scenario: Scenario | None = None,
    extra_workers: Sequence[Worker] = (),
    expected_dead_letters: int = 0,
    timeout_s: float = PIPELINE_TIMEOUT_S,
) -> None:
    """Run workers of `kinds` (+ extra) in this process, play the scenario (default: publish the reference's
    requests), then wait until the warehouse has the reference's row counts and every worker is idle."""
    ensure_topics(bootstrap, naming)
    workers = build_workers(
        kinds,
        bootstrap,
        naming=naming,
        data_dir=data_dir,
        versions=expected.versions,
        refine=judge_refiner(Settings()),
        warehouse=warehouse,
    )
    sinks = [w for w in [*workers, *extra_workers] if isinstance(w, SinkLoop)]
    want = {**expected.counts, "dead_letters": expected_dead_letters}

    def complete() -> bool:
        return table_counts(warehouse) == want and all(s.caught_up for s in sinks)

    async def main() -> None:
        async with WorkerGroup([*workers, *extra_workers]) as group:
            with KafkaPublisher(bootstrap, naming) as publisher:
                if scenario is None:
                    await _publish_all(group, publisher, expected.requests)
                else:
                    await scenario(group, publisher)
            try:
                await group.wait_for(complete, timeout_s=timeout_s, what="reference row counts")
            except TimeoutError as exc:
                raise TimeoutError(f"{exc}: have {table_counts(warehouse)}, want {want}") from None
            await group.wait_idle(idle_s=1.0, timeout_s=timeout_s)

    started = time.monotonic()
    asyncio.run(main())
    print(f"pipeline on Kafka ({naming.prefix}) took {time.monotonic() - started:.1f} s")

"""The airline world through Kafka gives the embedded runtime's ClickHouse tables, row for row."""

from __future__ import annotations

from pathlib import Path

import pytest

from agenttwin.kafka_cli import evaluate_on_kafka
from agenttwin.pipeline import evaluation_request, judge_refiner, processors
from agenttwin.settings import Settings
from agenttwin.worlds.airline import TWIN_FILE
from consumers.clickhouse import ChdbWarehouse
from consumers.embedded_sink import sync
from evaluation.summary import EvaluationReport
from streams.embedded import EmbeddedRuntime
from tests.integration.kafka.kafka_pipeline_support import (
    TABLES,
    Reference,
    differences,
    new_naming,
    table_counts,
    table_rows,
    warehouse_for,
)

VERSION = "1.3.0"  # the set that grades reachesReferenceState


@pytest.mark.kafka
def test_the_airline_world_on_kafka_matches_the_embedded_runtime(
    kafka_bootstrap: str, chdb_root: Path, tmp_path: Path
) -> None:
    requests = [
        evaluation_request(
            "airline:careful",
            "airline:careless",
            suite=["airline"],
            twin=str(TWIN_FILE),
            seed=42,
            evaluation_id=None,
            evaluator_version=VERSION,
        )
    ]
    with EmbeddedRuntime(tmp_path / "embedded") as runtime, ChdbWarehouse(chdb_root, "ref_airline") as embedded:
        runtime.publish(requests)
        runtime.run(processors((VERSION,), judge_refiner(Settings())))
        sync(runtime, embedded)
        reference = Reference((VERSION,), requests, {t: table_rows(embedded, t) for t in TABLES})
    with warehouse_for(chdb_root, "kafka_airline") as warehouse:
        reports = evaluate_on_kafka(
            kafka_bootstrap,
            requests,
            [VERSION],
            local_workers=True,
            timeout_s=180,
            settings=Settings(AGENTTWIN_DATA_DIR=str(tmp_path / "kafka")),
            warehouse=warehouse,
            naming=new_naming(),
        )
        problems = differences(reference, warehouse)
        assert problems == [], "\n".join(problems)
        counts = table_counts(warehouse)
    assert counts["cases"] == 26 and counts["dead_letters"] == 0
    assert isinstance(reports, list)
    summaries = [r.summary.counts_line() for r in reports if isinstance(r, EvaluationReport)]
    assert summaries == ["7 new critical failures · 2 regressed · 4 unchanged"]

"""Conversations on Kafka: the demo-multiturn suite gives the embedded runtime's tables, row for row."""

from __future__ import annotations

from pathlib import Path

import pytest

from agenttwin.kafka_cli import evaluate_on_kafka
from agenttwin.pipeline import evaluation_request, judge_refiner, processors
from agenttwin.settings import Settings
from consumers.clickhouse import ChdbWarehouse
from consumers.embedded_sink import sync
from evaluation.summary import EvaluationReport
from streams.embedded import EmbeddedRuntime
from tests.integration.kafka.kafka_pipeline_support import (
    COMPARED,
    PRODUCTION_ONLY,
    TABLES,
    Reference,
    differences,
    new_naming,
    table_counts,
    table_rows,
    warehouse_for,
)


def multiturn_requests() -> list:
    return [
        evaluation_request(
            "demo:1.2.4",
            "demo:1.3.0",
            suite=["demo-multiturn"],
            twin=None,
            seed=42,
            evaluation_id=None,
            evaluator_version="1.1.0",
        )
    ]


@pytest.mark.kafka
def test_conversations_on_kafka_match_the_embedded_runtime(
    kafka_bootstrap: str, chdb_root: Path, tmp_path: Path
) -> None:
    requests = multiturn_requests()
    with EmbeddedRuntime(tmp_path / "embedded") as runtime, ChdbWarehouse(chdb_root, "ref_multiturn") as warehouse:
        runtime.publish(requests)
        runtime.run(processors(("1.1.0",), judge_refiner(Settings())))
        sync(runtime, warehouse)
        reference = Reference(("1.1.0",), requests, {t: table_rows(warehouse, t) for t in TABLES})
    conversations = [r for r in reference.rows["cases"] if any("first_seq" in str(v) for v in r)]
    assert len(conversations) == 4  # two scenarios, two sides: every case carries its turns

    settings = Settings(AGENTTWIN_DATA_DIR=str(tmp_path / "kafka"))
    with warehouse_for(chdb_root, "kafka_multiturn") as warehouse:
        reports = evaluate_on_kafka(
            kafka_bootstrap,
            requests,
            ["1.1.0"],
            local_workers=True,
            timeout_s=120,
            settings=settings,
            warehouse=warehouse,
            naming=new_naming(),
        )
        problems = differences(reference, warehouse)
        assert problems == [], "\n".join(problems)
        counts = table_counts(warehouse)
    assert counts["dead_letters"] == 0
    quiet = ("reviews", "gate_decisions", *PRODUCTION_ONLY)  # nobody reviewed or gated
    assert all(counts[t] > 0 for t in COMPARED if t not in quiet)
    summaries = [r.summary.counts_line() for r in reports if isinstance(r, EvaluationReport)]
    assert summaries == ["1 new critical failure · 1 regressed"]

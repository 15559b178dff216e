"""The demo through Kafka gives the embedded runtime's ClickHouse tables, row for row, and its reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from agenttwin.kafka_cli import evaluate_on_kafka
from agenttwin.settings import Settings
from evaluation.summary import EvaluationReport
from tests.integration.kafka.kafka_pipeline_support import (
    COMPARED,
    PRODUCTION_ONLY,
    Reference,
    differences,
    new_naming,
    table_counts,
    warehouse_for,
)


@pytest.mark.kafka
def test_demo_on_kafka_matches_the_embedded_runtime(
    kafka_bootstrap: str, chdb_root: Path, reference: Reference, tmp_path: Path
) -> None:
    settings = Settings(AGENTTWIN_DATA_DIR=str(tmp_path))
    with warehouse_for(chdb_root, "kafka_diff") as warehouse:
        reports = evaluate_on_kafka(
            kafka_bootstrap,
            reference.requests,
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
    assert isinstance(reports, list)
    summaries = [r.summary.counts_line() for r in reports if isinstance(r, EvaluationReport)]
    assert summaries == ["2 new critical failures · 1 regressed · 6 unchanged", "3 improved · 6 unchanged"]

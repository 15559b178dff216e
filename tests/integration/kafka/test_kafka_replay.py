"""Replay on Kafka: a new evaluator version re-grades the demo from offset 0, beside the old verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest

from agenttwin.kafka_cli import replay_on_kafka, report_from_kafka
from agenttwin.settings import Settings
from tests.integration.kafka.kafka_pipeline_support import (
    Reference,
    differences,
    embedded_reference,
    new_naming,
    run_on_kafka,
    table_counts,
    warehouse_for,
)


@pytest.mark.kafka
def test_replay_under_a_new_evaluator_version_adds_its_verdicts_beside_the_old(
    kafka_bootstrap: str, chdb_root: Path, reference_two_versions: Reference, tmp_path: Path
) -> None:
    naming = new_naming()
    old_only = embedded_reference(chdb_root, tmp_path / "embedded-old", ("1.0.0",), "ref_old", request_version="1.0.0")
    with warehouse_for(chdb_root, "kafka_replay") as warehouse:
        run_on_kafka(kafka_bootstrap, naming, warehouse, old_only, tmp_path)
        before = table_counts(warehouse)
        result = replay_on_kafka(
            kafka_bootstrap,
            "1.1.0",
            timeout_s=120,
            settings=Settings(AGENTTWIN_DATA_DIR=str(tmp_path)),
            warehouse=warehouse,
            naming=naming,
        )
        problems = differences(reference_two_versions, warehouse)
        assert problems == [], "\n".join(problems)
        versions = warehouse.query(
            "SELECT evaluator_version, count() FROM verdicts FINAL GROUP BY evaluator_version ORDER BY 1"
        ).rows
    assert versions == (("1.0.0", 36), ("1.1.0", 36))
    assert before["verdicts"] == 36
    assert (result.verdicts, result.comparisons) == (36, 18)
    first = reference_two_versions.requests[0].evaluation_id
    old = report_from_kafka(kafka_bootstrap, first, "1.0.0", naming=naming)
    new = report_from_kafka(kafka_bootstrap, first, "1.1.0", naming=naming)
    assert old.evaluator_version == "1.0.0"
    assert new.evaluator_version == "1.1.0"
    assert len(old.to_dict()["cases"]) == len(new.to_dict()["cases"]) == 9

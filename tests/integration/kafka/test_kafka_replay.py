"""Replay on Kafka: a new evaluator version re-grades the demo from offset 0, beside the old verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest

from agenttwin.kafka_cli import replay_on_kafka, report_from_kafka
from agenttwin.settings import Settings
from consumers import sink_progress
from consumers.clickhouse import qualified
from streams.kafka.naming import Naming
from streams.kafka.reading import read_all
from tests.integration.kafka.kafka_pipeline_support import (
    Reference,
    differences,
    embedded_reference,
    new_naming,
    run_on_kafka,
    table_counts,
    warehouse_for,
)
from tests.integration.kafka_tools import describe_groups


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
            f"SELECT evaluator_version, count() FROM {qualified(warehouse, 'verdicts')} FINAL "
            "GROUP BY evaluator_version ORDER BY 1"
        ).rows
        sink_group = f"clickhouse-sink-{sink_progress.warehouse_id(warehouse)}"  # one group per warehouse
    assert versions == (("1.0.0", 36), ("1.1.0", 36))
    assert before["verdicts"] == 36
    assert (result.verdicts, result.comparisons) == (36, 18)
    first = reference_two_versions.requests[0].evaluation_id
    old = report_from_kafka(kafka_bootstrap, first, "1.0.0", naming=naming)
    new = report_from_kafka(kafka_bootstrap, first, "1.1.0", naming=naming)
    assert old.evaluator_version == "1.0.0"
    assert new.evaluator_version == "1.1.0"
    assert len(old.to_dict()["cases"]) == len(new.to_dict()["cases"]) == 9
    _assert_every_group_drained(kafka_bootstrap, naming, sink_group)


def _assert_every_group_drained(bootstrap: str, naming: Naming, sink_group: str) -> None:
    """Kafka's own kafka-consumer-groups --describe: every group of the pipeline has lag 0 on every
    partition it reads, also past the transaction markers on `case-plans` and `evaluations`, and no group
    of either evaluator version shows the other version's events as backlog."""
    groups = ["planner", "simulator", "grader-1.0.0", "grader-1.1.0", "comparator", "outcome-join", sink_group]
    rows = describe_groups(bootstrap, [naming.group(g) for g in groups])
    assert {r.group for r in rows} == {naming.group(g) for g in groups}
    lagging = [r for r in rows if r.lag != 0]
    assert lagging == [], "\n".join(map(str, lagging))
    # the planner's writes are transactions: their markers sit after the last record of each partition
    plans = read_all(bootstrap, naming, ["case-plans"])
    ends = {r.partition: r.end for r in rows if r.group == naming.group("simulator")}
    assert sum(ends.values()) > len(plans) == 36

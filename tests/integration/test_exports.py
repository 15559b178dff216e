"""`agenttwin export`: typed Avro and Parquet files that ClickHouse (chDB's file()) reads back as the
projections hold them, and JSON lines with the same events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agenttwin.cli import main
from consumers.clickhouse import open_warehouse, qualified
from consumers.projections import TABLE_BY_EVENT
from streams.events import DeadLettered, EvaluationRequested, HumanReviewed, PairPlanned
from streams.topics import ALL_TOPICS, events_on


def _cases() -> list[tuple[str, str | None, str]]:
    """(topic, --event or None, projection table) for every event type the demo writes."""
    out = []
    for topic in ALL_TOPICS:
        for event_type in events_on(topic):
            if event_type not in (DeadLettered, HumanReviewed):  # the demo writes none
                several = len(events_on(topic)) > 1
                out.append((topic.name, event_type.__name__ if several else None, TABLE_BY_EVENT[event_type]))
    return out


def test_exports_read_back_in_clickhouse_as_the_projections(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    assert main(["demo", "--data-dir", str(data)]) == 0
    files = tmp_path / "exports"
    cases = _cases()
    assert {EvaluationRequested.__name__, PairPlanned.__name__} <= {event for _, event, _ in cases}
    for topic, event, _table in cases:
        for fmt in ("avro", "parquet", "jsonl"):
            args = [
                "export",
                topic,
                "--format",
                fmt,
                "--data-dir",
                str(data),
                "-o",
                str(files / f"{topic}-{event}.{fmt}"),
            ]
            assert main([*args, *(["--event", event] if event else [])]) == 0
    capsys.readouterr()
    with open_warehouse(None, data) as warehouse:
        compared = 0
        for topic, event, table in cases:
            want = warehouse.query(f"SELECT * FROM {qualified(warehouse, table)} FINAL ORDER BY event_id")
            assert want.rows, table
            for fmt, reader in (("avro", "Avro"), ("parquet", "Parquet")):
                path = files / f"{topic}-{event}.{fmt}"
                got = warehouse.query(f"SELECT * FROM file('{path}', '{reader}') ORDER BY event_id")
                assert got.columns == want.columns, (table, fmt)
                assert got.rows == want.rows, (table, fmt)
                compared += len(got.rows)
            lines = [json.loads(line) for line in (files / f"{topic}-{event}.jsonl").read_text().splitlines()]
            assert sorted(line["event_id"] for line in lines) == [row[0] for row in want.rows]
            assert list(lines[0]) == list(want.columns)
    assert compared > 1000


def test_export_of_a_topic_with_several_event_types_needs_the_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", "evaluations", "--format", "avro", "--data-dir", str(tmp_path)]) == 2
    assert "pass --event TYPE" in capsys.readouterr().err
    assert main(["export", "nope", "--format", "avro", "--data-dir", str(tmp_path)]) == 2
    assert main(["export", "cases", "--format", "avro", "--event", "PairPlanned", "--data-dir", str(tmp_path)]) == 2

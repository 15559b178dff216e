"""`agenttwin export`: typed Avro and Parquet files that ClickHouse (chDB's file()) reads back as the
projections hold them, and JSON lines with the same events."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from agenttwin.cli import main
from consumers.clickhouse import open_warehouse, qualified
from consumers.projections import TABLE_BY_EVENT
from streams.events import DeadLettered, EvaluationRequested, HumanReviewed, PairPlanned
from streams.topics import ALL_TOPICS, events_on

# tables of revised events (ReplacingMergeTree by revision) and the key a revision supersedes within
REVISED = {
    "claims": ("tenant", "trace_id"),
    "version_traces": ("tenant", "trace_id"),
    "version_windows": ("tenant", "agent", "agent_version", "window_start"),
}


def _cases() -> list[tuple[str, str | None, str]]:
    """(topic, --event or None, projection table) for every event type the demo and a production trace write."""
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
    _production_trace_verified_by_subject(data)
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
                source = f"file('{path}', '{reader}')"
                if table in REVISED:  # every revision is an event; the table keeps the latest (FINAL)
                    by = ", ".join(REVISED[table])
                    source = f"(SELECT * FROM {source} ORDER BY revision DESC LIMIT 1 BY {by})"
                got = warehouse.query(f"SELECT * FROM {source} ORDER BY event_id")
                assert got.columns == want.columns, (table, fmt)
                assert got.rows == want.rows, (table, fmt)
                compared += len(got.rows)
            lines = [json.loads(line) for line in (files / f"{topic}-{event}.jsonl").read_text().splitlines()]
            if table in REVISED:
                latest: dict[tuple[object, ...], dict[str, object]] = {}
                for line in sorted(lines, key=lambda x: int(x["revision"])):
                    latest[tuple(line[k] for k in REVISED[table])] = line
                assert len(lines) > len(latest)  # revisions were exported, not only the latest
                lines = list(latest.values())
            assert sorted(line["event_id"] for line in lines) == [row[0] for row in want.rows]
            assert list(lines[0]) == list(want.columns)
    assert compared > 1000


def _production_trace_verified_by_subject(data: Path) -> None:
    """What only production traffic writes (subject links and verifications, claims read): a stock trace and a
    verification naming its order, joined and projected like `ingest` and `sql` would."""
    from agenttwin.pipeline import open_embedded
    from agenttwin.settings import Settings
    from consumers.embedded_sink import sync
    from evaluation.version_watch import VersionPolicy
    from producers.production_traffic import canary_events
    from producers.sdk.outcome import subject_outcome_event
    from streams.processors import VersionTally, VersionWatch
    from streams.processors.outcome_join import OutcomeJoin
    from streams.processors.subject_join import SubjectJoin
    from tests.unit.processors.test_stock_claims_and_subjects import AT, stock_trace

    spans, links = stock_trace()
    verified = subject_outcome_event("order:ORD-1001", "FAILURE", True, "external_callback", "2", tenant="acme", at=AT)
    # and a canary of 1.3.0 flagged, then 1.3.1 clearing it (the version watch's events; a quick policy)
    policy = VersionPolicy(alpha=0.3, min_candidate_traces=10, clear_after_traces=60)
    canary = canary_events(300, "1.3.0", seed=1, start=AT, share=0.5)
    fix = canary_events(120, "1.3.1", seed=2, start=AT + timedelta(minutes=10), share=0.5)
    with open_embedded(Settings(), data) as emb:
        emb.runtime.publish([*spans, *links, verified, *canary, *fix])
        emb.runtime.run([SubjectJoin(), OutcomeJoin(), VersionTally(), VersionWatch(policy)])
        sync(emb.runtime, emb.warehouse)


def test_export_of_a_topic_with_several_event_types_needs_the_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", "evaluations", "--format", "avro", "--data-dir", str(tmp_path)]) == 2
    assert "pass --event TYPE" in capsys.readouterr().err
    assert main(["export", "nope", "--format", "avro", "--data-dir", str(tmp_path)]) == 2
    assert main(["export", "cases", "--format", "avro", "--event", "PairPlanned", "--data-dir", str(tmp_path)]) == 2

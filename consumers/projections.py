"""Which table each event type lands in, and its row: the projection contract of the sink.

Columns are exactly the event's Avro fields (schemas/clickhouse/tables.sql is written from the same
.avsc files; a test holds the three in step).
"""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

from schemas import CLICKHOUSE_DIR
from streams.events import (
    CaseFinished,
    CasePlanned,
    CaseVerdicted,
    ClaimRead,
    ComparisonMade,
    ContradictionDetected,
    DeadLettered,
    EvaluationRequested,
    Event,
    ExpectationResulted,
    GateDecided,
    HumanReviewed,
    OutcomeVerified,
    PairPlanned,
    SpanRecorded,
    SubjectLinked,
    SubjectVerified,
    TwinCallRecorded,
)

TABLE_BY_EVENT: dict[type[Event], str] = {
    EvaluationRequested: "evaluation_requests",
    PairPlanned: "pairs",
    CasePlanned: "case_plans",
    CaseFinished: "cases",
    TwinCallRecorded: "twin_calls",
    SpanRecorded: "spans",
    ExpectationResulted: "expectation_results",
    CaseVerdicted: "verdicts",
    OutcomeVerified: "verified_outcomes",
    SubjectLinked: "subject_links",
    SubjectVerified: "subject_verifications",
    ClaimRead: "claims",
    ComparisonMade: "comparisons",
    ContradictionDetected: "contradictions",
    HumanReviewed: "reviews",
    GateDecided: "gate_decisions",
    DeadLettered: "dead_letters",
}
DDL_FILES = ("tables.sql", "views.sql")


def columns_of(event_type: type[Event]) -> list[str]:
    return [f.name for f in dataclasses.fields(event_type)]


def row_of(event: Event) -> list[Any]:
    """The event's values in column order; bytes travel as base64 text."""
    row: list[Any] = []
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        row.append(base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value)
    return row


def ddl() -> str:
    return "\n".join((CLICKHOUSE_DIR / name).read_text(encoding="utf-8") for name in DDL_FILES)


def snapshot(warehouse: Any, tables: list[str] | None = None) -> dict[str, list[tuple[Any, ...]]]:
    """Every projection table's rows after FINAL, in a stable order: what "identical tables" compares."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for table in tables or sorted(TABLE_BY_EVENT.values()):
        result = warehouse.query(f"SELECT * FROM {table} FINAL ORDER BY ALL")
        out[table] = [tuple(row) for row in result.rows]
    return out

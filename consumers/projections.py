"""Which table each event type lands in, and its row: the projection contract of the sink.

Columns are exactly the event's Avro fields (schemas/clickhouse/tables.sql is written from the same
.avsc files; a test holds the three in step).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import re
from typing import Any

from consumers.clickhouse import Warehouse, qualified
from consumers.clickhouse._values import quote_identifier
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
    TraceTallied,
    TwinCallRecorded,
    VersionCleared,
    VersionRegressed,
    VersionWindowed,
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
    TraceTallied: "version_traces",
    VersionWindowed: "version_windows",
    VersionRegressed: "version_regressions",
    VersionCleared: "version_clearances",
}
DDL_FILES = ("tables.sql", "views.sql", "sink.sql")
SINK_TABLES = ("sink_offsets", "sink_events", "sink_identity", "sink_schema")
# `CREATE OR REPLACE VIEW` for a view whose columns changed: an old warehouse gets the new one on its next start
_CREATED = re.compile(r"CREATE (?:OR REPLACE )?(TABLE|VIEW) (?:IF NOT EXISTS )?(\w+)")


def columns_of(event_type: type[Event]) -> list[str]:
    return [f.name for f in dataclasses.fields(event_type)]


def row_of(event: Event) -> list[Any]:
    """The event's values in column order; bytes travel as base64 text."""
    row: list[Any] = []
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        row.append(base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value)
    return row


def ddl_text() -> str:
    """The DDL files as written (unqualified names, readable on their own)."""
    return "\n".join((CLICKHOUSE_DIR / name).read_text(encoding="utf-8") for name in DDL_FILES)


def view_names() -> list[str]:
    return [name for kind, name in _CREATED.findall(ddl_text()) if kind == "VIEW"]


def created_names() -> set[str]:
    """Every table and view the DDL creates."""
    return {name for _kind, name in _CREATED.findall(ddl_text())}


def ddl_digest() -> str:
    """SHA-256 of the DDL as shipped: another digest means another DDL (an upgrade) to apply."""
    return hashlib.sha256(ddl_text().encode()).hexdigest()


def ddl(database: str) -> str:
    """The DDL with every table and view it creates or reads named `database`.`name`: no statement
    depends on a connection's current database (views bind the tables they read when created)."""
    text = ddl_text()
    names = {name for _kind, name in _CREATED.findall(text)}
    quote_identifier(database)

    def qualify(match: re.Match[str]) -> str:
        name = match.group(2)
        return f"{match.group(1)}{quote_identifier(f'{database}.{name}')}" if name in names else match.group(0)

    text = re.sub(r"(CREATE (?:OR REPLACE )?(?:TABLE|VIEW) (?:IF NOT EXISTS )?|ALTER TABLE )(\w+)", qualify, text)
    return re.sub(r"(\b(?:FROM|JOIN)\s+)(\w+)\b", qualify, text)


def snapshot(
    warehouse: Warehouse, tables: list[str] | None = None, *, final: bool = True
) -> dict[str, list[tuple[Any, ...]]]:
    """Every projection table's rows in a stable order, after FINAL (what "identical tables" compares) or
    as stored (final=False: a duplicate row shows)."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for table in tables or sorted(TABLE_BY_EVENT.values()):
        result = warehouse.query(f"SELECT * FROM {qualified(warehouse, table)}{' FINAL' if final else ''} ORDER BY ALL")
        out[table] = [tuple(row) for row in result.rows]
    return out

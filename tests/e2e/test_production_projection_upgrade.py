"""Projections made before production traces were read (spans without span_role, tool_name, ...; verified
outcomes and contradictions without subject) get the new columns in place, and the views over them work."""

from __future__ import annotations

import re
from pathlib import Path

from consumers.clickhouse import Warehouse, qualified
from consumers.projections import ddl

NEW_COLUMNS = {
    "spans": ["span_role", "tool_name", "tool_error", "agent_name", "agent_version"],
    "verified_outcomes": ["subject"],
    "contradictions": ["subject", "claim_inferred_by"],
}


def _old_tables(database: str) -> str:
    """The tables as the previous version made the three: without the new columns and upgrades."""
    text = ddl(database).split("-- Upgrades of projections")[0]
    for table, columns in NEW_COLUMNS.items():
        start = text.index(f"CREATE TABLE IF NOT EXISTS `{database}`.`{table}`\n")
        end = text.index("ENGINE", start)
        block = text[start:end]
        for column in columns:
            block = block.replace(f",\n    `{column}` Nullable(String)", "")
        text = text[:start] + block + text[end:]
    return text


def _columns(warehouse: Warehouse, name: str) -> list[str]:
    return [c for c, *_ in warehouse.query(f"DESCRIBE TABLE {qualified(warehouse, name)}").rows]


def test_old_projections_get_the_production_columns_in_place(tmp_path: Path) -> None:
    from agenttwin.pipeline import open_embedded
    from agenttwin.settings import Settings
    from consumers.sink import ensure_schema

    with open_embedded(Settings(), tmp_path) as emb:
        wh = emb.warehouse
        for view in ("v_contradictions", "v_unmatched_outcomes"):
            wh.execute(f"DROP VIEW IF EXISTS {qualified(wh, view)}")
        for table in NEW_COLUMNS:
            wh.execute(f"DROP TABLE IF EXISTS {qualified(wh, table)} SYNC")
        old = _old_tables(wh.database)
        wh.execute(old)
        # the previous version's view, without the new columns
        wh.execute(
            f"CREATE VIEW {qualified(wh, 'v_contradictions')} AS SELECT alert_id, tool, trace_id "
            f"FROM {qualified(wh, 'contradictions')} FINAL WHERE kind = 'contradiction'"
        )
        for table, columns in NEW_COLUMNS.items():
            assert not set(columns) & set(_columns(wh, table)), table
        ensure_schema(wh)
        for table, columns in NEW_COLUMNS.items():
            assert set(columns) <= set(_columns(wh, table)), table
        for view in ("v_contradictions", "v_unmatched_outcomes", "v_production_traces", "v_production_tool_stats"):
            assert wh.query(f"SELECT * FROM {qualified(wh, view)}").rows == ()
        assert {"subject", "claim_inferred_by"} <= set(_columns(wh, "v_contradictions"))  # replaced in place
    assert re.search(r"`span_role`", old) is None

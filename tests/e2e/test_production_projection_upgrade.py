"""Projections made before production traces were read (spans without span_role, tool_name, ...; verified
outcomes and contradictions without subject) get the new columns in place, and the views over them work."""

from __future__ import annotations

import re
from pathlib import Path

from consumers.projections import DDL_FILES
from schemas import CLICKHOUSE_DIR

NEW_COLUMNS = {
    "spans": ["span_role", "tool_name", "tool_error", "agent_name", "agent_version"],
    "verified_outcomes": ["subject"],
    "contradictions": ["subject", "claim_inferred_by"],
}


def _old_tables() -> str:
    """tables.sql as the previous version made the three tables: without the new columns and upgrades."""
    text = (CLICKHOUSE_DIR / DDL_FILES[0]).read_text(encoding="utf-8").split("-- Upgrades of projections")[0]
    for table, columns in NEW_COLUMNS.items():
        start = text.index(f"CREATE TABLE IF NOT EXISTS {table}\n")
        end = text.index("ENGINE", start)
        block = text[start:end]
        for column in columns:
            block = block.replace(f",\n    `{column}` Nullable(String)", "")
        text = text[:start] + block + text[end:]
    return text


def test_old_projections_get_the_production_columns_in_place(tmp_path: Path) -> None:
    from agenttwin.pipeline import open_embedded
    from agenttwin.settings import Settings
    from consumers.sink import ensure_schema

    old = _old_tables()
    with open_embedded(Settings(), tmp_path) as emb:
        emb.warehouse.execute(old)
        for table, columns in NEW_COLUMNS.items():
            described = [c for c, *_ in emb.warehouse.query(f"DESCRIBE TABLE {table}").rows]
            assert not set(columns) & set(described), table
        ensure_schema(emb.warehouse)
        for table, columns in NEW_COLUMNS.items():
            described = [c for c, *_ in emb.warehouse.query(f"DESCRIBE TABLE {table}").rows]
            assert set(columns) <= set(described), table
        for view in ("v_contradictions", "v_unmatched_outcomes", "v_production_traces", "v_production_tool_stats"):
            assert emb.warehouse.query(f"SELECT * FROM {view}").rows == ()
        names = [c for c, *_ in emb.warehouse.query("DESCRIBE TABLE v_contradictions").rows]
        assert {"subject", "claim_inferred_by"} <= set(names)
    assert re.search(r"`span_role`", old) is None

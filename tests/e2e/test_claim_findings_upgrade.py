"""A `cases` projection made before claim findings gets the `claim_findings_json` column in place."""

from __future__ import annotations

from pathlib import Path

from agenttwin.cli import main
from agenttwin.demo import SCENARIO_DIR
from consumers.clickhouse import qualified


def test_cases_from_before_claim_findings_are_upgraded_in_place(tmp_path: Path) -> None:
    from agenttwin.pipeline import open_embedded
    from agenttwin.settings import Settings
    from consumers.projections import ddl

    with open_embedded(Settings(), tmp_path) as emb:
        current = ddl(emb.warehouse.database)
        # as the previous version made it
        old = current.replace("\n    `claim_findings_json` Nullable(String),", "")
        assert old != current
        emb.warehouse.execute(old.split("-- Upgrades of projections")[0])
        cases = qualified(emb.warehouse, "cases")
        assert "claim_findings_json" not in [c for c, *_ in emb.warehouse.query(f"DESCRIBE TABLE {cases}").rows]
    suite = str(SCENARIO_DIR / "refund-happy-path.yaml")
    argv = ["evaluate", "--baseline", "demo:1.2.4", "--candidate", "demo:1.3.1", "--data-dir", str(tmp_path)]
    assert main([*argv, "--suite", suite]) == 0
    with open_embedded(Settings(), tmp_path) as emb:
        rows = emb.warehouse.query(f"SELECT claim_findings_json FROM {qualified(emb.warehouse, 'cases')} FINAL").rows
    assert len(rows) == 2 and all(value is None for (value,) in rows)

"""`agenttwin demo --production` on the embedded runtime: the 1.3.0 canary is flagged live, 1.3.1 replaces it
and the alarm clears; the traces arrive through the SDK and the receiver; the production page and the SQL views
tell the same story."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agenttwin.cli import main
from agenttwin.production_demo import PER_MINUTE
from streams.embedded import EmbeddedRuntime


def test_the_production_story_flags_1_3_0_and_clears_it_with_1_3_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--production", "--data-dir", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    flagged = [i for i, line in enumerate(lines) if "VERSION_REGRESSED" in line and "1.3.0 vs 1.2.4" in line]
    replaced = next(i for i, line in enumerate(lines) if "1.3.1 replaces 1.3.0" in line)
    closed = [i for i, line in enumerate(lines) if "VERSION_CLEARED" in line and "alarm on" in line and "1.3.0" in line]
    assert flagged and closed and max(flagged) < replaced < min(closed)
    assert not any("VERSION_REGRESSED" in line and "1.3.1" in line for line in lines)
    assert "1.3.0 flagged, its alarm cleared when 1.3.1 replaced it." in text
    # the traces came through the SDK and the receiver; every customer's order was verified, once
    runtime = EmbeddedRuntime(tmp_path)
    spans = runtime.read_events("spans")
    assert spans and all(s.resource_attributes.get("agenttwin.sdk.name") == "agenttwin-python" for s in spans)
    minutes = int(re.search(r"(\d+) minutes of traffic", text).group(1))  # type: ignore[union-attr]
    verified = runtime.read_events("verified-outcomes")  # by order id, brought to the trace by the subject join
    assert len(verified) == len({v.trace_id for v in verified})
    assert 0.85 * minutes * PER_MINUTE < len(verified) < minutes * PER_MINUTE  # runs that named no order: none
    assert {v.trace_id for v in verified} <= {s.trace_id for s in spans}
    runtime.close()
    page = tmp_path / "production.html"
    assert page.is_file() and "support-refund-agent 1.3.0" in page.read_text()
    assert (
        main(
            [
                "sql",
                "--format",
                "csv",
                "--data-dir",
                str(tmp_path),
                "SELECT candidate_version, state FROM v_version_alarms",
            ]
        )
        == 0
    )
    rows = capsys.readouterr().out.strip().splitlines()
    assert rows and all("1.3.0" in r and "cleared" in r for r in rows[-len(flagged) :])

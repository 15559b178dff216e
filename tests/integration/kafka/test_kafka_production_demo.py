"""`agenttwin demo --production --kafka`: the canary story with the joins and the version watch as faust
workers on a real broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from agenttwin.cli import main
from tests.integration.kafka_broker import unique_name


@pytest.mark.kafka
def test_the_production_story_on_kafka(
    kafka_bootstrap: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["demo", "--production", "--kafka", kafka_bootstrap, "--topic-prefix", unique_name("prod") + "."]
    assert main([*args, "--data-dir", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "VERSION_REGRESSED  [demo-co] support-refund-agent 1.3.0 vs 1.2.4" in text
    assert "1.3.0 flagged, its alarm cleared when 1.3.1 replaced it." in text
    assert not any("VERSION_REGRESSED" in line and "1.3.1" in line for line in text.splitlines())
    assert "support-refund-agent 1.3.0" in (tmp_path / "production.html").read_text()

"""Version alarms where people look: `agenttwin alerts tail` and the webhook show VersionRegressed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from consumers.alerts import tail_embedded
from consumers.webhook import WebhookSender, webhook_embedded
from producers.production_traffic import canary_events
from streams.embedded import EmbeddedRuntime
from streams.events import VersionRegressed
from streams.processors import OutcomeJoin, VersionTally, VersionWatch
from tests.unit.traces.test_traces_alerts import _hook, hook_factory  # noqa: F401 - the fixture

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def flagged(tmp_path: Path) -> EmbeddedRuntime:
    runtime = EmbeddedRuntime(tmp_path, fsync=False)
    runtime.publish(canary_events(700, "1.3.0", seed=9, start=T0))
    runtime.run([OutcomeJoin(), VersionTally(), VersionWatch()])
    return runtime


def test_alerts_tail_prints_the_regression_with_its_contradicted_traces(flagged: EmbeddedRuntime) -> None:
    regressed = [e for e in flagged.read_events("version-alerts") if isinstance(e, VersionRegressed)]
    assert regressed
    lines: list[str] = []
    tail_embedded(flagged.data_dir, lines.append)
    version_lines = [line for line in lines if "VERSION_REGRESSED" in line]
    assert len(version_lines) == len(regressed)
    assert "support-refund-agent 1.3.0 vs 1.2.4" in version_lines[0]
    assert regressed[0].contradicted_traces[0] in version_lines[0]
    # the contradictions are still there, first
    assert "CONTRADICTION" in lines[0]
    flagged.close()


def test_the_webhook_posts_version_alarms_once(flagged: EmbeddedRuntime, hook_factory: list) -> None:  # noqa: F811
    hook = _hook(hook_factory, [])
    sender = WebhookSender(hook.url, sleep=lambda _: None)
    stats = webhook_embedded(flagged, sender)
    sender.close()
    bodies = [b for b in hook.bodies if b.get("event_type") == "VersionRegressed"]
    assert bodies and bodies[0]["candidate_version"] == "1.3.0" and bodies[0]["e_value"] >= bodies[0]["threshold"]
    assert stats.dead_lettered == 0
    assert flagged.log.committed("alerts-webhook", "version-alerts") == sum(
        1 for _ in flagged.log.read("version-alerts")
    )
    assert webhook_embedded(flagged, WebhookSender(hook.url)).delivered == 0  # committed: not re-sent
    flagged.close()


def test_mine_drafts_a_scenario_per_contradicted_trace_of_the_regression(
    flagged: EmbeddedRuntime, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agenttwin.cli import main

    alarms = [e for e in flagged.read_events("version-alerts") if isinstance(e, VersionRegressed)]
    regressed = max(alarms, key=lambda a: (a.detected_at, a.event_id))  # what 'latest' names
    flagged.close()
    target = tmp_path / "drafts"
    assert main(["mine", "--regression", "latest", "--data-dir", str(flagged.data_dir), "-o", str(target)]) == 0
    assert sorted(p.stem for p in target.glob("*.yaml")) == sorted(regressed.contradicted_traces)
    text = (target / f"{regressed.contradicted_traces[0]}.yaml").read_text()
    assert "kind: Scenario" in text and "refund_payment" in text
    assert f"alarm {regressed.alarm_id}" in capsys.readouterr().out
    assert main(["mine", "--regression", "nope", "--data-dir", str(flagged.data_dir), "-o", str(target)]) != 0

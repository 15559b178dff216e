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

"""The version watch in the embedded runtime: production traces in, window rows and alarms out, in SQL too."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from agenttwin.cli import main
from agenttwin.pipeline import Embedded
from consumers.clickhouse import open_warehouse
from consumers.embedded_sink import sync
from producers.production_traffic import canary_events
from streams.embedded import EmbeddedRuntime
from streams.events import (
    ContradictionDetected,
    Event,
    OutcomeVerified,
    SubjectVerified,
    VersionCleared,
    VersionRegressed,
    VersionWindowed,
)
from streams.processors import OutcomeJoin, SubjectJoin, VersionTally, VersionWatch

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)


def traffic(customers: int, canary: str, seed: int = 4) -> list[Event]:
    """Customers one a second, 10 % of them on `canary`, the rest on 1.2.4."""
    return list(canary_events(customers, canary, seed=seed, start=T0))


def _run(data_dir: Path, events: list[Event]) -> EmbeddedRuntime:
    runtime = EmbeddedRuntime(data_dir, fsync=False)
    runtime.publish(events)
    runtime.run([OutcomeJoin(), VersionTally(), VersionWatch()])
    return runtime


@pytest.fixture(scope="module")
def canary_130() -> list[Event]:
    return traffic(1200, "1.3.0")


def test_a_1_3_0_canary_is_flagged_with_its_contradicted_traces(tmp_path: Path, canary_130: list[Event]) -> None:
    runtime = _run(tmp_path, canary_130)
    try:
        alerts = runtime.read_events("version-alerts")
        regressed = [e for e in alerts if isinstance(e, VersionRegressed)]
        assert {(e.baseline_version, e.candidate_version) for e in regressed} == {("1.2.4", "1.3.0")}
        first = regressed[0]
        assert first.metric in ("contradiction_rate", "verified_failure_rate")
        assert first.candidate_rate > first.baseline_rate and first.e_value >= first.threshold
        contradicted = {
            e.trace_id for e in runtime.read_events("contradictions") if isinstance(e, ContradictionDetected)
        }
        assert first.contradicted_traces and set(first.contradicted_traces) <= contradicted
        assert not any(isinstance(e, VersionCleared) for e in alerts)
        # the final window rows count every trace once
        latest = _latest_windows(runtime)
        assert sum(w.traces for w in latest.values()) == 1200
        assert len({w for _, w in latest}) == 20  # 1,200 customers one a second: 20 one-minute windows
        assert sum(w.contradictions for w in latest.values()) == len(contradicted)
        # handled again: nothing new
        before = {
            t: sum(1 for _ in runtime.log.read(t)) for t in ("version-traces", "version-windows", "version-alerts")
        }
        runtime.run([OutcomeJoin(), VersionTally(), VersionWatch()])
        assert {t: sum(1 for _ in runtime.log.read(t)) for t in before} == before
    finally:
        runtime.close()


def test_the_same_traffic_gives_the_same_events_byte_for_byte(tmp_path: Path, canary_130: list[Event]) -> None:
    a, b = _run(tmp_path / "a", canary_130), _run(tmp_path / "b", list(canary_130))
    try:
        for topic in ("version-traces", "version-windows", "version-alerts"):
            assert [r.value for r in a.log.read(topic)] == [r.value for r in b.log.read(topic)]
    finally:
        a.close()
        b.close()


def test_the_sql_views_show_the_windows_and_the_open_alarm(tmp_path: Path, canary_130: list[Event]) -> None:
    runtime = _run(tmp_path, canary_130)
    warehouse = open_warehouse(None, tmp_path)
    with Embedded(runtime, warehouse):
        sync(runtime, warehouse)
        rows = warehouse.read_only_query(
            "SELECT agent_version, sum(traces), sum(contradictions) FROM v_version_windows "
            "GROUP BY agent_version ORDER BY agent_version"
        ).rows
        assert [r[0] for r in rows] == ["1.2.4", "1.3.0"]
        assert sum(int(r[1]) for r in rows) == 1200
        assert int(rows[0][2]) == 0 and int(rows[1][2]) > 0
        alarms = warehouse.read_only_query("SELECT candidate_version, state FROM v_version_alarms").rows
        assert alarms and all(tuple(a) == ("1.3.0", "open") for a in alarms)
    # dropped and projected again from the topics: the same rows
    query = (
        "SELECT agent_version, window_start, traces, contradictions, escalations FROM v_version_windows ORDER BY 1, 2"
    )
    before = _sql(tmp_path, query)
    assert main(["rebuild", "--data-dir", str(tmp_path)]) == 0
    assert _sql(tmp_path, query) == before and len(before.splitlines()) == 1 + 2 * 20  # a header, 2 versions x 20 min


def _sql(data_dir: Path, query: str) -> str:
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["sql", "--format", "csv", "--data-dir", str(data_dir), query]) == 0
    return buffer.getvalue()


def _latest_windows(runtime: EmbeddedRuntime) -> dict[tuple[str, datetime], VersionWindowed]:
    """Each (version, window start)'s latest revision."""
    latest: dict[tuple[str, datetime], VersionWindowed] = {}
    for e in runtime.read_events("version-windows"):
        assert isinstance(e, VersionWindowed)
        key = (e.agent_version, e.window_start)
        if key not in latest or e.revision > latest[key].revision:
            latest[key] = e
    return latest


def _counts(runtime: EmbeddedRuntime) -> dict[tuple[str, datetime], tuple[int, ...]]:
    """Each window's final counts (latest revision), without ids or times."""
    return {
        k: (w.traces, w.verified_traces, w.verified_failure, w.contradictions, w.tool_errors, w.escalations)
        for k, w in _latest_windows(runtime).items()
    }


def test_verifications_by_order_id_reach_the_traces_that_wrote_to_the_orders(tmp_path: Path) -> None:
    """The payment system posts by order id (`by_order`): the subject join brings each verification to the
    trace that wrote to that customer's order, and the windows and alarms count as with trace ids."""
    by_trace = _run(tmp_path / "trace", traffic(600, "1.3.0", seed=5))
    by_order = EmbeddedRuntime(tmp_path / "order", fsync=False)
    try:
        events = list(canary_events(600, "1.3.0", seed=5, start=T0, by_order=True))
        subject_verified = [e for e in events if isinstance(e, SubjectVerified)]
        assert len(subject_verified) > 300 and all(e.subject.startswith("order:ORD-") for e in subject_verified)
        assert len({e.subject for e in subject_verified}) == len(subject_verified)  # one order per customer
        by_order.publish(events)
        by_order.run([SubjectJoin(), OutcomeJoin(), VersionTally(), VersionWatch()])
        derived = [e for e in by_order.read_events("verified-outcomes") if isinstance(e, OutcomeVerified)]
        assert sum(1 for e in derived if e.subject) == len(subject_verified)
        assert _counts(by_order) == _counts(by_trace)
        alarms = [(type(e).__name__, getattr(e, "metric", None)) for e in by_order.read_events("version-alerts")]
        assert alarms == [
            (type(e).__name__, getattr(e, "metric", None)) for e in by_trace.read_events("version-alerts")
        ]
        assert any(kind == "VersionRegressed" for kind, _ in alarms)
    finally:
        by_trace.close()
        by_order.close()

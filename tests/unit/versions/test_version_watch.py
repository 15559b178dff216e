"""Per-trace tallies, window rows, the alarms `assess` raises and clears, and version policy files."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from evaluation.version_policy import load_version_policy
from evaluation.version_watch import (
    CLEARED,
    NO_REGRESSION,
    REGRESSED,
    REPLACED,
    VersionPolicy,
    add_counts,
    alarm_key,
    assess,
    observation,
    pair_key,
    trace_tally,
    version_key,
    window_contribution,
    window_start,
)
from twin_engine.errors import DefinitionError

CLAIM = {"claimed_status": "SUCCESS", "tools": ["lookup_order", "refund_payment"], "failed_tools": ["refund_payment"]}


def test_a_disproved_success_is_a_contradiction_and_a_verified_failure() -> None:
    tally = trace_tally(CLAIM, {"status": "FAILURE", "verified": True}, alerted=False)
    assert tally["contradicted"] and tally["verified_failure"] and not tally["escalated"]
    assert window_contribution(tally) == {
        "traces": 1,
        "claimed_success": 1,
        "verified_traces": 1,
        "verified_failure": 1,
        "contradictions": 1,
        "verified_failures": 1,
        "tool_errors": 1,
    }
    assert observation(tally) == {"trials": 1, "contradicted": 1, "verified_failure": 1, "escalated": 0}


def test_an_unverified_trace_counts_in_its_window_but_not_in_the_test() -> None:
    tally = trace_tally({"claimed_status": "ESCALATED", "tools": []}, None, alerted=False)
    assert tally["escalated"] and tally["verified_status"] is None
    assert window_contribution(tally) == {"traces": 1, "claimed_escalated": 1, "escalations": 1}
    assert observation(tally) is None


def test_an_unverifiable_outcome_is_not_a_verified_status() -> None:
    tally = trace_tally(CLAIM, {"status": "UNKNOWN", "verified": False}, alerted=False)
    assert tally["verified_status"] is None and not tally["contradicted"]


def test_escalation_by_the_escalation_tool_and_an_alert_mark_the_trace() -> None:
    tally = trace_tally({"claimed_status": "PARTIAL", "tools": ["escalate_to_human"]}, None, alerted=True)
    assert tally["escalated"] and tally["contradicted"]


def test_versions_order_by_their_numbers_and_windows_by_the_minute() -> None:
    assert sorted(["1.10.0", "1.9.2", "1.3.0", "1.3.0-rc1"], key=version_key) == [
        "1.3.0",
        "1.3.0-rc1",
        "1.9.2",
        "1.10.0",
    ]
    assert window_start(datetime(2026, 3, 1, 12, 7, 59, 999000, tzinfo=UTC)) == datetime(2026, 3, 1, 12, 7, tzinfo=UTC)
    assert add_counts({"a": 2}, {"a": 1, "b": 1}, -1) == {"a": 1, "b": -1}


def _counts(trials: int, contradicted: int = 0, failed: int = 0, escalated: int = 0) -> dict[str, int]:
    return {"trials": trials, "contradicted": contradicted, "verified_failure": failed, "escalated": escalated}


def test_a_candidate_contradicting_far_more_raises_one_alarm_per_metric_that_moved() -> None:
    versions = {"1.2.4": _counts(900, 0, 0, 270), "1.3.0": _counts(100, 10, 10, 27)}
    decisions = assess(versions, {}, set(), VersionPolicy())
    assert {(d.kind, d.metric) for d in decisions} == {
        (REGRESSED, "contradiction_rate"),
        (REGRESSED, "verified_failure_rate"),
    }
    d = decisions[0]
    assert (d.baseline_version, d.candidate_version) == ("1.2.4", "1.3.0")
    assert d.tests["contradiction_rate"].candidate_rate == 0.1 and d.tests["contradiction_rate"].e_value > 300


def test_no_alarm_before_the_policy_s_minimum_and_none_twice() -> None:
    versions = {"1.2.4": _counts(900), "1.3.0": _counts(15, 10)}
    assert assess(versions, {}, set(), VersionPolicy(min_candidate_traces=20)) == []
    versions["1.3.0"] = _counts(100, 40)
    alarms = {alarm_key("1.2.4", "1.3.0", "contradiction_rate"): "open"}
    assert assess(versions, alarms, set(), VersionPolicy()) == []


def test_a_candidate_with_enough_clean_traces_clears_and_replaces_the_open_alarm() -> None:
    versions = {"1.2.4": _counts(3000, 3), "1.3.0": _counts(100, 10), "1.3.1": _counts(300, 0)}
    alarms = {alarm_key("1.2.4", "1.3.0", "contradiction_rate"): "open"}
    decisions = assess(versions, alarms, set(), VersionPolicy(clear_after_traces=300))
    kinds = {(d.kind, d.reason, d.baseline_version, d.candidate_version) for d in decisions}
    assert (CLEARED, NO_REGRESSION, "1.2.4", "1.3.1") in kinds
    assert not any(d.baseline_version == "1.3.0" for d in decisions)  # a regressed version is no baseline
    replaced = [d for d in decisions if d.reason == REPLACED]
    assert [(d.candidate_version, d.metric, d.replaced_by) for d in replaced] == [
        ("1.3.0", "contradiction_rate", "1.3.1")
    ]
    # once recorded, nothing more
    cleared = {pair_key("1.2.4", "1.3.1")}
    assert (
        assess(versions, {alarm_key("1.2.4", "1.3.0", "contradiction_rate"): "cleared"}, cleared, VersionPolicy()) == []
    )


def test_policy_files_load_and_bad_ones_say_where(tmp_path: Path) -> None:
    policy = load_version_policy()
    assert policy.alpha == 0.01 and policy.threshold == pytest.approx(300.0)
    bad = tmp_path / "p.yaml"
    bad.write_text("apiVersion: agenttwin.dev/v1\nkind: VersionPolicy\nspec:\n  alpha: 2\n")
    with pytest.raises(DefinitionError, match="alpha"):
        load_version_policy(bad)
    with pytest.raises(ValueError, match="metrics"):
        VersionPolicy(metrics=("latency",))

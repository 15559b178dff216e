"""Per-version production rates and the decision whether a newer agent version regressed.

Pure and plain-data (the stream processors keep these dicts in their stores):

- `trace_tally`: what one production trace counts for, from its claim reading, its verification and
  any contradiction alert: claimed and verified status, contradicted, verified failure, tool errors,
  escalated, and its one-minute window.
- `window_contribution`: the trace's counts in its (tenant, agent, version, minute) window row.
- `observation`: what a verified trace adds to its version's test counts (unverified traces add nothing:
  a rate of contradictions or verified failures is over traces somebody verified).
- `assess`: for every (older, newer) pair of an agent's versions and every metric, the sequential test
  (evaluation/sequential.py) and the alarms it raises or clears under a VersionPolicy.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from evaluation.claim_reader import CLAIM_STATUSES, ESCALATED
from evaluation.contradiction import is_contradiction
from evaluation.expectations.context import DEFAULT_ESCALATION_TOOLS
from evaluation.sequential import RateTest, rate_test

WINDOW_SECONDS = 60
VERIFIED_STATUSES = ("SUCCESS", "PARTIAL", "FAILURE", "UNKNOWN")
# metric name -> the observation it counts
METRICS: dict[str, str] = {
    "contradiction_rate": "contradicted",
    "verified_failure_rate": "verified_failure",
    "escalation_rate": "escalated",
}
WINDOW_COUNTS: tuple[str, ...] = (
    "traces",
    *(f"claimed_{s.lower()}" for s in CLAIM_STATUSES),
    "verified_traces",
    *(f"verified_{s.lower()}" for s in VERIFIED_STATUSES),
    "contradictions",
    "verified_failures",
    "tool_errors",
    "escalations",
)
REGRESSED, CLEARED = "regressed", "cleared"
NO_REGRESSION, REPLACED = "no-regression", "replaced"
MAX_EVIDENCE_TRACES = 50  # contradicted traces an alarm lists (the newest ones)


@dataclass(frozen=True)
class VersionPolicy:
    """When a newer version is called a regression (version-policy.v1 files: evaluation/version_policy.py)."""

    name: str = "default"
    alpha: float = 0.01  # the chance of ever alarming on a pair whose versions do not differ, all metrics together
    metrics: tuple[str, ...] = tuple(METRICS)
    min_candidate_traces: int = 20  # verified candidate traces before any alarm (practical, not needed for validity)
    min_difference: float = 0.0  # the candidate's rate must exceed the baseline's by more than this
    clear_after_traces: int = 300  # verified candidate traces with no alarm: the candidate clears

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must be between 0 and 1, not {self.alpha}")
        unknown = [m for m in self.metrics if m not in METRICS]
        if unknown or not self.metrics:
            raise ValueError(f"metrics must be some of {', '.join(METRICS)}; got {', '.join(self.metrics) or 'none'}")

    @property
    def metric_alpha(self) -> float:
        """alpha shared evenly among the metrics (Bonferroni), so the pair's false-alarm bound is alpha."""
        return self.alpha / len(self.metrics)

    @property
    def threshold(self) -> float:
        """The e-value that raises an alarm: 1 / metric_alpha."""
        return 1.0 / self.metric_alpha


def version_key(version: str) -> tuple[tuple[int, int | str], ...]:
    """Order versions the way people number them: 1.10.0 after 1.9.2; text parts after numbers."""
    parts = re.split(r"[.\-+_]", version)
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in parts)


def window_start(at: datetime) -> datetime:
    seconds = math.floor(at.timestamp() / WINDOW_SECONDS) * WINDOW_SECONDS
    return datetime.fromtimestamp(seconds, UTC)


def is_escalation(claimed_status: str | None, tools: list[str]) -> bool:
    return claimed_status == ESCALATED or any(t in DEFAULT_ESCALATION_TOOLS for t in tools)


def trace_tally(claim: dict[str, Any], verification: dict[str, Any] | None, alerted: bool) -> dict[str, Any]:
    """The trace's counts from its latest claim reading, its verification (status, verified) and whether a
    contradiction alert named it. The contradiction rule is evaluation/contradiction.py's, the alert's too."""
    claimed = claim.get("claimed_status") or "UNKNOWN"
    status = verification["status"] if verification else None
    verified = bool(verification and verification["verified"])
    contradicted = alerted or (verification is not None and is_contradiction(claimed, status or "", verified))
    return {
        "claimed_status": claimed,
        "verified_status": status if verified else None,
        "contradicted": contradicted,
        "verified_failure": verified and status == "FAILURE",
        "tool_errors": len(claim.get("failed_tools") or []),
        "escalated": is_escalation(claimed, list(claim.get("tools") or [])),
    }


def window_contribution(tally: dict[str, Any]) -> dict[str, int]:
    """The trace's counts in its window row (zeros omitted)."""
    counts = {"traces": 1, f"claimed_{str(tally['claimed_status']).lower()}": 1}
    if tally["verified_status"] is not None:
        counts["verified_traces"] = 1
        counts[f"verified_{str(tally['verified_status']).lower()}"] = 1
    for name, flag in (("contradictions", "contradicted"), ("verified_failures", "verified_failure")):
        if tally[flag]:
            counts[name] = 1
    if tally["escalated"]:
        counts["escalations"] = 1
    if tally["tool_errors"]:
        counts["tool_errors"] = int(tally["tool_errors"])
    return {k: v for k, v in counts.items() if k in WINDOW_COUNTS}


def observation(tally: dict[str, Any]) -> dict[str, int] | None:
    """What the trace adds to its version's test counts: one trial per metric; None when not verified."""
    if tally["verified_status"] is None:
        return None
    return {"trials": 1, **{flag: int(bool(tally[flag])) for flag in METRICS.values()}}


def add_counts(total: dict[str, int], delta: dict[str, int], sign: int = 1) -> dict[str, int]:
    """A new dict: total + sign * delta (keys of either)."""
    out = dict(total)
    for k, v in delta.items():
        out[k] = out.get(k, 0) + sign * v
    return out


@dataclass(frozen=True)
class Decision:
    """An alarm raised (REGRESSED) or a pair, or an open alarm, cleared (CLEARED)."""

    kind: str
    baseline_version: str
    candidate_version: str
    metric: str | None  # None for a pair cleared on every metric
    reason: str
    tests: dict[str, RateTest] = field(default_factory=dict)  # metric -> the test as it stands
    replaced_by: str | None = None


def pair_key(baseline: str, candidate: str) -> str:
    return f"{baseline}>{candidate}"


def alarm_key(baseline: str, candidate: str, metric: str) -> str:
    return f"{baseline}>{candidate}>{metric}"


def pair_tests(versions: dict[str, dict[str, int]], baseline: str, candidate: str) -> dict[str, RateTest]:
    b, c = versions.get(baseline, {}), versions.get(candidate, {})
    return {
        metric: rate_test(c.get(flag, 0), c.get("trials", 0), b.get(flag, 0), b.get("trials", 0))
        for metric, flag in METRICS.items()
    }


def assess(
    versions: dict[str, dict[str, int]],
    alarms: dict[str, str],
    cleared: set[str],
    policy: VersionPolicy,
) -> list[Decision]:
    """The decisions the counts call for now. `versions`: version -> test counts; `alarms`: alarm key ->
    "open" | "cleared"; `cleared`: pair keys already cleared. Pure: the caller records what it emits.

    Every newer version is tested against every older one that never regressed."""
    out: list[Decision] = []
    ordered = sorted(versions, key=version_key)
    # a version that regressed is never a baseline: a fix is judged against the last good version
    regressed = {key.split(">")[1] for key in alarms}
    newly_cleared: set[str] = set()
    for i, candidate in enumerate(ordered):
        for baseline in ordered[:i]:
            if baseline in regressed:
                continue
            tests = pair_tests(versions, baseline, candidate)
            trials = tests[policy.metrics[0]].candidate_trials
            pk = pair_key(baseline, candidate)
            for metric in policy.metrics:
                key = alarm_key(baseline, candidate, metric)
                if key in alarms or trials < policy.min_candidate_traces:
                    continue
                if tests[metric].regressed(policy.metric_alpha, policy.min_difference):
                    out.append(Decision(REGRESSED, baseline, candidate, metric, "e-value over threshold", tests))
            raised = any(d.kind == REGRESSED and pair_key(d.baseline_version, d.candidate_version) == pk for d in out)
            ever_alarmed = any(k.startswith(pk + ">") for k in alarms)
            if pk not in cleared and not raised and not ever_alarmed and trials >= policy.clear_after_traces:
                out.append(Decision(CLEARED, baseline, candidate, None, NO_REGRESSION, tests))
                newly_cleared.add(pk)
    # an open alarm on version c against baseline b closes once a newer version w cleared against b
    all_cleared = cleared | newly_cleared
    for key, state in sorted(alarms.items()):
        if state != "open":
            continue
        baseline, candidate, metric = key.split(">")
        for newer in ordered:
            if version_key(newer) > version_key(candidate) and pair_key(baseline, newer) in all_cleared:
                tests = pair_tests(versions, baseline, candidate)
                out.append(Decision(CLEARED, baseline, candidate, metric, REPLACED, tests, replaced_by=newer))
                break
    return out


def recorded(alarms: dict[str, str], cleared: set[str], decisions: list[Decision]) -> tuple[dict[str, str], set[str]]:
    """The alarms and cleared pairs once `decisions` are emitted (new objects; the inputs are left as they were)."""
    alarms, cleared = dict(alarms), set(cleared)
    for d in decisions:
        if d.kind == REGRESSED and d.metric is not None:
            alarms[alarm_key(d.baseline_version, d.candidate_version, d.metric)] = "open"
        elif d.reason == REPLACED and d.metric is not None:
            alarms[alarm_key(d.baseline_version, d.candidate_version, d.metric)] = "cleared"
        else:
            cleared.add(pair_key(d.baseline_version, d.candidate_version))
    return alarms, cleared

"""Error rates of the version watch on Demo Co traffic simulated on the twin (issue 28).

    python -m benchmarks.bench_versions [--runs 200] [--seed 28]

Each run is a seeded stream of customers (producers/production_traffic.py): each customer's situation
drawn by DEMO_CO_TRAFFIC's weights, served by the baseline or, with probability --share, the canary; what
each version does in each situation comes from running it on the twin and grading the case. The watch
(evaluation/version_watch.py, the default version policy) is asked after every verified trace.

- A/A: 1.2.4 beside itself (labelled 1.2.4 and 1.2.4-aa), --customers each: false alarms / runs.
- detect: 1.3.0 canary beside 1.2.4 until its first alarm (at most --max-customers): canary traces to it.
- replace: after that alarm, 1.3.1 replaces 1.3.0 as the canary until 1.3.1 clears against 1.2.4: the
  1.3.0 alarm must clear, and 1.3.1 must raise none.
- 1.3.1 beside 1.3.0 (1.3.0 never flagged, so it is a baseline): which metrics alarm.

Writes benchmarks/results/bench_versions-<time>.json.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from benchmarks._results import loadavg, write
from evaluation.version_policy import load_version_policy
from evaluation.version_watch import CLEARED, REGRESSED, REPLACED
from producers.production_traffic import DEMO_CO_TRAFFIC, Phase, SituationOutcome, situation_outcomes, watch_traffic

SEEDS = (1, 2, 3)  # each situation is run under these seeds; the outcomes must agree


def _percentile(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _outcome_table(outcomes: dict[str, SituationOutcome]) -> dict[str, dict[str, Any]]:
    return {
        name: {
            "claimed": o.claimed_status,
            "verified": o.verified_status if o.verified else None,
            "tools": list(o.tools),
            "failed_tools": list(o.failed_tools),
        }
        for name, o in outcomes.items()
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--share", type=float, default=0.10, help="the canary's share of customers")
    ap.add_argument("--customers", type=int, default=5000, help="customers per A/A run")
    ap.add_argument("--max-customers", type=int, default=20000, help="customers before a detection run gives up")
    args = ap.parse_args(argv)
    load = loadavg()
    started = time.perf_counter()
    policy = load_version_policy()
    by_version = {v: situation_outcomes(v, SEEDS) for v in ("1.2.4", "1.3.0", "1.3.1")}
    outcomes = {**by_version, "1.2.4-aa": by_version["1.2.4"]}

    aa_alarms, aa_canary = 0, []
    for i in range(args.runs):
        run = watch_traffic(
            [Phase("1.2.4", "1.2.4-aa", args.share, args.customers)],
            outcomes,
            seed=args.seed * 100_000 + i,
            policy=policy,
        )
        aa_alarms += any(d.kind == REGRESSED for d, _, _ in run.decisions)
        aa_canary.append(run.traces.get("1.2.4-aa", 0))

    detected, missed, first_metrics = [], 0, {}
    verified_at_detection: list[int] = []
    replaced_cleared, canary_fix_alarms, fix_cleared = 0, 0, 0
    for i in range(args.runs):
        seed = args.seed * 100_000 + 50_000 + i
        run = watch_traffic(
            [Phase("1.2.4", "1.3.0", args.share, args.max_customers)],
            outcomes,
            seed=seed,
            policy=policy,
            stop=lambda d: d.kind == REGRESSED,
        )
        alarm = next(((d, n, v) for d, n, v in run.decisions if d.kind == REGRESSED), None)
        if alarm is None:
            missed += 1
            continue
        d, n, v = alarm
        detected.append(n)
        verified_at_detection.append(v)
        first_metrics[d.metric] = first_metrics.get(d.metric, 0) + 1
        # the same stream, then 1.3.1 replaces 1.3.0 as the canary until it clears against 1.2.4
        customers_to_alarm = sum(run.traces.values())
        story = watch_traffic(
            [
                Phase("1.2.4", "1.3.0", args.share, customers_to_alarm),
                Phase("1.2.4", "1.3.1", args.share, args.max_customers),
            ],
            outcomes,
            seed=seed,
            policy=policy,
            stop=lambda d: d.kind == CLEARED and d.candidate_version == "1.3.1",
        )
        kinds = [(x.kind, x.reason, x.candidate_version) for x, _, _ in story.decisions]
        replaced_cleared += (CLEARED, REPLACED, "1.3.0") in kinds
        fix_cleared += any(k == CLEARED and c == "1.3.1" for k, _, c in kinds)
        canary_fix_alarms += any(k == REGRESSED and c == "1.3.1" for k, _, c in kinds)

    fix_beside_130: dict[str, int] = {}
    for i in range(args.runs):
        run = watch_traffic(
            [Phase("1.3.0", "1.3.1", args.share, args.customers)],
            outcomes,
            seed=args.seed * 100_000 + 90_000 + i,
            policy=policy,
        )
        for d, _, _ in run.decisions:
            if d.kind == REGRESSED and d.metric:
                fix_beside_130[d.metric] = fix_beside_130.get(d.metric, 0) + 1

    figures = {
        "runs": args.runs,
        "seed": args.seed,
        "canary_share": args.share,
        "policy": {
            "name": policy.name,
            "alpha": policy.alpha,
            "threshold_e_value": policy.threshold,
            "metrics": list(policy.metrics),
            "min_candidate_traces": policy.min_candidate_traces,
            "clear_after_traces": policy.clear_after_traces,
        },
        "traffic": DEMO_CO_TRAFFIC,
        "outcomes": {v: _outcome_table(o) for v, o in by_version.items()},
        "aa": {
            "customers_per_run": args.customers,
            "false_alarm_runs": aa_alarms,
            "false_alarm_rate": aa_alarms / args.runs,
            "median_canary_traces": statistics.median(aa_canary),
        },
        "detect_130_beside_124": {
            "detected_runs": len(detected),
            "missed_runs": missed,
            "median_canary_traces": statistics.median(detected) if detected else None,
            "p90_canary_traces": _percentile(detected, 0.9) if detected else None,
            "max_canary_traces": max(detected) if detected else None,
            "median_verified_canary_traces": statistics.median(verified_at_detection) if detected else None,
            "first_metric": first_metrics,
        },
        "replace_130_with_131": {
            "runs": len(detected),
            "alarm_on_130_cleared": replaced_cleared,
            "131_cleared_against_124": fix_cleared,
            "131_false_alarms": canary_fix_alarms,
        },
        "131_beside_130_alarms_by_metric": fix_beside_130,
        "seconds": round(time.perf_counter() - started, 1),
    }
    path = write("bench_versions", figures, load_at_start=load)
    aa, det, rep = figures["aa"], figures["detect_130_beside_124"], figures["replace_130_with_131"]
    print(f"load {load}")
    print(f"A/A: {aa['false_alarm_runs']} false alarms in {args.runs} runs ({aa['false_alarm_rate']:.3f})")
    print(
        f"1.3.0 at {args.share:.0%} beside 1.2.4: flagged in {det['detected_runs']}/{args.runs} runs, median "
        f"{det['median_canary_traces']} canary traces (p90 {det['p90_canary_traces']}), first metric {first_metrics}"
    )
    print(
        f"1.3.1 replacing 1.3.0: 1.3.0's alarm cleared in {rep['alarm_on_130_cleared']}/{rep['runs']}, "
        f"1.3.1 cleared in {rep['131_cleared_against_124']}, false alarms on 1.3.1: {rep['131_false_alarms']}"
    )
    print(f"1.3.1 beside 1.3.0, alarms by metric over {args.runs} runs: {fix_beside_130}")
    print(f"wrote {path} in {figures['seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Repeated trials: K runs of each case per side, trial n of both sides on the same seed (the pinned pair).

Per case and side: the per-trial verdicts, pass^k (all k of k draws pass: C(c,k)/C(n,k)) and pass@k (at
least one of k draws passes: 1 - C(n-c,k)/C(n,k)) for k = 1..n, with c passing trials out of n.

The classification is flakiness-aware. An expectation counts as newly broken (or fixed) only when the
candidate fails it in significantly more (or fewer) trials than the baseline: Fisher's exact test,
one-sided, on the 2x2 table of failing / other trials per side, at ALPHA = 0.05. Then, in the order of
`evaluation.classification.classify`: a significantly broken critical expectation -> NEW_CRITICAL_FAILURE,
any significantly broken one -> REGRESSED, any significantly fixed one -> IMPROVED; otherwise FLAKY when
either side passed some trials and failed others (no change could be told from chance), else UNCHANGED.
Any trial that could not be compared makes the case INCOMPLETE. With fewer than MIN_TRIALS trials no
table can reach ALPHA, so 2 trials are refused; one trial is a plain evaluation and never comes here.
The document of an aggregated case is trial 1's (the run seed's) with the class, the reason and a
`trials` block added.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from math import comb
from typing import Any

from evaluation.classification import (
    FLAKY,
    IMPROVED,
    INCOMPLETE,
    NEW_CRITICAL_FAILURE,
    REGRESSED,
    UNCHANGED,
    format_ids,
)
from evaluation.comparison import CaseComparison, compare_case
from evaluation.pairing import BASELINE, CANDIDATE, trial_of
from evaluation.results import FAIL, FAILED, PASSED, GradedCase
from evaluation.summary import EvaluationReport, summarize

JSON = Any

ALPHA = 0.05
MIN_TRIALS = 3  # 1 / C(2K, K) is the smallest one-sided p; it reaches ALPHA from K = 3 on
TEST_NAME = "Fisher's exact test, one-sided, on failing trials per expectation"
RULE = (
    f"A change counts only when significant ({TEST_NAME}, alpha {ALPHA}); otherwise FLAKY when a side passed "
    "some trials and failed others, else UNCHANGED."
)


class TrialsError(ValueError):
    """The trials of a case cannot be aggregated (none, or a number no exact test can decide on)."""


def check_trials(trials: int) -> None:
    if trials != 1 and trials < MIN_TRIALS:
        raise TrialsError(
            f"--trials {trials}: with fewer than {MIN_TRIALS} trials no change can be significant at alpha "
            f"{ALPHA} (Fisher's exact test); use 1 or at least {MIN_TRIALS}"
        )


def _hypergeom_tail(failed_b: int, failed_c: int, n_b: int, n_c: int) -> float:
    """P(the candidate has >= failed_c of the failures) given both margins (one-sided Fisher)."""
    total = failed_b + failed_c
    denominator = comb(n_b + n_c, total)
    top = min(total, n_c)
    return sum(comb(n_c, x) * comb(n_b, total - x) for x in range(failed_c, top + 1)) / denominator


def fisher_worse(failed_b: int, failed_c: int, n_b: int, n_c: int) -> float:
    """One-sided p that the candidate fails more often than the baseline."""
    return _hypergeom_tail(failed_b, failed_c, n_b, n_c)


def fisher_better(failed_b: int, failed_c: int, n_b: int, n_c: int) -> float:
    """One-sided p that the candidate fails less often than the baseline."""
    return _hypergeom_tail(failed_c, failed_b, n_c, n_b)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: the chance that k trials drawn without replacement all pass."""
    return comb(c, k) / comb(n, k)


def pass_at_k(n: int, c: int, k: int) -> float:
    """pass@k: the chance that at least one of k trials drawn without replacement passes."""
    return 1.0 - comb(n - c, k) / comb(n, k)


def side_stats(statuses: Sequence[str]) -> dict[str, JSON]:
    n = len(statuses)
    c = sum(1 for s in statuses if s == PASSED)
    return {
        "trials": n,
        "passed": c,
        "failed": sum(1 for s in statuses if s == FAILED),
        "statuses": list(statuses),
        "pass_hat_k": {str(k): round(pass_hat_k(n, c, k), 4) for k in range(1, n + 1)},
        "pass_at_k": {str(k): round(pass_at_k(n, c, k), 4) for k in range(1, n + 1)},
    }


def _inconsistent(statuses: Sequence[str]) -> bool:
    return PASSED in statuses and FAILED in statuses


def _expectation_table(trials: Sequence[CaseComparison]) -> list[dict[str, JSON]]:
    rows: dict[str, dict[str, JSON]] = {}
    for comparison in trials:
        for change in comparison.expectations:
            row = rows.setdefault(
                change.id, {"id": change.id, "critical": change.critical, "baseline_failed": 0, "candidate_failed": 0}
            )
            row["critical"] = row["critical"] or change.critical
            row["baseline_failed"] += int(change.baseline == FAIL)
            row["candidate_failed"] += int(change.candidate == FAIL)
    n = len(trials)
    for row in rows.values():
        row["p_worse"] = round(fisher_worse(row["baseline_failed"], row["candidate_failed"], n, n), 4)
        row["p_better"] = round(fisher_better(row["baseline_failed"], row["candidate_failed"], n, n), 4)
    return list(rows.values())


def _counts(row: dict[str, JSON], n: int, p_key: str) -> str:
    return (
        f"the candidate failed it in {row['candidate_failed']} of {n} trials, the baseline in "
        f"{row['baseline_failed']}; Fisher p = {row[p_key]:.4f}"
    )


def aggregate(trials: Sequence[CaseComparison], case_seeds: Sequence[int], alpha: float = ALPHA) -> CaseComparison:
    """One case's classification over its trials (trial 1 first), as described in the module doc."""
    if not trials:
        raise TrialsError("no trial to aggregate")
    n = len(trials)
    first = trials[0]
    b_statuses = [c.baseline.status for c in trials]
    c_statuses = [c.candidate.status for c in trials]
    table = _expectation_table(trials)
    broken = [r for r in table if r["p_worse"] <= alpha]
    fixed = [r for r in table if r["p_better"] <= alpha]
    incomplete = [(i, c) for i, c in enumerate(trials, start=1) if c.classification == INCOMPLETE]
    if incomplete:
        i, c = incomplete[0]
        cls, reason = INCOMPLETE, f"Trial {i} of {n}: {c.reason}"
    elif critical := [r for r in broken if r["critical"]]:
        r = critical[0]
        cls = NEW_CRITICAL_FAILURE
        reason = f"New critical failure {r['id']}: {_counts(r, n, 'p_worse')}."
    elif broken:
        cls = REGRESSED
        reason = f"Newly failing: {format_ids([r['id'] for r in broken])} ({_counts(broken[0], n, 'p_worse')})."
    elif fixed:
        cls = IMPROVED
        reason = f"Now passing: {format_ids([r['id'] for r in fixed])} ({_counts(fixed[0], n, 'p_better')})."
    else:
        b_pass, c_pass = b_statuses.count(PASSED), c_statuses.count(PASSED)
        counts = f"baseline passed {b_pass} of {n} trials, candidate {c_pass} of {n}"
        if _inconsistent(b_statuses) or _inconsistent(c_statuses):
            cls, reason = FLAKY, f"Inconsistent across trials, no significant change: {counts}."
        else:
            cls, reason = UNCHANGED, f"Same across trials: {counts}."
    block = {
        "count": n,
        "alpha": alpha,
        "test": TEST_NAME,
        "rule": RULE,
        "baseline": side_stats(b_statuses),
        "candidate": side_stats(c_statuses),
        "per_trial": [
            {
                "trial": i,
                "case_seed": seed,
                "baseline": c.baseline.status,
                "candidate": c.candidate.status,
                "classification": c.classification,
                "baseline_case_id": c.baseline.case_id,
                "candidate_case_id": c.candidate.case_id,
                "divergence": c.divergence.summary if c.divergence else None,
            }
            for i, (c, seed) in enumerate(zip(trials, case_seeds, strict=True), start=1)
        ],
        "expectations": table,
    }
    return dataclasses.replace(first, classification=cls, reason=reason, trials=block)


def compare_trials(pairs: Sequence[tuple[GradedCase | None, GradedCase | None]]) -> CaseComparison:
    """Compare each trial's pinned pair (trial 1 first) and aggregate them."""
    trials = [compare_case(b, c) for b, c in pairs]
    seeds = [c.baseline.case_seed if c.baseline.case_seed is not None else c.candidate.case_seed for c in trials]
    return aggregate(trials, [s if s is not None else -1 for s in seeds])


def build_trials_report(
    *,
    evaluation_id: str,
    baseline_agent: str,
    candidate_agent: str,
    run_seed: int,
    evaluator_version: str,
    trials: int,
    baseline_cases: Sequence[GradedCase],
    candidate_cases: Sequence[GradedCase],
    pair_id: str | None = None,
) -> EvaluationReport:
    """Like `evaluation.summary.build_report`, over `trials` runs of each scenario per side."""
    slots: dict[tuple[str, str, int], GradedCase] = {}
    for side, cases in ((BASELINE, baseline_cases), (CANDIDATE, candidate_cases)):
        for graded in cases:
            name = graded.case.scenario_name
            trial = trial_of(graded.case.case_id, evaluation_id, side, name)
            if trial is None or trial > trials:
                raise TrialsError(f"case {graded.case.case_id} is no trial of {name} in evaluation {evaluation_id}")
            slots[(side, name, trial)] = graded
    names = sorted({name for _, name, _ in slots})
    comparisons = tuple(
        compare_trials(
            [(slots.get((BASELINE, name, n)), slots.get((CANDIDATE, name, n))) for n in range(1, trials + 1)]
        )
        for name in names
    )
    return EvaluationReport(
        evaluation_id=evaluation_id,
        baseline_agent=baseline_agent,
        candidate_agent=candidate_agent,
        run_seed=run_seed,
        evaluator_version=evaluator_version,
        cases=comparisons,
        summary=summarize(comparisons),
        pair_id=pair_id,
    )

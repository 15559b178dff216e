"""Repeated trials: seeds, the exact test, pass^k / pass@k, the flakiness-aware class, the comparator's wait."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from comparison_builders import case_run, graded, result

from evaluation.classification import FLAKY, INCOMPLETE, NEW_CRITICAL_FAILURE, REGRESSED, UNCHANGED
from evaluation.comparison import compare_case
from evaluation.pairing import (
    CANDIDATE,
    PairingError,
    ScenarioRef,
    case_id_for,
    check_pair,
    pair_problems,
    plan_pair,
    trial_of,
    trial_run_seed,
)
from evaluation.results import FAIL, PASS
from evaluation.trials import (
    MIN_TRIALS,
    TrialsError,
    aggregate,
    check_trials,
    fisher_better,
    fisher_worse,
    pass_at_k,
    pass_hat_k,
    side_stats,
)
from streams import ids
from streams.convert import graded_events
from streams.events import CaseVerdicted, PairPlanned
from streams.processors import Comparator

SCENARIOS = [ScenarioRef("a", "1" * 64), ScenarioRef("b", "2" * 64, seed=99)]


def test_trial_1_is_the_plain_evaluation_and_trial_n_shares_its_seed_across_sides() -> None:
    one = plan_pair(None, "x", "y", SCENARIOS, "twin", "t" * 64, 42)
    five = plan_pair(None, "x", "y", SCENARIOS, "twin", "t" * 64, 42, trials=5)
    assert one.evaluation_id != five.evaluation_id and one.request_hash != five.request_hash
    assert plan_pair(None, "x", "y", SCENARIOS, "twin", "t" * 64, 42, trials=1) == one
    assert [c.case_id for c in five.baseline if c.trial == 1] == [
        case_id_for(five.evaluation_id, "BASELINE", "a"),
        case_id_for(five.evaluation_id, "BASELINE", "b"),
    ]
    assert trial_run_seed(42, 1) == 42 and len({trial_run_seed(42, n) for n in range(1, 6)}) == 5
    for b, c in zip(five.baseline, five.candidate, strict=True):
        assert (b.scenario_name, b.trial, b.case_seed) == (c.scenario_name, c.trial, c.case_seed)
    a_seeds = {c.case_seed for c in five.baseline if c.scenario_name == "a"}
    assert len(a_seeds) == 5  # each trial its own seed
    assert {c.case_seed for c in five.baseline if c.scenario_name == "b"} == {99}  # a pinned spec.seed pins all
    check_pair(five)
    assert len(five.baseline) == 10


def test_the_pair_check_catches_a_trial_run_on_another_seed() -> None:
    import dataclasses

    plan = plan_pair("ev-t", "x", "y", SCENARIOS, "twin", "t" * 64, 42, trials=3)
    bad = list(plan.candidate)
    bad[1] = dataclasses.replace(bad[1], case_seed=bad[1].case_seed + 1)
    problems = pair_problems(dataclasses.replace(plan, candidate=tuple(bad)))
    assert any("seed" in p for p in problems)
    with pytest.raises(PairingError, match="trials must be between"):
        plan_pair("ev-t", "x", "y", SCENARIOS, "twin", "t" * 64, 42, trials=0)


def test_trial_of_reads_back_only_ids_case_id_for_made() -> None:
    assert trial_of(case_id_for("ev", CANDIDATE, "a", 4), "ev", CANDIDATE, "a") == 4
    assert trial_of(case_id_for("ev", CANDIDATE, "a"), "ev", CANDIDATE, "a") == 1
    for forged in ("ev:candidate:a#1", "ev:candidate:a#04", "ev:candidate:a#x", "ev:candidate:ab", "ev:baseline:a#2"):
        assert trial_of(forged, "ev", CANDIDATE, "a") is None


def test_fisher_exact_one_sided_values() -> None:
    assert fisher_worse(0, 3, 3, 3) == pytest.approx(1 / 20)  # the smallest p of 3 trials: just alpha
    assert fisher_worse(0, 5, 5, 5) == pytest.approx(1 / 252)
    assert fisher_worse(0, 4, 5, 5) == pytest.approx(5 / 210)
    assert fisher_worse(1, 1, 5, 5) == pytest.approx(1 - 1 / 4.5) and fisher_worse(2, 0, 5, 5) == 1.0
    assert fisher_better(5, 0, 5, 5) == fisher_worse(0, 5, 5, 5)
    check_trials(1)
    check_trials(MIN_TRIALS)
    with pytest.raises(TrialsError, match="no change can be significant"):
        check_trials(2)


def test_pass_hat_k_and_pass_at_k() -> None:
    assert pass_hat_k(5, 4, 1) == pytest.approx(0.8) and pass_hat_k(5, 4, 2) == pytest.approx(0.6)
    assert pass_hat_k(5, 4, 5) == 0.0 and pass_hat_k(5, 5, 5) == 1.0
    assert pass_at_k(5, 4, 2) == 1.0 and pass_at_k(5, 1, 1) == pytest.approx(0.2) and pass_at_k(5, 0, 5) == 0.0
    stats = side_stats(["PASSED", "FAILED", "PASSED", "PASSED", "PASSED"])
    assert stats["passed"] == 4 and stats["pass_hat_k"]["5"] == 0.0 and stats["pass_at_k"]["1"] == 0.8


def _trial(seed: int, base_ok: bool, cand_ok: bool, critical: bool = True) -> object:
    b = graded(case_run(seed=seed), [result("refunded-once", PASS if base_ok else FAIL, critical=critical)])
    c = graded(
        case_run(seed=seed, side="candidate", agent="demo:1.3.0"),
        [result("refunded-once", PASS if cand_ok else FAIL, critical=critical)],
    )
    return compare_case(b, c)


def _aggregate(pattern: list[tuple[bool, bool]], critical: bool = True) -> object:
    trials = [_trial(i, b, c, critical) for i, (b, c) in enumerate(pattern)]
    return aggregate(trials, list(range(len(pattern))))  # type: ignore[arg-type]


def test_one_failing_seed_on_both_sides_is_flaky_not_a_regression() -> None:
    agg = _aggregate([(True, True), (True, True), (False, False), (True, True), (True, True)])
    assert agg.classification == FLAKY  # type: ignore[attr-defined]
    block = agg.trials  # type: ignore[attr-defined]
    assert block["baseline"]["passed"] == block["candidate"]["passed"] == 4
    assert [t["classification"] for t in block["per_trial"]][2] == UNCHANGED
    assert block["expectations"][0]["p_worse"] == pytest.approx(0.7778)  # 1 of 5 vs 1 of 5: chance


def test_only_a_significant_change_is_a_regression() -> None:
    always = _aggregate([(True, False)] * 5)
    assert always.classification == NEW_CRITICAL_FAILURE  # type: ignore[attr-defined]
    assert "failed it in 5 of 5 trials, the baseline in 0; Fisher p = 0.0040" in always.reason  # type: ignore[attr-defined]
    assert _aggregate([(True, False)] * 5, critical=False).classification == REGRESSED  # type: ignore[attr-defined]
    once = _aggregate([(True, True)] * 4 + [(True, False)])  # one candidate failure in five: chance
    assert once.classification == FLAKY  # type: ignore[attr-defined]
    steady = _aggregate([(True, True)] * 5)
    assert steady.classification == UNCHANGED and steady.to_dict()["trials"]["count"] == 5  # type: ignore[attr-defined]
    assert "trials" not in compare_case(None, graded(case_run())).to_dict()  # one trial: the document as before


def test_an_incomplete_trial_makes_the_case_incomplete() -> None:
    trials = [_trial(i, True, True) for i in range(3)]
    broken = compare_case(graded(case_run(seed=9)), None)  # the candidate's case is missing
    agg = aggregate([*trials[:2], broken], [0, 1, 9])
    assert agg.classification == INCOMPLETE and agg.reason.startswith("Trial 3 of 3:")


def _verdict(g: object, side: str, evaluation_id: str, trial: int) -> CaseVerdicted:
    import dataclasses

    case = dataclasses.replace(g.case, case_id=case_id_for(evaluation_id, side, "s", trial), scenario_name="s")  # type: ignore[attr-defined]
    events = graded_events(dataclasses.replace(g, case=case), evaluation_id=evaluation_id, side=side, at=ids.PINNED_NOW)  # type: ignore[arg-type]
    return next(e for e in events if isinstance(e, CaseVerdicted))


def test_the_comparator_waits_for_the_pair_plan_and_all_trials() -> None:
    comparator = Comparator("1.1.0")
    store: dict[str, object] = {}
    ev = "ev-trials"
    ok = graded(case_run(seed=1), [result("refunded-once", PASS, critical=True)])
    bad = graded(case_run(seed=1), [result("refunded-once", FAIL, critical=True)])
    verdicts = [_verdict(ok if n != 2 else bad, side, ev, n) for n in (1, 2, 3) for side in ("BASELINE", "CANDIDATE")]
    assert all(comparator.handle(store, v) == [] for v in verdicts)  # no plan yet: nothing can be decided
    pair = PairPlanned(
        event_id="p",
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
        correlation_id=ev,
        evaluation_id=ev,
        pair_id="pair",
        run_seed=1,
        baseline_agent="b",
        candidate_agent="c",
        twin_name="t",
        twin_hash="h",
        scenario_names=["s"],
        scenario_hashes=["x"],
        case_count=6,
        evaluator_version="1.1.0",
        trials=3,
    )
    out = comparator.handle(store, pair)
    assert len(out) == 1 and out[0].classification == FLAKY  # type: ignore[attr-defined]
    assert comparator.handle(store, pair) == [] and comparator.handle(store, verdicts[0]) == []  # redelivery

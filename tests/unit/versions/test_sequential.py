"""The sequential test of two rates: its e-value, its false-alarm bound under peeking, its power."""

from __future__ import annotations

import math
import random

import pytest
from scipy import integrate, stats  # type: ignore[import-untyped]

from evaluation.sequential import log_e_value, rate_test


def test_no_data_is_evidence_of_nothing() -> None:
    assert log_e_value(0, 0, 0, 0) == 0.0


def _mixture(events: int, trials: int) -> float:
    """The Jeffreys-mixture probability of a sequence, by numerical integration (independent of the code)."""
    jeffreys = stats.beta(0.5, 0.5).pdf
    value, _ = integrate.quad(lambda p: p**events * (1 - p) ** (trials - events) * jeffreys(p), 0, 1, limit=200)
    return float(value)


def test_the_e_value_is_the_mixture_over_the_best_common_rate() -> None:
    # candidate 7 of 20, baseline 2 of 60
    numerator = math.log(_mixture(7, 20)) + math.log(_mixture(2, 60))
    p = 9 / 80
    denominator = 9 * math.log(p) + 71 * math.log(1 - p)
    assert log_e_value(7, 20, 2, 60) == pytest.approx(numerator - denominator, abs=1e-6)


def test_impossible_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="impossible counts"):
        log_e_value(5, 3, 0, 10)


def _peeking_run(rng: random.Random, p_baseline: float, p_candidate: float, share: float, n: int, alpha: float) -> int:
    """The candidate trials at the first alarm, checking after every observation; 0 when it never alarms."""
    counts = [0, 0, 0, 0]  # candidate events, candidate trials, baseline events, baseline trials
    for _ in range(n):
        if rng.random() < share:
            counts[1] += 1
            counts[0] += rng.random() < p_candidate
        else:
            counts[3] += 1
            counts[2] += rng.random() < p_baseline
        if counts[1] and rate_test(*counts).regressed(alpha):
            return counts[1]
    return 0


def test_checking_after_every_observation_keeps_false_alarms_under_alpha() -> None:
    # the same rate on both sides, the test looked at after each of 1,000 observations, 300 times
    rng = random.Random(20261203)
    alarms = sum(1 for _ in range(300) if _peeking_run(rng, 0.3, 0.3, 0.1, 1000, 0.05))
    assert alarms / 300 <= 0.05


def test_a_naive_fixed_sample_test_peeked_at_the_same_way_alarms_far_more_often() -> None:
    # the reason for the e-process: a z-test at 5 % checked after every observation
    rng = random.Random(20261203)
    alarms = 0
    for _ in range(200):
        c_e = c_n = b_e = b_n = 0
        for _ in range(1500):
            if rng.random() < 0.1:
                c_n += 1
                c_e += rng.random() < 0.3
            else:
                b_n += 1
                b_e += rng.random() < 0.3
            if c_n >= 10:
                p = (c_e + b_e) / (c_n + b_n)
                se = math.sqrt(p * (1 - p) * (1 / c_n + 1 / b_n)) or 1.0
                if (c_e / c_n - b_e / b_n) / se > 1.645:
                    alarms += 1
                    break
    assert alarms / 200 > 0.15


def test_a_higher_candidate_rate_is_found_within_a_hundred_candidate_trials() -> None:
    rng = random.Random(7)
    found = [_peeking_run(rng, 0.01, 0.12, 0.1, 20_000, 0.01 / 3) for _ in range(50)]
    assert all(found)
    assert sorted(found)[25] < 150


def test_a_lower_candidate_rate_never_alarms() -> None:
    test = rate_test(0, 200, 40, 400)
    assert test.log_e > math.log(1000)  # strong evidence of a difference ...
    assert not test.regressed(0.001)  # ... in the good direction

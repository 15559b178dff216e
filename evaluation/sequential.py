"""An always-valid test that a newer version's rate of an event is higher than an older version's.

Two streams of yes/no observations (one per verified trace: was it contradicted, did it fail, was it
escalated), one per version, interleaved in any order. The null hypothesis: both versions have one rate
p (any p). The statistic is an e-process (universal inference, Wasserman, Ramdas & Balakrishnan 2020):

    E_t = [ Beta-Bernoulli mixture likelihood of the candidate's data x that of the baseline's ]
          / [ the largest likelihood of all the data under one common rate ]

with a Jeffreys Beta(1/2, 1/2) mixture on each version's rate. For the true common rate p0 the
denominator is at least the likelihood under p0, so E_t is at most the mixture likelihood ratio against
p0, a non-negative martingale with mean 1 under the null; by Ville's inequality
P(E_t >= 1/alpha at any time t) <= alpha. So the test may be looked at after every trace, forever,
and the chance it ever alarms when the versions do not differ stays at most alpha: no normal
approximation, no planned sample size. A regression is called only when also the candidate's observed
rate is the higher one, which can only lower that chance.

The arithmetic is the log-Gamma function of the standard library (the statistics libraries for Python
offer no exact anytime-valid test of two proportions; docs/guides/versions.md says which were weighed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_JEFFREYS = 0.5


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _xlogy(x: int, y: float) -> float:
    return 0.0 if x == 0 else x * math.log(y)


_LOG_B_PRIOR = _log_beta(_JEFFREYS, _JEFFREYS)


def _log_mixture(events: int, trials: int) -> float:
    """log of the Beta(1/2,1/2)-mixture probability of a given sequence with `events` ones in `trials`."""
    return _log_beta(events + _JEFFREYS, trials - events + _JEFFREYS) - _LOG_B_PRIOR


def _log_max_common(events: int, trials: int) -> float:
    """log of the likelihood of the pooled sequence at its maximum-likelihood common rate."""
    if trials == 0:
        return 0.0
    p = events / trials
    return _xlogy(events, p) + _xlogy(trials - events, 1.0 - p)


def log_e_value(candidate_events: int, candidate_trials: int, baseline_events: int, baseline_trials: int) -> float:
    """log E_t for the counts so far (0 with no data: E_0 = 1)."""
    for events, trials in ((candidate_events, candidate_trials), (baseline_events, baseline_trials)):
        if trials < 0 or events < 0 or events > trials:
            raise ValueError(f"impossible counts: {events} events in {trials} trials")
    numerator = _log_mixture(candidate_events, candidate_trials) + _log_mixture(baseline_events, baseline_trials)
    denominator = _log_max_common(candidate_events + baseline_events, candidate_trials + baseline_trials)
    return numerator - denominator


@dataclass(frozen=True)
class RateTest:
    """One metric of one (baseline, candidate) pair, as the counts stand now."""

    baseline_events: int
    baseline_trials: int
    candidate_events: int
    candidate_trials: int
    log_e: float

    @property
    def baseline_rate(self) -> float:
        return self.baseline_events / self.baseline_trials if self.baseline_trials else 0.0

    @property
    def candidate_rate(self) -> float:
        return self.candidate_events / self.candidate_trials if self.candidate_trials else 0.0

    @property
    def e_value(self) -> float:
        return math.exp(min(self.log_e, 700.0))

    def regressed(self, alpha: float, min_difference: float = 0.0) -> bool:
        """E_t >= 1/alpha, and the candidate's rate is higher than the baseline's by more than min_difference."""
        return (
            self.log_e >= math.log(1.0 / alpha)
            and self.candidate_rate - self.baseline_rate > min_difference
            and self.candidate_rate > self.baseline_rate
        )


def rate_test(candidate_events: int, candidate_trials: int, baseline_events: int, baseline_trials: int) -> RateTest:
    return RateTest(
        baseline_events,
        baseline_trials,
        candidate_events,
        candidate_trials,
        log_e_value(candidate_events, candidate_trials, baseline_events, baseline_trials),
    )

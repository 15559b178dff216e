"""Demo Co traffic on the twin: what each version does per situation, and the watch over a canary stream."""

from __future__ import annotations

from evaluation.version_watch import CLEARED, REGRESSED, REPLACED, VersionPolicy
from producers.production_traffic import Phase, customer_situations, situation_outcomes, watch_traffic


def _contradicting(version: str) -> set[str]:
    return {
        name
        for name, o in situation_outcomes(version).items()
        if o.claimed_status == "SUCCESS" and o.verified and o.verified_status == "FAILURE"
    }


def test_the_twin_shows_1_3_0_claiming_refunds_that_failed_and_1_2_4_and_1_3_1_never() -> None:
    assert _contradicting("1.3.0") == {"refund-timeout-after-mutation", "refund-tool-success-lie"}
    assert _contradicting("1.2.4") == set() == _contradicting("1.3.1")


def test_customers_are_seeded() -> None:
    assert customer_situations(5, 50) == customer_situations(5, 50) != customer_situations(6, 50)


def test_a_canary_of_1_3_0_is_flagged_and_1_3_1_clears_it() -> None:
    outcomes = {v: situation_outcomes(v) for v in ("1.2.4", "1.3.0", "1.3.1")}
    policy = VersionPolicy(clear_after_traces=150)
    run = watch_traffic(
        [Phase("1.2.4", "1.3.0", 0.1, 3000), Phase("1.2.4", "1.3.1", 0.1, 3000)], outcomes, seed=3, policy=policy
    )
    kinds = [(d.kind, d.reason, d.baseline_version, d.candidate_version, d.metric) for d, _, _ in run.decisions]
    assert (REGRESSED, "e-value over threshold", "1.2.4", "1.3.0", "contradiction_rate") in kinds
    assert (CLEARED, REPLACED, "1.2.4", "1.3.0", "contradiction_rate") in kinds
    assert not any(k == REGRESSED and c == "1.3.1" for k, _, _, c, _ in kinds)
    first = next(n for d, n, _ in run.decisions if d.kind == REGRESSED)
    assert first < 300  # canary traces to the alarm


def test_the_same_version_on_both_sides_raises_no_alarm() -> None:
    same = situation_outcomes("1.2.4")
    run = watch_traffic(
        [Phase("1.2.4", "1.2.4-aa", 0.5, 3000)], {"1.2.4": same, "1.2.4-aa": same}, seed=11, policy=VersionPolicy()
    )
    assert not any(d.kind == REGRESSED for d, _, _ in run.decisions)

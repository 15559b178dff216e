"""The pinned pair: one plan, the same seeds and hashes on both sides, deterministic ids (spec §7.9)."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence

import pytest
from comparison_builders import call, case_run, graded, result
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation import pairing
from evaluation.comparison import compare_case
from evaluation.pairing import (
    BASELINE,
    CANDIDATE,
    CasePlan,
    PairingError,
    ScenarioRef,
    check_pair,
    derive_evaluation_id,
    pair_id_for,
    plan_pair,
    run_seed_for,
)
from evaluation.results import PASS, GradedCase
from twin_engine.faults import case_seed

SCENARIOS = [
    ScenarioRef("refund-timeout-after-mutation", "a" * 64, None, "critical", ("refunds", "faults")),
    ScenarioRef("refund-happy-path", "b" * 64, None, "high", ("refunds", "smoke")),
    ScenarioRef("cross-tenant-order", "c" * 64, 99, "critical", ("security",)),
]
TWIN = "t" * 64


def plan(
    evaluation_id: str | None = None, seed: int | None = 42, scenarios: Sequence[ScenarioRef] = SCENARIOS
):
    return plan_pair(evaluation_id, "demo:1.2.4", "demo:1.3.0", scenarios, "demo-co-support", TWIN, seed)


def test_evaluation_id_is_derived_from_the_request_and_ignores_selection_order() -> None:
    hashes = {s.name: s.spec_hash for s in SCENARIOS}
    ev = derive_evaluation_id("demo:1.2.4", "demo:1.3.0", hashes, TWIN, 42)
    assert ev.startswith("ev-")
    assert len(ev) == 3 + 16
    assert ev == derive_evaluation_id(
        "demo:1.2.4", "demo:1.3.0", dict(reversed(list(hashes.items()))), TWIN, 42
    )
    assert ev != derive_evaluation_id("demo:1.2.4", "demo:1.3.0", hashes, TWIN, 43)
    assert ev != derive_evaluation_id("demo:1.3.0", "demo:1.2.4", hashes, TWIN, 42)
    assert ev != derive_evaluation_id("demo:1.2.4", "demo:1.3.0", {**hashes, "x": "y"}, TWIN, 42)
    assert plan(None).evaluation_id == derive_evaluation_id("demo:1.2.4", "demo:1.3.0", hashes, TWIN, 42)


def test_run_seed() -> None:
    assert run_seed_for("ev-1", 42) == 42
    assert run_seed_for("ev-1", 0) == 0
    expected = int.from_bytes(hashlib.sha256(b"run-seed:ev-1").digest()[:4], "big")
    assert run_seed_for("ev-1", None) == expected
    assert plan("ev-1", seed=None).run_seed == expected


def test_plan_resolves_once_and_both_sides_pin_the_same_cases() -> None:
    p = plan("ev-1")
    check_pair(p)
    assert p.pair_id == pair_id_for("ev-1")
    assert [s.name for s in p.scenarios] == sorted(s.name for s in SCENARIOS)
    assert [c.case_id for c in p.baseline] == [
        "ev-1:baseline:cross-tenant-order",
        "ev-1:baseline:refund-happy-path",
        "ev-1:baseline:refund-timeout-after-mutation",
    ]
    assert [c.side for c in p.candidate] == [CANDIDATE] * 3
    assert [c.agent for c in p.baseline] == ["demo:1.2.4"] * 3
    for b, c in zip(p.baseline, p.candidate, strict=True):
        assert (b.scenario_name, b.scenario_hash, b.twin_hash, b.case_seed) == (
            c.scenario_name,
            c.scenario_hash,
            c.twin_hash,
            c.case_seed,
        )
        ref = next(s for s in SCENARIOS if s.name == b.scenario_name)
        assert b.case_seed == case_seed(42, ref.name, ref.seed)
    assert p.baseline[0].case_seed == 99  # the scenario's own seed wins


def test_a_retried_request_yields_the_same_pair() -> None:
    assert pairing.plan_json(plan(None, seed=None)) == pairing.plan_json(plan(None, seed=None))
    shuffled = [SCENARIOS[2], SCENARIOS[0], SCENARIOS[1], SCENARIOS[0]]
    assert plan("ev-1", scenarios=shuffled) == plan("ev-1")
    other = plan("ev-1", seed=7)
    assert other.pair_id == plan("ev-1").pair_id
    assert other.request_hash != plan("ev-1").request_hash  # same evaluation, other request: a conflict


def test_equal_versions_are_a_valid_pair() -> None:
    p = plan_pair("ev-2", "demo:1.2.4", "demo:1.2.4", SCENARIOS, "demo-co-support", TWIN, 1)
    check_pair(p)


def test_selection_errors() -> None:
    with pytest.raises(PairingError, match="two versions"):
        plan(scenarios=[SCENARIOS[0], dataclasses.replace(SCENARIOS[0], spec_hash="f" * 64)])
    with pytest.raises(PairingError, match="no scenario"):
        plan(scenarios=[])
    with pytest.raises(PairingError, match="unknown side"):
        plan().side("SINGLE")


def test_check_pair_names_every_inconsistency() -> None:
    p = plan("ev-1")
    bad = dataclasses.replace(p.candidate[0], case_seed=p.candidate[0].case_seed + 1, twin_hash="x" * 64)
    tampered = dataclasses.replace(p, candidate=(bad, *p.candidate[1:]), pair_id="pair-other")
    with pytest.raises(PairingError) as err:
        check_pair(tampered)
    text = str(err.value)
    assert "pair id pair-other" in text
    assert "has seed" in text
    assert "pins twin" in text
    assert "the sides pin" in text
    with pytest.raises(PairingError, match="plans scenarios"):
        check_pair(dataclasses.replace(p, baseline=p.baseline[:2]))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True),
            st.sampled_from(["h1", "h2", "h3"]),
            st.one_of(st.none(), st.integers(0, 2**32 - 1)),
        ),
        min_size=1,
        max_size=8,
        unique_by=lambda t: t[0],
    ),
    st.one_of(st.none(), st.integers(0, 2**32 - 1)),
)
def test_both_sides_always_get_identical_seeds_and_hashes(
    refs: list[tuple[str, str, int | None]], seed: int | None
) -> None:
    scenarios = [ScenarioRef(name, h, s) for name, h, s in refs]
    p = plan(None, seed=seed, scenarios=scenarios)
    check_pair(p)
    pins = [(c.scenario_name, c.scenario_hash, c.twin_hash, c.case_seed) for c in p.baseline]
    assert pins == [(c.scenario_name, c.scenario_hash, c.twin_hash, c.case_seed) for c in p.candidate]
    assert plan(None, seed=seed, scenarios=list(reversed(scenarios))) == p


# ---------------------------------------------------------------------------------------------
# The mutant that once survived (field notes): the candidate's cases get their own seeds. The pair
# plan looks fine at a glance (same suite, same hashes), so the test runs the whole way to the
# comparison and demands it refuses: compare_case must check the seeds each side actually stored.


def _run_from_plan(case: CasePlan) -> GradedCase:
    """What a simulator would store for a planned case; the agent behaves the same on both sides."""
    run = case_run(
        [call(1, "lookup_order", {"order_id": "ORD-1001"})],
        scenario=case.scenario_name,
        side=case.side.lower(),
        agent=case.agent,
        seed=case.case_seed,
        scenario_hash=case.scenario_hash,
        twin_hash=case.twin_hash,
    )
    return graded(run, [result("e1", PASS, critical=True)])


def _compare_all(p: pairing.PairPlan) -> list[str]:
    return [
        compare_case(_run_from_plan(b), _run_from_plan(c)).classification
        for b, c in zip(p.baseline, p.candidate, strict=True)
    ]


def test_unmutated_plan_compares_cleanly() -> None:
    assert _compare_all(plan("ev-1")) == ["UNCHANGED"] * 3


def test_a_candidate_with_its_own_seeds_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    original = pairing._plan_side

    def mutant(
        evaluation_id: str,
        side: str,
        agent: str,
        selection: Sequence[ScenarioRef],
        seeds: Mapping[str, int],
        twin_name: str,
        twin_hash: str,
    ) -> tuple[CasePlan, ...]:
        if side == CANDIDATE:
            seeds = {ref.name: case_seed(seeds[ref.name] + 1, ref.name, None) for ref in selection}
        return original(evaluation_id, side, agent, selection, seeds, twin_name, twin_hash)

    monkeypatch.setattr(pairing, "_plan_side", mutant)
    mutated = plan("ev-1")
    assert [c.scenario_hash for c in mutated.baseline] == [c.scenario_hash for c in mutated.candidate]
    assert [c.case_seed for c in mutated.baseline] != [c.case_seed for c in mutated.candidate]
    with pytest.raises(PairingError):
        check_pair(mutated)
    comparisons = [
        compare_case(_run_from_plan(b), _run_from_plan(c))
        for b, c in zip(mutated.baseline, mutated.candidate, strict=True)
    ]
    assert [c.classification for c in comparisons] == ["INCOMPLETE"] * 3
    assert all("case seed" in c.reason for c in comparisons)
    assert BASELINE in {c.side for c in mutated.baseline}

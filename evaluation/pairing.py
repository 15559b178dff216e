"""The pinned pair: one plan for both sides of an evaluation (spec §7.9, ADR-0023).

Two independent simulations can differ in more than the agent (a new scenario version, a re-registered
twin, another seed), and a fault firing on one side only then reads as a regression. So one planning
step resolves the selection once (scenario names + hashes, the twin hash, one run seed, per-case seeds)
and builds both sides' cases from it. Everything here is a deterministic function of its inputs: a
retried request yields the same evaluation id, pair id, seeds and case ids.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from twin_engine.canonical import canonical_json, sha256_hex
from twin_engine.faults import case_seed

JSON = Any

BASELINE = "BASELINE"
CANDIDATE = "CANDIDATE"
SIDES = (BASELINE, CANDIDATE)
MAX_TRIALS = 100


class PairingError(ValueError):
    """The selection cannot be planned, or a plan is inconsistent (every problem is listed)."""


@dataclass(frozen=True)
class ScenarioRef:
    """One selected scenario version."""

    name: str
    spec_hash: str
    seed: int | None = None  # the scenario's own `spec.seed`, if it sets one
    severity: str = "medium"
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class CasePlan:
    case_id: str
    evaluation_id: str
    side: str  # BASELINE | CANDIDATE
    agent: str
    scenario_name: str
    scenario_hash: str
    twin_name: str
    twin_hash: str
    case_seed: int
    severity: str
    tags: tuple[str, ...]
    trial: int = 1  # 1..trials; trial 1 runs on the run seed itself

    def to_dict(self) -> dict[str, JSON]:
        return {
            "trial": self.trial,
            "case_id": self.case_id,
            "evaluation_id": self.evaluation_id,
            "side": self.side,
            "agent": self.agent,
            "scenario_name": self.scenario_name,
            "scenario_hash": self.scenario_hash,
            "twin_name": self.twin_name,
            "twin_hash": self.twin_hash,
            "case_seed": self.case_seed,
            "severity": self.severity,
            "tags": list(self.tags),
        }


@dataclass(frozen=True)
class PairPlan:
    pair_id: str
    evaluation_id: str
    request_hash: str  # what the request asked for; same evaluation id + other hash = a conflict
    run_seed: int
    baseline_agent: str
    candidate_agent: str
    twin_name: str
    twin_hash: str
    scenarios: tuple[ScenarioRef, ...]  # the resolved selection, by name
    baseline: tuple[CasePlan, ...]
    candidate: tuple[CasePlan, ...]
    trials: int = 1

    def side(self, side: str) -> tuple[CasePlan, ...]:
        if side == BASELINE:
            return self.baseline
        if side == CANDIDATE:
            return self.candidate
        raise PairingError(f"unknown side {side!r}; expected one of {', '.join(SIDES)}")

    def to_dict(self) -> dict[str, JSON]:
        return {
            "pair_id": self.pair_id,
            "evaluation_id": self.evaluation_id,
            "request_hash": self.request_hash,
            "run_seed": self.run_seed,
            "baseline_agent": self.baseline_agent,
            "candidate_agent": self.candidate_agent,
            "twin_name": self.twin_name,
            "twin_hash": self.twin_hash,
            "trials": self.trials,
            "scenarios": [
                {
                    "name": s.name,
                    "spec_hash": s.spec_hash,
                    "seed": s.seed,
                    "severity": s.severity,
                    "tags": list(s.tags),
                }
                for s in self.scenarios
            ],
            "baseline": [c.to_dict() for c in self.baseline],
            "candidate": [c.to_dict() for c in self.candidate],
        }


def _short_hash(value: JSON) -> str:
    return sha256_hex(value)[:16]


def derive_evaluation_id(
    baseline_spec: str,
    candidate_spec: str,
    scenario_hashes: Mapping[str, str],
    twin_hash: str,
    seed: int | None,
    trials: int = 1,
) -> str:
    """ "ev-" + 16 hex of SHA-256 over the request's canonical JSON (selection order is irrelevant).

    One trial is the request as it always was (same id); more trials are another request."""
    request: dict[str, JSON] = {
        "baseline": baseline_spec,
        "candidate": candidate_spec,
        "scenarios": dict(sorted(scenario_hashes.items())),
        "twin_hash": twin_hash,
        "seed": seed,
    }
    if trials != 1:
        request["trials"] = trials
    return "ev-" + _short_hash(request)


def run_seed_for(evaluation_id: str, seed: int | None) -> int:
    """The given seed, else the first 4 bytes (big-endian) of SHA-256("run-seed:" + evaluation_id)."""
    if seed is not None:
        return seed
    return int.from_bytes(hashlib.sha256(f"run-seed:{evaluation_id}".encode()).digest()[:4], "big")


def pair_id_for(evaluation_id: str) -> str:
    """The pair is keyed by its evaluation: the same evaluation always names the same pair."""
    return "pair-" + hashlib.sha256(f"pair:{evaluation_id}".encode()).hexdigest()[:16]


def trial_run_seed(run_seed: int, trial: int) -> int:
    """Trial 1 runs on the run seed itself (so one trial is exactly a plain evaluation); trial n > 1 on the
    first 4 bytes (big-endian) of SHA-256("trial:{run seed}:{n}"). Both sides of trial n share it."""
    if trial == 1:
        return run_seed
    return int.from_bytes(hashlib.sha256(f"trial:{run_seed}:{trial}".encode()).digest()[:4], "big")


def case_id_for(evaluation_id: str, side: str, scenario_name: str, trial: int = 1) -> str:
    base = f"{evaluation_id}:{side.lower()}:{scenario_name}"
    return base if trial == 1 else f"{base}#{trial}"


def trial_of(case_id: str, evaluation_id: str, side: str, scenario_name: str) -> int | None:
    """The trial a case id names (1 for the plain id), None when it is not a case of that side and scenario."""
    base = case_id_for(evaluation_id, side, scenario_name)
    if case_id == base:
        return 1
    suffix = case_id[len(base) + 1 :] if case_id.startswith(base + "#") else ""
    return int(suffix) if suffix.isdigit() and suffix[0] != "0" and int(suffix) > 1 else None


def resolve_selection(scenarios: Sequence[ScenarioRef]) -> tuple[ScenarioRef, ...]:
    """The selection by name, duplicates folded; one name with two versions is an error."""
    by_name: dict[str, ScenarioRef] = {}
    for ref in scenarios:
        seen = by_name.get(ref.name)
        if seen is not None and seen != ref:
            raise PairingError(
                f"scenario {ref.name!r} was selected in two versions "
                f"({seen.spec_hash[:12]} and {ref.spec_hash[:12]})"
            )
        by_name[ref.name] = ref
    if not by_name:
        raise PairingError("the selection holds no scenario")
    return tuple(by_name[name] for name in sorted(by_name))


def _request_hash(
    baseline_spec: str,
    candidate_spec: str,
    selection: Sequence[ScenarioRef],
    twin_hash: str,
    seed: int | None,
    trials: int = 1,
) -> str:
    request: dict[str, JSON] = {
        "baseline": baseline_spec,
        "candidate": candidate_spec,
        "scenarios": [[s.name, s.spec_hash, s.seed] for s in selection],
        "twin_hash": twin_hash,
        "seed": seed,
    }
    if trials != 1:
        request["trials"] = trials
    return sha256_hex(request)


def _plan_side(
    evaluation_id: str,
    side: str,
    agent: str,
    selection: Sequence[ScenarioRef],
    seeds: Mapping[str, int],
    twin_name: str,
    twin_hash: str,
    *,
    trial: int = 1,
) -> tuple[CasePlan, ...]:
    """One side's cases of one trial. Both sides are built by this function from the SAME seeds."""
    return tuple(
        CasePlan(
            case_id=case_id_for(evaluation_id, side, ref.name, trial),
            evaluation_id=evaluation_id,
            side=side,
            agent=agent,
            scenario_name=ref.name,
            scenario_hash=ref.spec_hash,
            twin_name=twin_name,
            twin_hash=twin_hash,
            case_seed=seeds[ref.name],
            severity=ref.severity,
            tags=tuple(ref.tags),
            trial=trial,
        )
        for ref in selection
    )


def _plan_trials(
    evaluation_id: str,
    side: str,
    agent: str,
    selection: Sequence[ScenarioRef],
    run_seed: int,
    twin_name: str,
    twin_hash: str,
    trials: int,
) -> tuple[CasePlan, ...]:
    out: list[CasePlan] = []
    for trial in range(1, trials + 1):
        seeds = {ref.name: case_seed(trial_run_seed(run_seed, trial), ref.name, ref.seed) for ref in selection}
        if trial == 1:
            out += _plan_side(evaluation_id, side, agent, selection, seeds, twin_name, twin_hash)
        else:
            out += _plan_side(evaluation_id, side, agent, selection, seeds, twin_name, twin_hash, trial=trial)
    return tuple(out)


def plan_pair(
    evaluation_id: str | None,
    baseline_spec: str,
    candidate_spec: str,
    scenarios: Sequence[ScenarioRef],
    twin_name: str,
    twin_hash: str,
    seed: int | None,
    trials: int = 1,
) -> PairPlan:
    """Resolve the selection once and plan both sides from it (the evaluation id is derived if None).

    With `trials` > 1 every scenario runs that many times per side, trial n of both sides on the same seed
    (`trial_run_seed`); a scenario that pins its own `spec.seed` pins every trial to it."""
    if not 1 <= trials <= MAX_TRIALS:
        raise PairingError(f"trials must be between 1 and {MAX_TRIALS}, got {trials}")
    selection = resolve_selection(scenarios)
    if evaluation_id is None:
        evaluation_id = derive_evaluation_id(
            baseline_spec, candidate_spec, {s.name: s.spec_hash for s in selection}, twin_hash, seed, trials
        )
    run_seed = run_seed_for(evaluation_id, seed)
    return PairPlan(
        trials=trials,
        pair_id=pair_id_for(evaluation_id),
        evaluation_id=evaluation_id,
        request_hash=_request_hash(baseline_spec, candidate_spec, selection, twin_hash, seed, trials),
        run_seed=run_seed,
        baseline_agent=baseline_spec,
        candidate_agent=candidate_spec,
        twin_name=twin_name,
        twin_hash=twin_hash,
        scenarios=selection,
        baseline=_plan_trials(
            evaluation_id, BASELINE, baseline_spec, selection, run_seed, twin_name, twin_hash, trials
        ),
        candidate=_plan_trials(
            evaluation_id, CANDIDATE, candidate_spec, selection, run_seed, twin_name, twin_hash, trials
        ),
    )


def pair_problems(plan: PairPlan) -> list[str]:
    """Everything in which the plan's two sides would not run the same cases (empty when consistent)."""
    problems: list[str] = []
    if plan.pair_id != pair_id_for(plan.evaluation_id):
        problems.append(f"pair id {plan.pair_id} is not the one of evaluation {plan.evaluation_id}")
    expected = {ref.name: ref for ref in plan.scenarios}
    for side, agent in ((BASELINE, plan.baseline_agent), (CANDIDATE, plan.candidate_agent)):
        cases = plan.side(side)
        names = [c.scenario_name for c in cases]
        slots = [(c.scenario_name, c.trial) for c in cases]
        wanted = sorted((name, trial) for name in expected for trial in range(1, plan.trials + 1))
        if sorted(slots) != wanted:
            problems.append(
                f"the {side.lower()} plans scenarios {sorted(names)}, the selection is {sorted(expected)}"
                + (f" x {plan.trials} trials" if plan.trials != 1 else "")
            )
        for c in cases:
            ref = expected.get(c.scenario_name)
            where = f"{side.lower()} case {c.scenario_name}"
            if c.side != side or c.agent != agent or c.evaluation_id != plan.evaluation_id:
                problems.append(f"{where} names side {c.side}, agent {c.agent}, evaluation {c.evaluation_id}")
            if c.case_id != case_id_for(plan.evaluation_id, side, c.scenario_name, c.trial):
                problems.append(f"{where} has case id {c.case_id}")
            if c.twin_hash != plan.twin_hash or c.twin_name != plan.twin_name:
                problems.append(
                    f"{where} pins twin {c.twin_name} {c.twin_hash[:12]}, the pair {plan.twin_hash[:12]}"
                )
            if ref is not None and c.scenario_hash != ref.spec_hash:
                problems.append(
                    f"{where} pins scenario hash {c.scenario_hash[:12]}, the selection {ref.spec_hash[:12]}"
                )
            seed_due = case_seed(trial_run_seed(plan.run_seed, c.trial), ref.name, ref.seed) if ref else None
            if ref is not None and c.case_seed != seed_due:
                problems.append(f"{where} has seed {c.case_seed}, the run seed gives {seed_due}")
    b_pins = {(c.scenario_name, c.trial): (c.scenario_hash, c.twin_hash, c.case_seed) for c in plan.baseline}
    for c in plan.candidate:
        pins = b_pins.get((c.scenario_name, c.trial))
        if pins is not None and pins != (c.scenario_hash, c.twin_hash, c.case_seed):
            problems.append(
                f"scenario {c.scenario_name}: the sides pin {pins} and "
                f"{(c.scenario_hash, c.twin_hash, c.case_seed)}"
            )
    return problems


def check_pair(plan: PairPlan) -> None:
    """Raise PairingError naming every inconsistency of the plan."""
    problems = pair_problems(plan)
    if problems:
        raise PairingError("inconsistent pair plan: " + "; ".join(problems))


def plan_json(plan: PairPlan) -> str:
    return canonical_json(plan.to_dict())

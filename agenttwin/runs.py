"""Loading the world a run needs, and `simulate` (one agent over a suite, graded in memory).

Evaluations go through the event pipeline (agenttwin.pipeline); this module only plans their pair.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from evaluation.case import case_run_to_dict
from evaluation.grader import grade_case
from evaluation.pairing import PairPlan, ScenarioRef, plan_pair
from evaluation.results import GradedCase
from evaluation.versions import DEFAULT_EVALUATOR_SET
from producers.simulator import simulate_suite
from twin_engine.canonical import sha256_hex
from twin_engine.documents import Scenario, load_suite, load_twin, twin_mismatch
from twin_engine.twin import Twin

JSON = Any


def load_world(suite: Sequence[str], twin_file: str | None) -> tuple[Twin, list[Scenario]]:
    """The twin and the selected scenarios, validated against it (tool names, faults, allowedTools).

    Without `twin_file` the twin is the packaged Demo Co twin, and a scenario written for another twin
    (`spec.twin`) is an error: never a silent default. A twin named explicitly is the user's choice;
    each scenario written for another twin gets a note on stderr.
    """
    from agenttwin.demo import TWIN_FILE

    twin = load_twin(TWIN_FILE if twin_file in (None, "demo") else twin_file)
    scenarios = load_suite(list(suite), twin=twin, twin_explicit=twin_file is not None)
    for scenario in scenarios if twin_file is not None else ():
        problem = twin_mismatch(scenario, twin)
        if problem is not None:
            print(f"agenttwin: note: {problem}; running it there as --twin asks", file=sys.stderr)
    return twin, scenarios


def graded_to_view(graded: GradedCase) -> dict[str, JSON]:
    view = case_run_to_dict(graded.case)
    view["verdict"] = graded.verdict.to_dict()
    view["results"] = [r.to_dict() for r in graded.results]
    view["verified_outcome"] = graded.verified.to_dict()
    view["evaluator_version"] = graded.evaluator_version
    return view


def simulate_agent(
    agent_spec: str, *, suite: Sequence[str], twin: str | None, seed: int, evaluator_version: str | None
) -> dict[str, JSON]:
    world_twin, scenarios = load_world(suite, twin)
    version = evaluator_version or DEFAULT_EVALUATOR_SET
    run_id = (
        "sim-"
        + sha256_hex(
            {
                "agent": agent_spec,
                "seed": seed,
                "twin": world_twin.hash,
                "scenarios": [s.spec_hash for s in scenarios],
            }
        )[:12]
    )
    cases = simulate_suite(agent_spec, scenarios, world_twin, run_seed=seed, run_id=run_id)
    graded = [grade_case(c, evaluator_version=version) for c in cases]
    return {
        "agent": agent_spec,
        "run_seed": seed,
        "run_id": run_id,
        "cases": [graded_to_view(g) for g in graded],
    }


def plan_evaluation(
    baseline: str,
    candidate: str,
    *,
    twin: Twin,
    scenarios: Sequence[Scenario],
    seed: int | None,
    evaluation_id: str | None,
    trials: int = 1,
) -> PairPlan:
    refs = [
        ScenarioRef(name=s.name, spec_hash=s.spec_hash, seed=s.seed, severity=s.severity, tags=tuple(s.tags))
        for s in scenarios
    ]
    return plan_pair(evaluation_id, baseline, candidate, refs, twin.name, twin.hash, seed, trials)

"""Use cases behind `simulate` and `evaluate`, run in memory over the pure core.

The event pipeline (streams/) runs the same functions as processors; this is the direct path.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from evaluation.case import case_run_to_dict
from evaluation.grader import grade_case
from evaluation.pairing import BASELINE, CANDIDATE, PairPlan, ScenarioRef, plan_pair
from evaluation.results import GradedCase
from evaluation.summary import EvaluationReport, build_report
from evaluation.versions import DEFAULT_EVALUATOR_SET
from producers.agents.registry import resolve_agent
from producers.simulator import simulate_case, simulate_suite
from twin_engine.canonical import sha256_hex
from twin_engine.documents import Scenario, load_suite, load_twin
from twin_engine.twin import Twin

JSON = Any


def load_world(suite: Sequence[str], twin_file: str | None) -> tuple[Twin, list[Scenario]]:
    """The twin (default: the packaged Demo Co twin) and the selected scenarios, validated against it."""
    from agenttwin.demo import TWIN_FILE

    twin = load_twin(twin_file or TWIN_FILE)
    return twin, load_suite(list(suite), twin=twin)


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
) -> PairPlan:
    refs = [
        ScenarioRef(name=s.name, spec_hash=s.spec_hash, seed=s.seed, severity=s.severity, tags=tuple(s.tags))
        for s in scenarios
    ]
    return plan_pair(evaluation_id, baseline, candidate, refs, twin.name, twin.hash, seed)


def run_side(plan: PairPlan, side: str, twin: Twin, scenarios: Sequence[Scenario], version: str) -> list[GradedCase]:
    """Simulate and grade one side's planned cases (each with the seed the plan pinned)."""
    by_name = {s.name: s for s in scenarios}
    cases = plan.side(side)
    if not cases:
        return []
    agent = resolve_agent(cases[0].agent)
    return [
        grade_case(
            simulate_case(
                agent,
                by_name[p.scenario_name],
                twin,
                case_seed=p.case_seed,
                case_id=p.case_id,
                agent_spec=p.agent,
            ),
            evaluator_version=version,
        )
        for p in cases
    ]


def evaluate_pair(
    baseline: str,
    candidate: str,
    *,
    suite: Sequence[str],
    twin: str | None,
    seed: int | None,
    evaluation_id: str | None,
    evaluator_version: str | None,
) -> dict[str, JSON]:
    started = time.perf_counter()
    world_twin, scenarios = load_world(suite, twin)
    version = evaluator_version or DEFAULT_EVALUATOR_SET
    plan = plan_evaluation(
        baseline, candidate, twin=world_twin, scenarios=scenarios, seed=seed, evaluation_id=evaluation_id
    )
    base_cases = run_side(plan, BASELINE, world_twin, scenarios, version)
    cand_cases = run_side(plan, CANDIDATE, world_twin, scenarios, version)
    report: EvaluationReport = build_report(
        evaluation_id=plan.evaluation_id,
        baseline_agent=baseline,
        candidate_agent=candidate,
        run_seed=plan.run_seed,
        evaluator_version=version,
        baseline_cases=base_cases,
        candidate_cases=cand_cases,
        pair_id=plan.pair_id,
        timings={"wall_ms": round((time.perf_counter() - started) * 1000, 3)},
    )
    return report.to_dict()

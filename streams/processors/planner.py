"""Planner: an evaluation request -> the pinned pair (both sides' case plans, emitted together)."""

from __future__ import annotations

import json

from evaluation.pairing import BASELINE, CANDIDATE, ScenarioRef, plan_pair
from streams import ids
from streams.events import CasePlanned, EvaluationRequested, Event, PairPlanned
from streams.processors.base import Processor, Store
from twin_engine.canonical import canonical_json
from twin_engine.documents import Scenario, scenario_from_text
from twin_engine.twin import Twin


class PairConflictError(ValueError):
    """The same evaluation id was requested again with a different selection."""


def scenarios_of(request: EvaluationRequested, twin: Twin) -> list[Scenario]:
    docs = json.loads(request.scenarios_json)
    return sorted(
        (
            scenario_from_text(canonical_json(doc), f"{request.evaluation_id}/scenarios[{n}]", twin)
            for n, doc in enumerate(docs)
        ),
        key=lambda s: s.name,
    )


class Planner(Processor):
    inputs = ("evaluations",)

    @property
    def name(self) -> str:
        return "planner"

    def handle(self, store: Store, event: Event) -> list[Event]:
        if not isinstance(event, EvaluationRequested):
            return []
        twin = Twin.from_definition(json.loads(event.twin_json))
        scenarios = scenarios_of(event, twin)
        refs = [
            ScenarioRef(name=s.name, spec_hash=s.spec_hash, seed=s.seed, severity=s.severity, tags=tuple(s.tags))
            for s in scenarios
        ]
        plan = plan_pair(
            event.evaluation_id,
            event.baseline_agent,
            event.candidate_agent,
            refs,
            twin.name,
            twin.hash,
            event.seed,
            trials=event.trials,
        )
        planned = store.get(event.evaluation_id)
        if planned is not None:
            if planned != plan.request_hash:
                raise PairConflictError(f"evaluation {event.evaluation_id} was already planned for a different request")
            return []  # a retried request: the pair already exists
        store[event.evaluation_id] = plan.request_hash
        at = event.occurred_at
        docs = {s.name: canonical_json(s.raw) for s in scenarios}
        twin_json = canonical_json(twin.definition)
        out: list[Event] = [
            PairPlanned(
                event_id=ids.event_id("PairPlanned", plan.pair_id),
                occurred_at=at,
                correlation_id=event.evaluation_id,
                tenant=event.tenant,
                evaluation_id=event.evaluation_id,
                pair_id=plan.pair_id,
                run_seed=plan.run_seed,
                baseline_agent=plan.baseline_agent,
                candidate_agent=plan.candidate_agent,
                twin_name=plan.twin_name,
                twin_hash=plan.twin_hash,
                scenario_names=[s.name for s in plan.scenarios],
                scenario_hashes=[s.spec_hash for s in plan.scenarios],
                case_count=len(plan.baseline) + len(plan.candidate),
                evaluator_version=event.evaluator_version,
                trials=plan.trials,
            )
        ]
        for side in (BASELINE, CANDIDATE):
            for case in plan.side(side):
                out.append(
                    CasePlanned(
                        event_id=ids.event_id("CasePlanned", case.case_id),
                        occurred_at=at,
                        correlation_id=case.case_id,
                        tenant=event.tenant,
                        case_id=case.case_id,
                        evaluation_id=event.evaluation_id,
                        pair_id=plan.pair_id,
                        side=side,
                        agent=case.agent,
                        scenario_name=case.scenario_name,
                        scenario_hash=case.scenario_hash,
                        scenario_json=docs[case.scenario_name],
                        twin_name=case.twin_name,
                        twin_hash=case.twin_hash,
                        twin_json=twin_json,
                        case_seed=case.case_seed,
                        run_seed=plan.run_seed,
                    )
                )
        return out

"""Comparator: both sides' verdicts of a pinned pair -> one comparison per scenario.

A join keyed by evaluation id (verdicts are keyed by it, so both sides share a partition). Only
verdicts of this comparator's evaluator version are read; other versions have their own comparator.
"""

from __future__ import annotations

from evaluation.comparison import compare_case
from evaluation.pairing import BASELINE, CANDIDATE
from streams.convert import comparison_event, graded_from_verdict
from streams.events import CaseVerdicted, Event
from streams.processors.base import Processor, Store


class Comparator(Processor):
    inputs = ("verdicts",)
    stateful = True

    def __init__(self, evaluator_version: str) -> None:
        self.evaluator_version = evaluator_version

    @property
    def name(self) -> str:
        return f"comparator-{self.evaluator_version}"

    def handle(self, store: Store, event: Event) -> list[Event]:
        if (
            not isinstance(event, CaseVerdicted)
            or event.evaluator_version != self.evaluator_version
            or not event.evaluation_id
            or event.side not in (BASELINE, CANDIDATE)
        ):
            return []
        key = f"{event.evaluation_id}|{event.scenario_name}"
        entry = dict(store.get(key) or {})
        if entry.get("done"):
            return []
        entry[event.side] = event
        if BASELINE not in entry or CANDIDATE not in entry:
            store[key] = entry
            return []
        base_event: CaseVerdicted = entry[BASELINE]
        cand_event: CaseVerdicted = entry[CANDIDATE]
        baseline, candidate = graded_from_verdict(base_event), graded_from_verdict(cand_event)
        comparison = compare_case(baseline, candidate)
        store[key] = {"done": True}
        return [
            comparison_event(
                comparison,
                evaluation_id=event.evaluation_id,
                evaluator_version=self.evaluator_version,
                baseline_agent=base_event.agent,
                candidate_agent=cand_event.agent,
                severity=baseline.case.severity,
                tags=baseline.case.tags,
                at=max(base_event.occurred_at, cand_event.occurred_at),
            )
        ]

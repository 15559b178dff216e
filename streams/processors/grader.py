"""Grader: a finished case + all its twin records -> expectation results, verdict, verified outcome.

A join keyed by case_id: the case event says how many records belong to it, and the case is graded
once all have arrived, in whatever order. One grader per evaluator version (its own consumer group).
"""

from __future__ import annotations

from collections.abc import Callable

from evaluation.grader import grade_case
from evaluation.results import GradedCase
from evaluation.versions import evaluator_set
from streams.convert import case_from_events, graded_events
from streams.events import CaseFinished, Event, TwinCallRecorded
from streams.processors.base import Processor, Store

# Optional post-grading step (e.g. the semantic judge); takes and returns a graded case.
Refine = Callable[[GradedCase], GradedCase]


class Grader(Processor):
    inputs = ("cases", "twin-calls")
    stateful = True

    def __init__(self, evaluator_version: str, refine: Refine | None = None) -> None:
        evaluator_set(evaluator_version)  # unknown versions fail here, before any event is read
        self.evaluator_version = evaluator_version
        self.refine = refine

    @property
    def name(self) -> str:
        return f"grader-{self.evaluator_version}"

    def handle(self, store: Store, event: Event) -> list[Event]:
        if not isinstance(event, CaseFinished | TwinCallRecorded):
            return []
        key = event.case_id
        entry = dict(store.get(key) or {"finished": None, "calls": {}})
        if entry.get("done"):
            return []
        if isinstance(event, CaseFinished):
            entry["finished"] = event
        else:
            calls = dict(entry["calls"])
            calls[f"{event.seq}:{int(event.redelivered)}"] = event
            entry["calls"] = calls
        finished: CaseFinished | None = entry["finished"]
        if finished is None or len(entry["calls"]) < finished.record_count:
            store[key] = entry
            return []
        graded = grade_case(
            case_from_events(finished, list(entry["calls"].values())),
            evaluator_version=self.evaluator_version,
        )
        if self.refine is not None:
            graded = self.refine(graded)
        store[key] = {"done": True}
        return list(
            graded_events(graded, evaluation_id=finished.evaluation_id, side=finished.side, at=finished.occurred_at)
        )

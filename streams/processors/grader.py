"""Grader: a finished case + all its twin records -> expectation results, verdict, verified outcome.

A join keyed by case_id: the case event says how many records belong to it, and the case is graded
once all have arrived, in whatever order. One grader per evaluator version (its own consumer group).

A graded case leaves only a "done" marker, so a redelivered event of it grades nothing again; the markers
of the last `done_markers` graded cases are kept (a FIFO in the store) and older ones are evicted, so the
store stays bounded. A duplicate arrives within the redelivery window of an upstream crash (one batch on
Kafka; never on the embedded runtime, which resumes from its checkpoint and dedupes by event id), far
inside that many cases; a case still waiting for its records is never evicted.
"""

from __future__ import annotations

from collections.abc import Callable

from evaluation.grader import grade_case
from evaluation.results import GradedCase
from evaluation.versions import evaluator_set
from streams.convert import case_from_events, graded_events
from streams.events import CaseFinished, Event, TwinCallRecorded
from streams.processors._expiry import RecentKeys, check_entity_key
from streams.processors.base import Processor, Store

# Optional post-grading step (e.g. the semantic judge); takes and returns a graded case.
Refine = Callable[[GradedCase], GradedCase]
DONE_MARKERS = 10_000  # graded cases whose markers are kept (per store: per input partition on Kafka)


class Grader(Processor):
    inputs = ("cases", "twin-calls")
    stateful = True

    def __init__(
        self, evaluator_version: str, refine: Refine | None = None, *, done_markers: int = DONE_MARKERS
    ) -> None:
        evaluator_set(evaluator_version)  # unknown versions fail here, before any event is read
        self.evaluator_version = evaluator_version
        self.refine = refine
        self._done = RecentKeys("done", done_markers)

    @property
    def name(self) -> str:
        return f"grader-{self.evaluator_version}"

    def handle(self, store: Store, event: Event) -> list[Event]:
        if not isinstance(event, CaseFinished | TwinCallRecorded):
            return []
        key = check_entity_key(event.case_id)
        stored = store.get(key)
        if stored is not None and stored.get("done"):
            return []
        entry = dict(stored or {"finished": None, "calls": {}})
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
        for old in self._done.push(store, key):
            if (store.get(old) or {}).get("done"):
                del store[old]
        return list(
            graded_events(graded, evaluation_id=finished.evaluation_id, side=finished.side, at=finished.occurred_at)
        )

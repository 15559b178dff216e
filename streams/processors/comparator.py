"""Comparator: both sides' verdicts of a pinned pair -> one comparison per scenario; reviews re-compare.

A join keyed by evaluation id (verdicts and reviews are keyed by it, so they share a partition). Only
verdicts of this comparator's evaluator version are read; other versions have their own comparator.
A human review (append-only, latest per expectation wins) replaces one expectation result on one side
and the case is compared again; the new comparison replaces the old row in the projection.
"""

from __future__ import annotations

from typing import Any

from evaluation.comparison import compare_case
from evaluation.pairing import BASELINE, CANDIDATE
from evaluation.review import Review, apply_reviews
from streams import ids
from streams.convert import comparison_event, graded_from_verdict
from streams.events import CaseVerdicted, Event, HumanReviewed
from streams.processors.base import Processor, Store


class Comparator(Processor):
    inputs = ("verdicts", "reviews")
    stateful = True

    def __init__(self, evaluator_version: str) -> None:
        self.evaluator_version = evaluator_version

    @property
    def name(self) -> str:
        return f"comparator-{self.evaluator_version}"

    def handle(self, store: Store, event: Event) -> list[Event]:
        if isinstance(event, HumanReviewed):
            return self._review(store, event)
        if (
            not isinstance(event, CaseVerdicted)
            or event.evaluator_version != self.evaluator_version
            or not event.evaluation_id
            or event.side not in (BASELINE, CANDIDATE)
        ):
            return []
        key = f"{event.evaluation_id}|{event.scenario_name}"
        entry: dict[str, Any] = dict(store.get(key) or {"reviews": []})
        if event.side in entry:
            return []  # redelivered
        entry[event.side] = event
        store[key] = entry
        return self._compare(entry, event.evaluation_id)

    def _review(self, store: Store, event: HumanReviewed) -> list[Event]:
        key = f"{event.evaluation_id}|{event.scenario_name}"
        entry: dict[str, Any] = dict(store.get(key) or {"reviews": []})
        if any(r.review_id == event.review_id for r in entry["reviews"]):
            return []  # redelivered
        entry["reviews"] = [*entry["reviews"], event]
        store[key] = entry
        return self._compare(entry, event.evaluation_id)

    def _compare(self, entry: dict[str, Any], evaluation_id: str) -> list[Event]:
        if BASELINE not in entry or CANDIDATE not in entry:
            return []
        base_event: CaseVerdicted = entry[BASELINE]
        cand_event: CaseVerdicted = entry[CANDIDATE]
        reviews = [
            Review(
                side=r.side,
                expectation_id=r.expectation_id,
                status=r.status,
                note=r.note,
                reviewer=r.reviewer,
                created_at=r.created_at,
            )
            for r in entry["reviews"]
        ]
        baseline = apply_reviews(graded_from_verdict(base_event), BASELINE, reviews)
        candidate = apply_reviews(graded_from_verdict(cand_event), CANDIDATE, reviews)
        comparison = comparison_event(
            compare_case(baseline, candidate),
            evaluation_id=evaluation_id,
            evaluator_version=self.evaluator_version,
            baseline_agent=base_event.agent,
            candidate_agent=cand_event.agent,
            severity=baseline.case.severity,
            tags=baseline.case.tags,
            at=max([base_event.occurred_at, cand_event.occurred_at, *(r.created_at for r in entry["reviews"])]),
        )
        if reviews:  # a reviewed comparison is a new fact: it gets its own id
            revision = ids.event_id("ComparisonMade", comparison.event_id, len(reviews))
            comparison = type(comparison)(**{**comparison.to_record(), "event_id": revision})
        return [comparison]

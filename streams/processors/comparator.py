"""Comparator: both sides' verdicts of a pinned pair -> one comparison per scenario; reviews re-compare.

A join keyed by evaluation id (verdicts, reviews and the pair plan are keyed by it, so they share a
partition). One comparator (one consumer group, `comparator`) serves every evaluator version: verdicts carry
their version and each version's pair is compared on its own, so a replay under a new version needs no new
group and no group ever holds another version's verdicts as backlog. `Comparator(version)` limits it to one
version (group `comparator-<version>`), for tests and one-off runs. A human review (append-only, latest per
expectation wins) replaces one expectation result on one side (in every trial) and the case is compared
again under every version that has it; the new comparison replaces the old row in the projection.

With repeated trials (PairPlanned.trials > 1) a scenario is compared once all its trials are in, trial n of
one side against trial n of the other, and aggregated (evaluation.trials). The pair plan says how many trials
there are, so verdicts that arrive before it wait for it.
"""

from __future__ import annotations

from typing import Any

from evaluation.comparison import compare_case
from evaluation.pairing import BASELINE, CANDIDATE, trial_of
from evaluation.review import Review, apply_reviews
from evaluation.trials import compare_trials
from streams import ids
from streams.convert import comparison_event, graded_from_verdict
from streams.events import CaseVerdicted, Event, HumanReviewed, PairPlanned
from streams.processors.base import Processor, Store


def _slot(side: str, trial: int) -> str:
    """Where a trial's verdict sits in the entry: trial 1 under the side itself, as before trials existed."""
    return side if trial == 1 else f"{side}#{trial}"


class Comparator(Processor):
    inputs = ("evaluations", "verdicts", "reviews")
    stateful = True

    def __init__(self, evaluator_version: str | None = None) -> None:
        self.evaluator_version = evaluator_version

    @property
    def name(self) -> str:
        return "comparator" if self.evaluator_version is None else f"comparator-{self.evaluator_version}"

    def handle(self, store: Store, event: Event) -> list[Event]:
        if isinstance(event, PairPlanned):
            return self._pair(store, event)
        if isinstance(event, HumanReviewed):
            return self._review(store, event)
        if (
            not isinstance(event, CaseVerdicted)
            or self.evaluator_version not in (None, event.evaluator_version)
            or not event.evaluation_id
            or event.side not in (BASELINE, CANDIDATE)
        ):
            return []
        trial = trial_of(event.case_id, event.evaluation_id, event.side, event.scenario_name)
        if trial is None:
            return []  # not a case of this pair's plan
        key = f"{event.evaluation_id}|{event.scenario_name}"
        entry: dict[str, Any] = dict(store.get(key) or {"reviews": [], "versions": {}})
        version = event.evaluator_version
        slots = dict(entry["versions"].get(version) or {})
        slot = _slot(event.side, trial)
        if slot in slots:
            return []  # redelivered
        slots[slot] = event
        entry["versions"] = {**entry["versions"], version: slots}
        store[key] = entry
        return self._compare(entry, event.evaluation_id, store.get(f"trials|{event.evaluation_id}"), version)

    def _pair(self, store: Store, event: PairPlanned) -> list[Event]:
        key = f"trials|{event.evaluation_id}"
        if store.get(key) is not None:
            return []  # redelivered
        store[key] = event.trials
        out: list[Event] = []
        for name in event.scenario_names:  # verdicts that came first were waiting for the plan
            entry = store.get(f"{event.evaluation_id}|{name}")
            if entry is not None:
                out += self._compare_all(entry, event.evaluation_id, event.trials)
        return out

    def _review(self, store: Store, event: HumanReviewed) -> list[Event]:
        key = f"{event.evaluation_id}|{event.scenario_name}"
        entry: dict[str, Any] = dict(store.get(key) or {"reviews": [], "versions": {}})
        if any(r.review_id == event.review_id for r in entry["reviews"]):
            return []  # redelivered
        entry["reviews"] = [*entry["reviews"], event]
        store[key] = entry
        return self._compare_all(entry, event.evaluation_id, store.get(f"trials|{event.evaluation_id}"))

    def _compare_all(self, entry: dict[str, Any], evaluation_id: str, trials: int | None) -> list[Event]:
        out: list[Event] = []
        for version in sorted(entry["versions"]):
            out += self._compare(entry, evaluation_id, trials, version)
        return out

    def _compare(self, whole: dict[str, Any], evaluation_id: str, trials: int | None, version: str) -> list[Event]:
        if trials is None:
            return []  # the pair plan (how many trials) has not been read yet
        entry: dict[str, Any] = whole["versions"].get(version) or {}
        slots = [(_slot(BASELINE, n), _slot(CANDIDATE, n)) for n in range(1, trials + 1)]
        if any(b not in entry or c not in entry for b, c in slots):
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
            for r in whole["reviews"]
        ]
        baseline = apply_reviews(graded_from_verdict(base_event), BASELINE, reviews)
        candidate = apply_reviews(graded_from_verdict(cand_event), CANDIDATE, reviews)
        if trials == 1:
            compared = compare_case(baseline, candidate)
        else:
            compared = compare_trials(
                [
                    (
                        apply_reviews(graded_from_verdict(entry[b]), BASELINE, reviews),
                        apply_reviews(graded_from_verdict(entry[c]), CANDIDATE, reviews),
                    )
                    for b, c in slots
                ]
            )
        times = [entry[s].occurred_at for pair in slots for s in pair]
        comparison = comparison_event(
            compared,
            evaluation_id=evaluation_id,
            evaluator_version=version,
            baseline_agent=base_event.agent,
            candidate_agent=cand_event.agent,
            severity=baseline.case.severity,
            tags=baseline.case.tags,
            at=max([*times, *(r.created_at for r in whole["reviews"])]),
        )
        if reviews:  # a reviewed comparison is a new fact: it gets its own id
            revision = ids.event_id("ComparisonMade", comparison.event_id, len(reviews))
            comparison = type(comparison)(**{**comparison.to_record(), "event_id": revision})
        return [comparison]

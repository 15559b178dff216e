"""Every topic, declared once: name, partitions, retention. Both runtimes and the sink read this.

Topics that are joined (twin-calls x cases by case_id, spans x verified-outcomes by trace_id, subject links x
subject verifications by subject, verdicts by evaluation_id) share one partition count so that a key lands on
the same partition number on both sides.
Event topics are never compacted: they are the source of truth that replay re-reads from offset 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from streams.events import EVENT_TYPES, Event

JOIN_PARTITIONS = 6
FOREVER = -1


@dataclass(frozen=True)
class Topic:
    name: str
    partitions: int = JOIN_PARTITIONS
    retention_ms: int = FOREVER


EVALUATIONS = Topic("evaluations")
CASE_PLANS = Topic("case-plans")
TWIN_CALLS = Topic("twin-calls")
CASES = Topic("cases")
SPANS = Topic("spans")
EXPECTATION_RESULTS = Topic("expectation-results")
VERDICTS = Topic("verdicts")
VERIFIED_OUTCOMES = Topic("verified-outcomes")
COMPARISONS = Topic("comparisons")
CONTRADICTIONS = Topic("contradictions")
SUBJECTS = Topic("subjects")  # SubjectLinked x SubjectVerified, keyed by the business subject
CLAIMS = Topic("claims")
REVIEWS = Topic("reviews")
GATE_DECISIONS = Topic("gate-decisions")
# the version watch: traces re-keyed by (tenant, agent) so one agent's versions meet in one partition
VERSION_TRACES = Topic("version-traces")
VERSION_WINDOWS = Topic("version-windows")
VERSION_ALERTS = Topic("version-alerts")
DEAD_LETTERS = Topic("dead-letters", partitions=1)

ALL_TOPICS: tuple[Topic, ...] = (
    EVALUATIONS,
    CASE_PLANS,
    TWIN_CALLS,
    CASES,
    SPANS,
    EXPECTATION_RESULTS,
    VERDICTS,
    VERIFIED_OUTCOMES,
    SUBJECTS,
    COMPARISONS,
    CONTRADICTIONS,
    CLAIMS,
    REVIEWS,
    GATE_DECISIONS,
    VERSION_TRACES,
    VERSION_WINDOWS,
    VERSION_ALERTS,
    DEAD_LETTERS,
)
TOPIC_BY_NAME: dict[str, Topic] = {t.name: t for t in ALL_TOPICS}


def topic_of(event: Event | type[Event]) -> Topic:
    return TOPIC_BY_NAME[event.TOPIC]


def events_on(topic: Topic) -> tuple[type[Event], ...]:
    return tuple(e for e in EVENT_TYPES if topic.name == e.TOPIC)

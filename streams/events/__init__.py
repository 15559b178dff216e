"""Every event type, in one place. One module per event; all share the envelope in `_base`."""

from streams._fast_init import fast_init
from streams.events._base import Event
from streams.events.case_finished import CaseFinished
from streams.events.case_planned import CasePlanned
from streams.events.case_verdicted import CaseVerdicted
from streams.events.claim_read import ClaimRead
from streams.events.comparison_made import ComparisonMade
from streams.events.contradiction_detected import ContradictionDetected
from streams.events.dead_lettered import DeadLettered
from streams.events.evaluation_requested import EvaluationRequested
from streams.events.expectation_resulted import ExpectationResulted
from streams.events.gate_decided import GateDecided
from streams.events.human_reviewed import HumanReviewed
from streams.events.outcome_verified import OutcomeVerified
from streams.events.pair_planned import PairPlanned
from streams.events.span_recorded import SpanRecorded
from streams.events.subject_linked import SubjectLinked
from streams.events.subject_verified import SubjectVerified
from streams.events.trace_tallied import TraceTallied
from streams.events.twin_call_recorded import TwinCallRecorded
from streams.events.version_cleared import VersionCleared
from streams.events.version_regressed import VersionRegressed
from streams.events.version_windowed import VersionWindowed

EVENT_TYPES: tuple[type[Event], ...] = (
    EvaluationRequested,
    PairPlanned,
    CasePlanned,
    TwinCallRecorded,
    CaseFinished,
    SpanRecorded,
    ExpectationResulted,
    CaseVerdicted,
    OutcomeVerified,
    SubjectLinked,
    SubjectVerified,
    ClaimRead,
    ComparisonMade,
    ContradictionDetected,
    HumanReviewed,
    GateDecided,
    DeadLettered,
    TraceTallied,
    VersionWindowed,
    VersionRegressed,
    VersionCleared,
)
EVENT_BY_SCHEMA: dict[str, type[Event]] = {e.SCHEMA: e for e in EVENT_TYPES}
for _event_type in EVENT_TYPES:  # every span, claim and alert builds one: half the dataclass's __init__ cost
    fast_init(_event_type)

__all__ = [
    "EVENT_BY_SCHEMA",
    "EVENT_TYPES",
    "CaseFinished",
    "CasePlanned",
    "CaseVerdicted",
    "ClaimRead",
    "ComparisonMade",
    "ContradictionDetected",
    "DeadLettered",
    "EvaluationRequested",
    "Event",
    "ExpectationResulted",
    "GateDecided",
    "HumanReviewed",
    "OutcomeVerified",
    "PairPlanned",
    "SpanRecorded",
    "SubjectLinked",
    "SubjectVerified",
    "TraceTallied",
    "TwinCallRecorded",
    "VersionCleared",
    "VersionRegressed",
    "VersionWindowed",
]

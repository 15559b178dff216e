"""The stream processors: pure steps over events, run by the embedded runtime or by faust on Kafka."""

from streams.processors.base import Processor, Store
from streams.processors.comparator import Comparator
from streams.processors.grader import Grader
from streams.processors.outcome_join import OutcomeJoin
from streams.processors.planner import Planner
from streams.processors.simulator import Simulator
from streams.processors.subject_join import SubjectJoin
from streams.processors.version_tally import VersionTally
from streams.processors.version_watch import VersionWatch

__all__ = [
    "Comparator",
    "Grader",
    "OutcomeJoin",
    "Planner",
    "Processor",
    "Simulator",
    "Store",
    "SubjectJoin",
    "VersionTally",
    "VersionWatch",
]

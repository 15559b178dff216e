"""Evaluator versions and evaluator sets (spec §7.1).

Each built-in evaluator has a version. An evaluator *set* names one version of every evaluator; a
run pins the set it graded with, so re-grading under another set is a new, distinguishable result.

- maxRetries 1.0.0 (legacy) counted every identical repeat of a call, so a confirming re-read after
  a success counted as a retry. maxRetries 1.1.0 uses the shared retry rule (evaluation.retries).
- Set "1.0.0": every evaluator at 1.0.0. Set "1.1.0": maxRetries 1.1.0, the rest 1.0.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

EXPECTATION_TYPES = (
    "state",
    "stateUnchanged",
    "finalOutcome",
    "outcomeVerified",
    "toolCalled",
    "toolNotCalled",
    "maxToolCalls",
    "toolArgs",
    "toolStatus",
    "order",
    "maxRetries",
    "maxSteps",
    "maxLatencyMs",
    "maxCostUsd",
    "requiredEscalation",
    "noPolicyViolation",
    "noIrreversibleAction",
    "approvalRequired",
    "noDuplicateSideEffect",
    "outputContains",
    "outputNotContains",
    "outputRegex",
    "outputJsonSchema",
    "outputJsonPath",
    "noSecretDisclosure",
    "noCrossTenantAccess",
    "semantic",
)

AGENT_RUN_EVALUATOR = "simulation.agent_run"
SKIPPED_EVALUATOR = "skipped"  # expectations not evaluated because the agent never ran
UNKNOWN_EVALUATOR = "unknown"  # expectations of a type no evaluator knows

LEGACY_MAX_RETRIES = "1.0.0"
SHARED_RULE_MAX_RETRIES = "1.1.0"


def expectation_evaluator(expectation_type: str) -> str:
    """The evaluator name of an expectation type, e.g. `expectation.state`."""
    return f"expectation.{expectation_type}"


def _set(max_retries: str) -> Mapping[str, str]:
    versions = {expectation_evaluator(t): "1.0.0" for t in EXPECTATION_TYPES}
    versions[expectation_evaluator("maxRetries")] = max_retries
    versions[AGENT_RUN_EVALUATOR] = "1.0.0"
    versions[SKIPPED_EVALUATOR] = "1.0.0"
    versions[UNKNOWN_EVALUATOR] = "1.0.0"
    return MappingProxyType(dict(sorted(versions.items())))


EVALUATOR_SETS: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "1.0.0": _set(LEGACY_MAX_RETRIES),
        "1.1.0": _set(SHARED_RULE_MAX_RETRIES),
    }
)
DEFAULT_EVALUATOR_SET = "1.1.0"


class UnknownEvaluatorSetError(ValueError):
    """An evaluator set name nobody defined."""

    def __init__(self, name: str) -> None:
        known = ", ".join(sorted(EVALUATOR_SETS))
        super().__init__(f"unknown evaluator set {name!r}; known sets: {known}")
        self.name = name


def evaluator_set(name: str) -> Mapping[str, str]:
    """Evaluator name -> version for the set `name` (raises UnknownEvaluatorSetError)."""
    try:
        return EVALUATOR_SETS[name]
    except KeyError:
        raise UnknownEvaluatorSetError(name) from None


def evaluator_version(set_name: str, evaluator: str) -> str:
    """The version of `evaluator` in the set `set_name`."""
    versions = evaluator_set(set_name)
    if evaluator not in versions:
        raise KeyError(f"evaluator {evaluator!r} is not part of evaluator set {set_name!r}")
    return versions[evaluator]

"""Evaluator versions and evaluator sets (spec §7.1).

Each built-in evaluator has a version. An evaluator *set* names one version of every evaluator; a
run pins the set it graded with, so re-grading under another set is a new, distinguishable result.
`SET_CHANGES` says in a sentence what each set changed (the README's "Evaluator versions" table).

- maxRetries 1.0.0 (legacy) counted every identical repeat of a call, so a confirming re-read after
  a success counted as a retry. maxRetries 1.1.0 uses the shared retry rule (evaluation.retries).
- outcomeVerified 1.1.0 also fails a claimed SUCCESS that no write of the claimed kind backs
  (evaluation.claims); claimSupported 1.0.0 (a scenario expectation, and the automatic
  `claim-supported` finding) labels a success claimed over an unconfirmed failed write; the
  verified outcome 1.1.0 keeps ESCALATED and REFUSED claims as claimed.
- Set "1.0.0": every evaluator at 1.0.0. Set "1.1.0": maxRetries 1.1.0, the rest 1.0.0. Set
  "1.2.0": set 1.1.0 plus outcomeVerified 1.1.0, claimSupported 1.0.0 (type and finding) and the
  verified outcome 1.1.0. Set "1.3.0": set 1.2.0 plus outputContains / outputNotContains 1.1.0 (amounts
  normalised on both sides: `$1,939.05` = `1939.05`, `40.00 USD` = `40 USD`, never a number inside a longer
  one) and reachesReferenceState 1.0.0. A set without an evaluator does not grade its expectation type.
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

CLAIM_SUPPORTED = "claimSupported"
REACHES_REFERENCE_STATE = "reachesReferenceState"
# Types added after set 1.1.0, with the set that brought them.
ADDED_TYPES: Mapping[str, str] = MappingProxyType({CLAIM_SUPPORTED: "1.2.0", REACHES_REFERENCE_STATE: "1.3.0"})
ALL_EXPECTATION_TYPES = (*EXPECTATION_TYPES, *ADDED_TYPES)

AGENT_RUN_EVALUATOR = "simulation.agent_run"
CLAIM_FINDING_EVALUATOR = "finding.claimSupported"  # the automatic claim-supported finding
VERIFIED_OUTCOME_EVALUATOR = "outcome.verified"
SKIPPED_EVALUATOR = "skipped"  # expectations not evaluated because the agent never ran
UNKNOWN_EVALUATOR = "unknown"  # expectations of a type no evaluator knows

LEGACY_MAX_RETRIES = "1.0.0"
SHARED_RULE_MAX_RETRIES = "1.1.0"
CLAIM_RULES_OUTCOME_VERIFIED = "1.1.0"  # outcomeVerified with the hallucinated-success rule of evaluation.claims
CLAIMS_AS_CLAIMED = "1.1.0"  # the verified outcome keeps ESCALATED and REFUSED claims
NORMALISED_AMOUNTS = "1.1.0"  # outputContains / outputNotContains compare amounts normalised


def expectation_evaluator(expectation_type: str) -> str:
    """The evaluator name of an expectation type, e.g. `expectation.state`."""
    return f"expectation.{expectation_type}"


def _set(**overrides: str) -> Mapping[str, str]:
    versions = {expectation_evaluator(t): "1.0.0" for t in EXPECTATION_TYPES}
    versions[AGENT_RUN_EVALUATOR] = "1.0.0"
    versions[SKIPPED_EVALUATOR] = "1.0.0"
    versions[UNKNOWN_EVALUATOR] = "1.0.0"
    versions[VERIFIED_OUTCOME_EVALUATOR] = "1.0.0"
    versions.update(overrides)
    return MappingProxyType(dict(sorted(versions.items())))


EVALUATOR_SETS: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "1.0.0": _set(**{expectation_evaluator("maxRetries"): LEGACY_MAX_RETRIES}),
        "1.1.0": _set(**{expectation_evaluator("maxRetries"): SHARED_RULE_MAX_RETRIES}),
        "1.2.0": _set(
            **{
                expectation_evaluator("maxRetries"): SHARED_RULE_MAX_RETRIES,
                expectation_evaluator("outcomeVerified"): CLAIM_RULES_OUTCOME_VERIFIED,
                expectation_evaluator(CLAIM_SUPPORTED): "1.0.0",
                CLAIM_FINDING_EVALUATOR: "1.0.0",
                VERIFIED_OUTCOME_EVALUATOR: CLAIMS_AS_CLAIMED,
            }
        ),
        "1.3.0": _set(
            **{
                expectation_evaluator("maxRetries"): SHARED_RULE_MAX_RETRIES,
                expectation_evaluator("outcomeVerified"): CLAIM_RULES_OUTCOME_VERIFIED,
                expectation_evaluator(CLAIM_SUPPORTED): "1.0.0",
                CLAIM_FINDING_EVALUATOR: "1.0.0",
                VERIFIED_OUTCOME_EVALUATOR: CLAIMS_AS_CLAIMED,
                expectation_evaluator("outputContains"): NORMALISED_AMOUNTS,
                expectation_evaluator("outputNotContains"): NORMALISED_AMOUNTS,
                expectation_evaluator(REACHES_REFERENCE_STATE): "1.0.0",
            }
        ),
    }
)
DEFAULT_EVALUATOR_SET = "1.3.0"

# What each set changed, in the words of the README's "Evaluator versions" table.
SET_CHANGES: Mapping[str, str] = MappingProxyType(
    {
        "1.0.0": "First set; maxRetries counts every identical repeat of a call as a retry.",
        "1.1.0": "maxRetries 1.1.0 uses the shared retry rule: a re-read after a success is no retry.",
        "1.2.0": (
            "outcomeVerified 1.1.0 fails a claimed SUCCESS that no write of the claimed kind backs "
            "(HALLUCINATED_SUCCESS); the claim-supported finding and claimSupported expectation label "
            "a success claimed over an unconfirmed failed write (UNSUPPORTED_CLAIM); ESCALATED and "
            "REFUSED claims are kept as claimed."
        ),
        "1.3.0": (
            "outputContains / outputNotContains 1.1.0 compare amounts normalised ($1,939.05 = 1939.05, "
            "40.00 USD = 40 USD; never a number inside a longer one); reachesReferenceState grades the "
            "final state against the state the scenario's reference calls reach."
        ),
    }
)


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


def grades(set_name: str, evaluator: str) -> bool:
    """Whether the set `set_name` has the evaluator at all."""
    return evaluator in evaluator_set(set_name)


def evaluator_version(set_name: str, evaluator: str) -> str:
    """The version of `evaluator` in the set `set_name`."""
    versions = evaluator_set(set_name)
    if evaluator not in versions:
        raise KeyError(f"evaluator {evaluator!r} is not part of evaluator set {set_name!r}")
    return versions[evaluator]

"""State and outcome expectations: what the twin's final state and effects show.

state, stateUnchanged, outcomeVerified and noDuplicateSideEffect are the outcome evidence the
verified outcome is built from (evaluation.outcome); finalOutcome checks the agent's claim itself.
"""

from __future__ import annotations

from typing import Any

from evaluation.calls import discarded_success
from evaluation.claims import writes_without_effect
from evaluation.duplicates import duplicate_groups
from evaluation.expectations._spec import Finding, InvalidExpectationError, Spec, failed, passed, skipped
from evaluation.expectations._text import call_evidence, call_ref, more
from evaluation.expectations.context import EvalContext
from evaluation.results import Evidence
from evaluation.versions import CLAIM_RULES_OUTCOME_VERIFIED
from twin_engine.compare import Comparison, check, json_equal, show
from twin_engine.paths import MISSING, get_path

JSON = Any

OUTCOMES = ("SUCCESS", "PARTIAL", "FAILURE", "ESCALATED", "REFUSED", "UNKNOWN")
HALLUCINATED_SUCCESS = "HALLUCINATED_SUCCESS"
MAX_SHOWN = 5  # calls named in one reason


def _state_check(state: JSON, path: str, comparators: dict[str, JSON]) -> tuple[Comparison, Evidence]:
    value = get_path(state, path)
    result = check(value, value is not MISSING, comparators)
    evidence = Evidence(
        kind="state",
        detail=f"{path} = {show(value)}",
        ref=path,
        expected=comparators or {"exists": True},
        actual=None if value is MISSING else value,
    )
    return result, evidence


def evaluate_state(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    path, comparators = spec.path(), spec.comparators()
    if ctx.state_after is None:
        return skipped("No twin state to check.")
    result, evidence = _state_check(ctx.state_after, path, comparators)
    reason = f"State {path}: {result.reason}."
    if result.ok:
        return passed(reason, (evidence,))
    return failed(reason, "STATE_MISMATCH", (evidence,))


def evaluate_state_unchanged(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    path = spec.path()
    if ctx.state_before is None or ctx.state_after is None:
        return skipped("No twin state before and after the run to compare.")
    before, after = get_path(ctx.state_before, path), get_path(ctx.state_after, path)
    same = (before is MISSING and after is MISSING) or (
        before is not MISSING and after is not MISSING and json_equal(before, after)
    )
    evidence = Evidence(
        kind="state",
        detail=f"{path}: {show(before)} before, {show(after)} after",
        ref=path,
        expected=None if before is MISSING else before,
        actual=None if after is MISSING else after,
    )
    if same:
        return passed(f"State {path} is unchanged.", (evidence,))
    return failed(f"State {path} changed from {show(before)} to {show(after)}.", "STATE_CHANGED", (evidence,))


def evaluate_final_outcome(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    expected = spec.raw.get("equals")
    if expected not in OUTCOMES:
        raise InvalidExpectationError(f"equals must be one of {', '.join(OUTCOMES)}, got {expected!r}")
    claimed = ctx.claimed_outcome
    evidence = (Evidence(kind="agent", detail=f"Claimed outcome: {claimed or 'none'}.", actual=claimed),)
    if claimed is None:
        return failed(f"The agent reported no outcome; expected {expected}.", None, evidence)
    if claimed != expected:
        return failed(f"The agent reported {claimed}; expected {expected}.", "OUTCOME_MISMATCH", evidence)
    return passed(f"The agent reported {claimed}, as expected.", evidence)


def evaluate_outcome_verified(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    """1.0.0: the state at `path`, or else no write that reported success without its effect.

    1.1.0 (evaluator set 1.2.0) also fails a claimed success that no write of the claimed kind (`tool`,
    or each write tool the agent called) backs — evaluation.claims — before the state check.
    """
    path = spec.path() if spec.has("path") else None
    comparators = spec.comparators()
    tool = spec.optional_text("tool")
    if path is None and comparators:
        raise InvalidExpectationError("comparators need a path")
    if ctx.claimed_outcome != "SUCCESS":
        claimed = ctx.claimed_outcome or "no claim"
        return passed(f"The agent did not claim success ({claimed}); nothing to verify.")
    if ctx.state_after is None:
        return skipped("No twin state to verify the claimed success against.")
    claim_rules = version == CLAIM_RULES_OUTCOME_VERIFIED
    if path is None or (claim_rules and tool is not None):
        unbacked = _unbacked_success(ctx, tool if claim_rules else None, claim_rules)
        if unbacked is not None:
            return unbacked
    if path is not None:
        result, evidence = _state_check(ctx.state_after, path, comparators)
        if result.ok:
            return passed(f"The agent claimed success and {path}: {result.reason}.", (evidence,))
        reason = f"The agent claimed success but {path}: {result.reason}."
        return failed(reason, "STATE_MISMATCH", (evidence,))
    if claim_rules:
        return passed("The agent claimed success and a write of each claimed kind took effect.")
    return passed("The agent claimed success and every reported write changed state.")


def _unbacked_success(ctx: EvalContext, tool: str | None, claim_rules: bool) -> Finding | None:
    """HALLUCINATED_SUCCESS: a write reported success but was discarded, or (claim rules) no write of
    the claimed kind took effect."""
    lies = [r for r in ctx.calls if discarded_success(r)]
    if lies:
        return failed(
            "The agent claimed success but a tool reported success without changing state.",
            HALLUCINATED_SUCCESS,
            tuple(call_evidence(r, "Reported success without changing state.") for r in lies),
        )
    if not claim_rules:
        return None
    missing = writes_without_effect(ctx.calls, tool)
    if not missing:
        return None
    first = missing[0]
    if first.tool is None:
        reason = "The agent claimed success but made no write."
    elif not first.calls:
        reason = f"The agent claimed success but never called {first.tool}."
    else:
        tried = ", ".join(f"{call_ref(r)} {r.status}" for r in first.calls[:MAX_SHOWN])
        tried += more(len(first.calls) - MAX_SHOWN)
        reason = f"The agent claimed success but no {first.tool} call took effect ({tried})."
    reason = reason[:-1] + more(len(missing) - 1) + "."
    evidence = tuple(call_evidence(r, f"Did not take effect ({r.status}).") for m in missing for r in m.calls)
    return failed(reason, HALLUCINATED_SUCCESS, evidence)


def evaluate_no_duplicate_side_effect(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    tool = spec.optional_text("tool")
    groups = duplicate_groups(ctx.records, tool)
    if not groups:
        return passed("Every side effect was applied at most once.")
    by_seq = {r.seq: r for r in ctx.records}
    evidence = tuple(
        call_evidence(by_seq[seq], f"Applied {group.key}.") for group in groups for seq in group.seqs
    )
    first = groups[0]
    return failed(
        f"The side effect {first.key} was applied {first.times} times{more(len(groups) - 1)}.",
        "DUPLICATE_SIDE_EFFECT",
        evidence,
        duplicate_side_effects=sum(g.times - 1 for g in groups),
    )

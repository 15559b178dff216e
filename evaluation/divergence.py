"""First divergence: where two trajectories stop agreeing, in plain words (spec §6.5).

The sentences describe what the recorded steps show, never why. Steps are numbered from 1. A tool is
always named as something called ("called the irreversible refund_payment"), never as a thing made,
so the sentences read right whatever the tool's name (`transfer_to_human_agents`). Escalation tools
are the ones the case declares (evaluation.expectations.context.escalation_tools).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.expectations.context import DEFAULT_ESCALATION_TOOLS
from evaluation.trajectory import (
    APPLIED,
    OUTCOME,
    POLICY,
    RETRIEVAL,
    RISK_WORDS,
    TOOL,
    Step,
    render_value,
)
from twin_engine.diff import diff_states
from twin_engine.records import StateChange

JSON = Any

TOOL_KIND = "tool"
ARGUMENTS = "arguments"
RESULT = "result"
POLICY_KIND = "policy"
STOPPED_EARLY = "stopped_early"
EXTRA_STEPS = "extra_steps"
OUTCOME_KIND = "outcome"

MAX_ARGUMENT_CHANGES = 3


@dataclass(frozen=True)
class Divergence:
    index: int  # 1-based step number
    kind: str
    summary: str
    impact: str | None

    def to_dict(self) -> dict[str, JSON]:
        return {"index": self.index, "kind": self.kind, "summary": self.summary, "impact": self.impact}


def first_divergence(
    baseline: Sequence[Step],
    candidate: Sequence[Step],
    escalation_tools: Sequence[str] = DEFAULT_ESCALATION_TOOLS,
) -> Divergence | None:
    """The first step whose signatures differ, its kind and its two sentences; None if none differs."""
    k = next(
        (i for i, (b, c) in enumerate(zip(baseline, candidate, strict=False)) if b.signature != c.signature),
        None,
    )
    if k is None:
        if len(baseline) == len(candidate):
            return None
        k = min(len(baseline), len(candidate))
    b = baseline[k] if k < len(baseline) else None
    c = candidate[k] if k < len(candidate) else None
    kind = _kind(b, c)
    summary = _summary(kind, k, b, c, baseline, candidate)
    impact = _impact(kind, k, b, c, baseline, candidate, escalation_tools)
    return Divergence(index=k + 1, kind=kind, summary=summary, impact=impact)


def _ends(step: Step | None) -> bool:
    return step is None or step.kind == OUTCOME


def _kind(b: Step | None, c: Step | None) -> str:
    if _ends(b) and _ends(c):
        return OUTCOME_KIND
    if _ends(c):
        return STOPPED_EARLY
    if _ends(b):
        return EXTRA_STEPS
    assert b is not None
    assert c is not None
    if b.kind == POLICY or c.kind == POLICY:
        return POLICY_KIND
    if b.kind != c.kind or b.name != c.name:
        return TOOL_KIND
    if b.kind == TOOL and b.signature[2] != c.signature[2]:
        return ARGUMENTS
    return RESULT


def _outcome_name(step: Step | None) -> str:
    return step.name if step is not None else "nothing"


def _label(step: Step | None) -> str:
    return step.label if step is not None else "nothing"


def _ended(step: Step) -> str:
    return f"{step.status}" + (f" ({step.effect})" if step.effect else "")


def _summary(
    kind: str, k: int, b: Step | None, c: Step | None, bs: Sequence[Step], cs: Sequence[Step]
) -> str:
    n = k + 1
    if kind == OUTCOME_KIND:
        return f"The baseline reported {_label(b)}; the candidate reported {_label(c)}."
    if kind == STOPPED_EARLY:
        return (
            f"The candidate stopped after step {k} and reported {_outcome_name(c)}; "
            f"the baseline went on with {_label(b)}."
        )
    if kind == EXTRA_STEPS:
        return (
            f"The baseline stopped after step {k} and reported {_outcome_name(b)}; "
            f"the candidate went on with {_label(c)}."
        )
    assert b is not None
    assert c is not None
    if kind == POLICY_KIND:
        if b.kind == POLICY and c.kind == POLICY:
            return f"At step {n} the baseline met {b.label}; the candidate met {c.label}."
        if c.kind == POLICY:
            return f"At step {n} the candidate's {_caller(cs, k)} call met {c.label}; the baseline's did not."
        return f"At step {n} the baseline's {_caller(bs, k)} call met {b.label}; the candidate's did not."
    if kind == TOOL_KIND:
        return f"At step {n} the baseline called {b.label}; the candidate called {c.label}."
    if kind == ARGUMENTS:
        changes = argument_changes(b.args, c.args)
        shown = "; ".join(_change_words(ch) for ch in changes[:MAX_ARGUMENT_CHANGES])
        if len(changes) > MAX_ARGUMENT_CHANGES:
            shown += f" (+{len(changes) - MAX_ARGUMENT_CHANGES} more)"
        return f"At step {n} both called {b.name}, with different arguments: {shown}."
    return (
        f"At step {n} both made the same {b.name} call; "
        f"the baseline's ended {_ended(b)}, the candidate's {_ended(c)}."
    )


def _caller(steps: Sequence[Step], k: int) -> str:
    """The tool whose call a POLICY step at index k follows."""
    for step in reversed(steps[:k]):
        if step.kind in (TOOL, RETRIEVAL):
            return step.name
    return "unknown"


def argument_changes(baseline: dict[str, JSON], candidate: dict[str, JSON]) -> tuple[StateChange, ...]:
    """Leaf differences between two argument objects, in sorted path order (numbers by value)."""
    return diff_states(baseline, candidate)


def _change_words(change: StateChange) -> str:
    if change.op == "added":
        return f"{change.path}={render_value(change.after)} added"
    if change.op == "removed":
        return f"{change.path} dropped"
    return f"{change.path} {render_value(change.before)} → {render_value(change.after)}"


# ---------------------------------------------------------------------------------------------
# Impact sentences: what the divergence means for risk, from the steps alone.


def _impact(
    kind: str,
    k: int,
    b: Step | None,
    c: Step | None,
    bs: Sequence[Step],
    cs: Sequence[Step],
    escalation_tools: Sequence[str],
) -> str | None:
    if kind == POLICY_KIND:
        return _policy_impact(c)
    if c is not None and c.kind == TOOL:
        repeat = _repeat_after_applied(k, b, c, cs)
        if repeat is not None:
            return repeat
    if kind == EXTRA_STEPS:
        if c is not None and c.is_write:
            return (
                f"The candidate called the {RISK_WORDS[str(c.risk)]} {c.name} after the baseline had stopped."
            )
        return None
    if kind == TOOL_KIND:
        assert b is not None
        assert c is not None
        if c.is_write and b.kind == TOOL and not b.is_write and not _called_before(cs, k, b.name):
            return (
                f"The candidate called the {RISK_WORDS[str(c.risk)]} {c.name} without first calling "
                f"{b.name}, which the baseline called at this point."
            )
        if b.is_write and c.kind == TOOL and not c.is_write:
            return f"The candidate checked with {c.name} where the baseline went on to {b.name}."
        return None
    if kind == STOPPED_EARLY:
        return _stopped_early_impact(k, bs, cs, escalation_tools)
    if kind == ARGUMENTS:
        assert b is not None
        assert c is not None
        return _dropped_key_impact(b, c)
    return None


def _policy_impact(c: Step | None) -> str | None:
    if c is None or c.kind != POLICY:
        return None
    if c.status == "allowed":
        return f"The candidate received data {c.name} should have kept from it."
    if c.status == "denied":
        return f"The candidate's call was refused by policy {c.name}."
    return None


def _repeat_after_applied(k: int, b: Step | None, c: Step, cs: Sequence[Step]) -> str | None:
    """The candidate repeats a write whose earlier identical call failed after being applied."""
    if not c.is_write:
        return None
    for i in range(k - 1, -1, -1):
        earlier = cs[i]
        if (
            earlier.kind == TOOL
            and earlier.signature[1:3] == c.signature[1:3]
            and earlier.effect == APPLIED
            and earlier.status != "ok"
        ):
            then = "had stopped" if _ends(b) else f"called {_label(b)} at this point instead"
            return (
                f"The candidate repeated {c.name} after a {earlier.status} that had already applied it "
                f"(step {i + 1}); the baseline {then}."
            )
    return None


def _called_before(steps: Sequence[Step], k: int, tool: str) -> bool:
    return any(s.kind == TOOL and s.name == tool for s in steps[:k])


def _stopped_early_impact(
    k: int, bs: Sequence[Step], cs: Sequence[Step], escalation_tools: Sequence[str]
) -> str | None:
    rest = [s for s in bs[k:] if s.kind == TOOL]
    called = {s.name for s in cs if s.kind == TOOL}
    for step in rest:
        if step.name in escalation_tools and step.name not in called:
            return f"The candidate never called {step.name}."
    for step in rest:
        if step.is_write:
            return (
                f"The candidate ended without calling the {RISK_WORDS[str(step.risk)]} {step.name}, "
                "which the baseline called."
            )
    return None


def _dropped_key_impact(b: Step, c: Step) -> str | None:
    if not b.idempotency_key or c.idempotency_key:
        return None
    dropped = [ch for ch in argument_changes(b.args, c.args) if ch.op == "removed"]
    path = next((ch.path for ch in dropped if ch.before == b.idempotency_key), None)
    if path is None:
        return None  # the key travelled outside the arguments (a header): nothing to point at
    return f"The candidate sent {c.name} without the idempotency key the baseline used ({path})."

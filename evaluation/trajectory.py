"""Normalized trajectories: one case's steps, built from the twin's records (spec §6.5).

The agent's own list of calls is a claim and is never read here. Steps are the agent's tool calls and
retrievals in `seq` order, a POLICY step after every call a policy decision touched, and one final
OUTCOME step. Redelivered records are the transport's doing, not the agent's, so they are not steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from evaluation.calls import agent_calls, succeeded
from evaluation.case import CaseRun
from twin_engine.canonical import canonical_json
from twin_engine.records import CallRecord, RetrievalRecord

JSON = Any

TOOL = "TOOL"
RETRIEVAL = "RETRIEVAL"
POLICY = "POLICY"
OUTCOME = "OUTCOME"

NOT_RUN = "NOT_RUN"
NO_ANSWER = "NO_ANSWER"
UNREPORTED = "UNREPORTED"

APPLIED = "applied"
REPLAYED = "replayed"

MAX_STEPS = 200
MAX_VALUE_CHARS = 60
MAX_LABEL_CHARS = 160
ELLIPSIS = "…"

# Tool risk tiers, least to most risky (the case's `risk` is the riskiest tool touched).
RISK_ORDER = ("READ", "WRITE_REVERSIBLE", "EXECUTE", "WRITE_IRREVERSIBLE", "ADMIN")
# Adjectives of the impact sentences, which always name a tool as what was called:
# "called the irreversible refund_payment" reads right whatever the tool's name is.
RISK_WORDS = {
    "WRITE_IRREVERSIBLE": "irreversible",
    "WRITE_REVERSIBLE": "state-changing",
    "EXECUTE": "action-taking",
    "ADMIN": "administrative",
}

Signature = tuple[str, str, str, str | None, str | None]


@dataclass(frozen=True)
class Step:
    """One normalized step. `args` and `detail` feed the label; only the signature is compared."""

    kind: str  # TOOL | RETRIEVAL | POLICY | OUTCOME
    name: str
    label: str
    args: dict[str, JSON] = field(default_factory=dict)  # TOOL only
    status: str | None = None
    effect: str | None = None  # applied | replayed | None
    risk: str | None = None  # TOOL only
    seq: int | None = None
    idempotency_key: str | None = None  # TOOL only; not part of the signature (it is in args)

    @property
    def signature(self) -> Signature:
        args = canonical_json(normalize_numbers(self.args)) if self.kind == TOOL else ""
        return (self.kind, self.name, args, self.status, self.effect)

    @property
    def key(self) -> tuple[str, str]:
        """What alignment matches on."""
        return (self.kind, self.name)

    @property
    def is_write(self) -> bool:
        return self.kind == TOOL and self.risk in RISK_WORDS

    def to_dict(self) -> dict[str, JSON]:
        return {
            "kind": self.kind,
            "name": self.name,
            "label": self.label,
            "args": normalize_numbers(self.args),
            "status": self.status,
            "effect": self.effect,
            "risk": self.risk,
            "seq": self.seq,
        }


def normalize_numbers(value: JSON) -> JSON:
    """Integral floats become ints, recursively: JSON has one number type, so 40.0 is 40."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(k): normalize_numbers(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalize_numbers(v) for v in value]
    return value


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def render_value(value: JSON) -> str:
    """A value as a label shows it: strings bare, everything else as JSON (40, not 40.0), ≤60 chars."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = canonical_json(normalize_numbers(value))
        except (TypeError, ValueError):  # not JSON (NaN, odd objects): show what Python shows
            text = repr(value)
    return truncate(text, MAX_VALUE_CHARS)


def tool_label(name: str, args: dict[str, JSON]) -> str:
    inner = ", ".join(f"{key}={render_value(args[key])}" for key in sorted(args))
    return truncate(f"{name}({inner})", MAX_LABEL_CHARS)


def policy_label(name: str, status: str) -> str:
    return truncate(f"policy {name} ({status})", MAX_LABEL_CHARS)


def outcome_label(name: str, detail: str | None) -> str:
    text = f"outcome {name}" + (f" ({detail})" if detail else "")
    return truncate(text, MAX_LABEL_CHARS)


def _effect(record: CallRecord) -> str | None:
    if record.replayed:
        return REPLAYED
    if record.mutated:
        return APPLIED
    return None


def _call_steps(record: CallRecord) -> list[Step]:
    args = dict(record.arguments) if isinstance(record.arguments, dict) else {"_": record.arguments}
    steps = [
        Step(
            kind=TOOL,
            name=record.tool,
            label=tool_label(record.tool, args),
            args=args,
            status=record.status,
            effect=_effect(record),
            risk=record.risk,
            seq=record.seq,
            idempotency_key=record.idempotency_key,
        )
    ]
    if record.policy_violation:
        status = "violated" if succeeded(record) else "denied"
        name = record.policy_violation
        steps.append(
            Step(kind=POLICY, name=name, label=policy_label(name, status), status=status, seq=record.seq)
        )
    if record.cross_tenant == "allowed":
        steps.append(
            Step(
                kind=POLICY,
                name="CROSS_TENANT",
                label=policy_label("CROSS_TENANT", "allowed"),
                status="allowed",
                seq=record.seq,
            )
        )
    return steps


def _retrieval_step(record: RetrievalRecord) -> Step:
    label = truncate(f"retrieval({truncate(record.query, MAX_VALUE_CHARS)})", MAX_LABEL_CHARS)
    return Step(kind=RETRIEVAL, name="retrieval", label=label, seq=record.seq)


def outcome_step(case: CaseRun) -> Step:
    """The final step: what the agent claimed, or why there is no claim.

    NOT_RUN: the agent never ran (no run and no twin activity). NO_ANSWER: it ran but the run ended
    in a finding (status = the finding's label). UNREPORTED: it answered without claiming an outcome.
    For a claim, the step's status is the business outcome, so a different business outcome diverges.
    """
    finding = case.agent_finding
    touched = bool(case.records) or bool(case.retrievals)
    if not case.agent_ran and not touched:
        name, status = NOT_RUN, None
    elif finding is not None:
        name, status = NO_ANSWER, str(finding.label)
    elif not case.claimed_outcome:
        name, status = UNREPORTED, case.business_outcome
    else:
        name, status = str(case.claimed_outcome).upper(), case.business_outcome
    return Step(kind=OUTCOME, name=name, label=outcome_label(name, status), status=status)


def build_trajectory(case: CaseRun) -> tuple[Step, ...]:
    """The normalized steps of one case, at most MAX_STEPS of them.

    When the agent made more than that, the activity is cut and the OUTCOME step is kept last.
    """
    events: list[tuple[int, int, CallRecord | RetrievalRecord]] = [
        (r.seq, 0, r) for r in agent_calls(case.records)
    ]
    events.extend((r.seq, 1, r) for r in case.retrievals)
    steps: list[Step] = []
    for _, _, record in sorted(events, key=lambda e: (e[0], e[1])):
        if isinstance(record, CallRecord):
            steps.extend(_call_steps(record))
        else:
            steps.append(_retrieval_step(record))
    return (*steps[: MAX_STEPS - 1], outcome_step(case))


def tools_used(case: CaseRun) -> tuple[str, ...]:
    """Sorted unique names of the tools the agent called (twin records, redeliveries excluded)."""
    return tuple(sorted({r.tool for r in agent_calls(case.records)}))


def riskiest(risks: list[str | None]) -> str:
    """The riskiest known tier among `risks`, or "none"."""
    ranks = [RISK_ORDER.index(r) for r in risks if r in RISK_ORDER]
    return RISK_ORDER[max(ranks)] if ranks else "none"

"""The evaluation context: what the evaluators may read about a finished case.

Evidence (twin records, states) and claims (output, claimed outcome, reported steps) sit side by
side here; each evaluator says which it reads. The agent's own list of calls is not here at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from evaluation.calls import agent_calls
from evaluation.case import CaseRun, TurnRecord
from evaluation.expectations._text import fold
from twin_engine.records import CallRecord

JSON = Any

# Counted as escalations when neither the scenario nor the twin declares its own (Demo Co's tool).
DEFAULT_ESCALATION_TOOLS = ("escalate_to_human",)
TENANT_KEY = "tenant"  # the demo twin's tenantKey; CaseRun does not carry the twin's own
MIN_FOREIGN_VALUE = 4


@dataclass(frozen=True)
class EvalContext:
    input: str
    output: str | None
    claimed_outcome: str | None  # upper-cased
    business_outcome: str | None
    agent_status: str | None
    steps: int | None
    records: tuple[CallRecord, ...]  # every twin record, redeliveries included, in seq order
    calls: tuple[CallRecord, ...]  # the agent's calls (no redeliveries), in seq order
    state_before: dict[str, JSON] | None
    state_after: dict[str, JSON] | None
    latency_ms: float | None
    cost_usd: float | None
    secrets: tuple[str, ...]
    tenant: str | None
    foreign_values: tuple[str, ...]
    escalation_tools: tuple[str, ...] = DEFAULT_ESCALATION_TOOLS
    turns: tuple[TurnRecord, ...] = ()  # a conversation's turns; empty for a single-message case

    def for_turn(self, turn: int) -> EvalContext | None:
        """The context of one turn: its message, its reply and claims, the records it made. A single-message
        case is its own turn 1. None: the conversation never reached that turn."""
        if not self.turns:
            return self if turn == 1 else None
        if not 1 <= turn <= len(self.turns):
            return None
        t = self.turns[turn - 1]
        records = tuple(r for r in self.records if t.holds(r.seq))
        return replace(
            self,
            input=t.user,
            output=t.output,
            claimed_outcome=t.claimed_outcome.strip().upper() if t.claimed_outcome else None,
            business_outcome=t.business_outcome,
            agent_status=t.agent_status,
            records=records,
            calls=agent_calls(records),
        )

    @classmethod
    def from_case(cls, case: CaseRun) -> EvalContext:
        records = tuple(sorted(case.records, key=lambda r: r.seq))
        claimed = case.claimed_outcome.strip().upper() if case.claimed_outcome else None
        return cls(
            input=case.input_message,
            output=case.output,
            claimed_outcome=claimed or None,
            business_outcome=case.business_outcome,
            agent_status=case.agent_status,
            steps=case.agent_steps,
            records=records,
            calls=agent_calls(records),
            state_before=case.initial_state,
            state_after=case.final_state,
            latency_ms=case.latency_ms,
            cost_usd=case.cost_usd,
            secrets=case.secrets,
            tenant=case.tenant,
            foreign_values=foreign_values(
                [case.initial_state, case.final_state], case.tenant, case.input_message
            ),
            escalation_tools=escalation_tools(case),
            turns=case.turns,
        )


def escalation_tools(case: CaseRun) -> tuple[str, ...]:
    """The tools that hand this case to a person: the scenario's or twin's declaration, else the default."""
    return case.escalation_tools or DEFAULT_ESCALATION_TOOLS


def foreign_values(
    states: list[dict[str, JSON] | None], tenant: str | None, input_text: str
) -> tuple[str, ...]:
    """Texts that belong only to other tenants' records: they must never reach the agent's answer.

    A text counts when it sits in (or names) a record whose tenant differs from the case's, is at
    least 4 characters long, appears nowhere in the case tenant's or shared data, and is not in the
    customer's own message.
    """
    if not tenant:
        return ()
    foreign: dict[str, None] = {}
    own: set[str] = set()
    for state in states:
        if state is not None:
            _collect(state, None, tenant, False, foreign, own)
    folded_input = fold(input_text)
    return tuple(
        sorted(
            v
            for v in foreign
            if len(v) >= MIN_FOREIGN_VALUE and fold(v) not in own and fold(v) not in folded_input
        )
    )


def _collect(
    node: JSON, key: str | None, tenant: str, inside_foreign: bool, foreign: dict[str, None], own: set[str]
) -> None:
    if isinstance(node, dict):
        owner = node.get(TENANT_KEY)
        owned_elsewhere = isinstance(owner, str) and owner != tenant
        if owned_elsewhere and key is not None:
            foreign[key] = None  # the record's id, e.g. `ORD-2001`
        is_foreign = inside_foreign or owned_elsewhere
        for child_key, child in node.items():
            _collect(child, child_key, tenant, is_foreign, foreign, own)
    elif isinstance(node, list):
        for child in node:
            _collect(child, None, tenant, inside_foreign, foreign, own)
    elif isinstance(node, str):
        if inside_foreign:
            foreign[node] = None
        else:
            own.add(fold(node))


def strings_in(value: JSON) -> Iterator[str]:
    """Every text inside a JSON value (object keys included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, child in value.items():
            yield str(key)
            yield from strings_in(child)
    elif isinstance(value, list):
        for child in value:
            yield from strings_in(child)

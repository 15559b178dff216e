"""Run a multi-turn case: ask the agent, let the simulated user answer, ask again — one twin case throughout.

Each turn is one `agent.run` with the user's newest message and the earlier turns (same session id, same
twin case, so the state carries over); the twin's `seq` before and after a turn says which records it
made. The conversation ends when the user has nothing more to say, the agent did not complete its turn
(a limit, a failure), or the turn limit is reached.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from evaluation.case import AgentFinding, TurnRecord
from producers.agents.claims import read_result
from producers.agents.contract import Agent, AgentRequest, AgentResult, AgentRunError, Turn
from producers.agents.user_sim import SimulatedUser

AGENT_ERROR = "AGENT_ERROR"
USER_ERROR = "USER_ERROR"  # the simulated user (a model) failed: nothing to judge the agent on, so ERROR


@dataclass(frozen=True)
class Conversation:
    result: AgentResult | None  # the turns' results summed up (the last turn's answer and claims); None: none
    finding: AgentFinding | None
    turns: tuple[TurnRecord, ...]


def run_conversation(
    agent: Agent,
    first: AgentRequest,
    user: SimulatedUser,
    seq: Callable[[], int],
    describe: Callable[[BaseException], str],
) -> Conversation:
    """`seq` reads the twin case's sequence number; `describe` renders an unexpected agent exception."""
    turns: list[TurnRecord] = []
    results: list[AgentResult] = []
    spoken: list[Turn] = []
    finding: AgentFinding | None = None
    message = first.message
    while True:
        number = len(turns) + 1
        request = replace(first, message=message, turn=number, conversation=tuple(spoken))
        before = seq()
        result: AgentResult | None = None
        try:
            answer = agent.run(request)
            # what the agent claims is testimony: a malformed field is a finding about the claim (claims.py)
            result = read_result(answer) if isinstance(answer, AgentResult) else None
            if result is None:
                finding = AgentFinding(AGENT_ERROR, f"The agent returned {type(answer).__name__}, not an AgentResult.")
        except AgentRunError as exc:
            finding = AgentFinding(exc.finding, exc.message)
        except Exception as exc:  # the batch boundary, as for a single-message case
            finding = AgentFinding(AGENT_ERROR, describe(exc))
        turns.append(
            TurnRecord(
                turn=number,
                user=message,
                output=result.output if result else None,
                claimed_outcome=result.claimed_outcome.upper() if result and result.claimed_outcome else None,
                business_outcome=result.business_outcome if result else None,
                agent_status=result.status if result else None,
                first_seq=before,
                last_seq=seq(),
                user_kind=user.kind,
            )
        )
        if result is None:
            break
        results.append(result)
        if result.status != "completed":
            break
        spoken.append(Turn(message, result.output or ""))  # an unreadable reply is heard as silence
        try:
            following = user.next_message(tuple(spoken))
        except Exception as exc:  # a model playing the user failed: the conversation cannot go on
            finding = AgentFinding(USER_ERROR, f"The simulated user failed: {describe(exc)}")
            break
        if following is None:
            break
        message = following
    return Conversation(combined(results), finding, tuple(turns))


def combined(results: list[AgentResult]) -> AgentResult | None:
    """One result for the whole conversation: the last answer and claims, every claimed call, summed counts."""
    if not results:
        return None
    last = results[-1]
    return replace(
        last,
        tool_calls=tuple(call for r in results for call in r.tool_calls),
        steps=None if any(r.steps is None for r in results) else sum(r.steps or 0 for r in results),
        token_estimate=sum(r.token_estimate for r in results),
        backoff_ms=sum(r.backoff_ms for r in results),
        findings=tuple(f for r in results for f in r.findings),
    )

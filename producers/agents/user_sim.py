"""The user's side of a multi-turn scenario (scenario.v1 `spec.user`): who says what after the agent answers.

- `scripted` (default): the scenario's `turns` are the user's messages for turns 2, 3, …, in order. A turn
  may be conditioned on the agent's last reply: `whenAgentAsks: confirm` holds when that reply asks a
  question (has a "?") mentioning "confirm"; `whenAgentSays: X` when it mentions X (case-insensitive). The
  first turn whose condition does not hold ends the conversation: the customer has nothing more to say.
- `llm` (opt-in, never in the default tests): an Anthropic model plays the customer from the scenario's
  `goal`, with the same client and error mapping as the judge; it says DONE when it is satisfied.
  Conversations with it are labelled `llm` (each turn's `user_kind`).

A conversation also ends at `maxTurns` (default: 1 + the scripted turns; llm: 4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from producers.agents.contract import Turn
from twin_engine.documents import max_turns

JSON = Any
SCRIPTED = "scripted"
LLM = "llm"
DONE = "DONE"


class SimulatedUser(Protocol):
    kind: str  # scripted | llm
    max_turns: int

    def next_message(self, conversation: Sequence[Turn]) -> str | None:
        """The user's message for the next turn, given the turns so far; None ends the conversation."""
        ...


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


def agent_asks(reply: str, about: str) -> bool:
    return "?" in reply and _fold(about) in _fold(reply)


def agent_says(reply: str, text: str) -> bool:
    return _fold(text) in _fold(reply)


@dataclass
class ScriptedUser:
    turns: tuple[Mapping[str, JSON], ...]
    max_turns: int
    kind: str = SCRIPTED

    def next_message(self, conversation: Sequence[Turn]) -> str | None:
        done = len(conversation)  # turns so far; the next is turn done + 1, scripted as turns[done - 1]
        if done == 0 or done >= self.max_turns or done > len(self.turns):
            return None
        entry, reply = self.turns[done - 1], conversation[-1].agent
        asks, says = entry.get("whenAgentAsks"), entry.get("whenAgentSays")
        if isinstance(asks, str) and not agent_asks(reply, asks):
            return None
        if isinstance(says, str) and not agent_says(reply, says):
            return None
        return str(entry["message"])


USER_SYSTEM_PROMPT = (
    "You play a customer talking to a company's support agent, to test that agent. Stay in character: "
    "write only the customer's next message, short and natural, in the first person. Never invent facts "
    f"beyond your goal. When your goal is reached, or the agent cannot help further, answer exactly {DONE}."
)


class LlmUser:
    """A model plays the customer (Anthropic Messages API). Opt-in; needs ANTHROPIC_API_KEY."""

    kind = LLM

    def __init__(self, goal: str, max_turns: int, *, model: str, api_key: str, base_url: str | None, timeout_s: float):
        self.goal = goal
        self.max_turns = max_turns
        self._model = model
        self._api_key = api_key
        self._base_url = base_url
        self._timeout_s = timeout_s

    def next_message(self, conversation: Sequence[Turn]) -> str | None:
        from evaluation.judges.anthropic import open_client, provider_errors

        if not conversation or len(conversation) >= self.max_turns:
            return None
        # The model is the customer: the agent's replies are its "user" turns, its own messages "assistant".
        messages: list[Any] = [{"role": "user", "content": f"(Your goal: {self.goal})\n\nStart the conversation."}]
        for turn in conversation:
            messages.append({"role": "assistant", "content": turn.user})
            messages.append({"role": "user", "content": turn.agent or "(no answer)"})
        with open_client(self._api_key, self._base_url, self._timeout_s) as client, provider_errors(self._timeout_s):
            message = client.messages.create(
                model=self._model, max_tokens=400, temperature=0, system=USER_SYSTEM_PROMPT, messages=messages
            )
        text = "".join(getattr(block, "text", "") for block in message.content).strip()
        return None if not text or text.upper().rstrip(".") == DONE else text


def user_for(spec: Mapping[str, JSON] | None) -> SimulatedUser | None:
    """The simulated user of a scenario's `user` section; None for a single-message scenario.

    An `llm` user without an API key raises AgentSpecError before any turn runs.
    """
    if not spec:
        return None
    limit = max_turns(spec)
    if spec.get("kind", SCRIPTED) == LLM:
        from producers.agents.settings import load_agent_settings

        config = load_agent_settings().anthropic_config()
        return LlmUser(
            str(spec["goal"]),
            limit,
            model=config.model,
            api_key=config.api_key,
            base_url=config.base_url,
            timeout_s=config.timeout_s,
        )
    return ScriptedUser(tuple(dict(t) for t in spec.get("turns") or ()), limit)

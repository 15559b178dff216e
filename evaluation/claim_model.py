"""The opt-in model classifier of claims: a language model reads an agent's final answer (Anthropic Messages
API, one forced `record_claim` tool call) where the deterministic rules (evaluation/claim_reader.py) would.

Opt in with `AGENTTWIN_CLAIM_CLASSIFIER=anthropic` (`ANTHROPIC_API_KEY` or `AGENTTWIN_CLAIM_API_KEY`,
`AGENTTWIN_CLAIM_MODEL`, `AGENTTWIN_CLAIM_BASE_URL`); the default is `rules`. A claim it reads is marked
`model:anthropic/<model>`. When the model cannot answer (down, slow, refusing, garbage), the rules read the
answer instead and mark it `rules-v2`: a claim is never lost and never guessed. A model's reading is not
deterministic: the outcome join asks once per answer and keeps the reading in its state, but a rebuild from
offset 0 asks again. Same transport, retries and error mapping as the judges (evaluation/judges/).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Literal

import anthropic as sdk
from anthropic.types import ToolParam
from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from evaluation.claim_reader import CLAIM_STATUSES, ClaimReading, normalize_answer, read_claim
from evaluation.judges._transport import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_S, Sleep, with_retries
from evaluation.judges.anthropic import forced_tool_call, open_client
from evaluation.judges.errors import MALFORMED, JudgeError

TOOL_NAME = "record_claim"
MAX_ANSWER = 8000
SYSTEM = (
    "You read the final answer an AI agent gave a user and record what the agent CLAIMS about the task it was "
    "asked to do, not whether the claim is true. SUCCESS: it says it did it. FAILURE: it says it could not or "
    "did not. PARTIAL: it says it did part. ESCALATED: it handed the task to people (a team, a ticket, a human). "
    "REFUSED: it declined to do it. UNKNOWN: it claims no outcome (a question, information, unclear)."
)
_TOOL: ToolParam = {
    "name": TOOL_NAME,
    "description": "Record the outcome the answer claims.",
    "input_schema": {
        "type": "object",
        "properties": {"claim": {"type": "string", "enum": list(CLAIM_STATUSES)}},
        "required": ["claim"],
    },
}
_log = logging.getLogger(__name__)


class ClaimClassifierSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AGENTTWIN_CLAIM_", extra="ignore", populate_by_name=True)

    classifier: Literal["rules", "anthropic"] = "rules"
    model: str = "claude-haiku-4-5"
    base_url: str | None = None
    api_key: SecretStr | None = None
    anthropic_api_key: SecretStr | None = Field(default=None, alias="ANTHROPIC_API_KEY")
    timeout_s: float = DEFAULT_TIMEOUT_S


class AnthropicClaimClassifier:
    def __init__(
        self,
        *,
        model: str,
        api_key: str,
        client: sdk.Anthropic | None = None,  # tests hand in a client; otherwise one is opened
        base_url: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        sleep: Sleep = time.sleep,
    ) -> None:
        self.model = model
        self.name = f"model:anthropic/{model}"
        self._client = client or open_client(api_key, base_url, timeout_s)
        self._timeout_s, self._max_retries, self._sleep = timeout_s, max_retries, sleep
        self.failures = 0

    def __call__(self, answer: str | None) -> ClaimReading:
        text = normalize_answer(answer or "")
        if not text:
            return read_claim(answer)
        try:
            status = with_retries(
                lambda: self._ask(text[:MAX_ANSWER]), max_retries=self._max_retries, sleep=self._sleep
            )
        except JudgeError as exc:
            self.failures += 1
            _log.warning("claim model unavailable (%s); the rules read the answer", exc)
            return read_claim(answer)
        return ClaimReading(status, self.name, "model")

    def _ask(self, text: str) -> str:
        message = forced_tool_call(
            self._client,
            _TOOL,
            model=self.model,
            system=SYSTEM,
            text=f"The agent's final answer:\n\n{text}",
            max_tokens=64,
            temperature=0.0,
            timeout_s=self._timeout_s,
        )
        if not isinstance(message, sdk.types.Message):  # the SDK passes a body that is not JSON through as text
            raise JudgeError(MALFORMED, f"the provider answered with a {type(message).__name__}, not a message")
        for block in message.content:
            if block.type == "tool_use" and block.name == TOOL_NAME:
                claim = block.input.get("claim") if isinstance(block.input, dict) else None
                if claim in CLAIM_STATUSES:
                    return str(claim)
        raise JudgeError(MALFORMED, "the model recorded no claim from the allowed list")


def claim_classifier(settings: ClaimClassifierSettings | None = None) -> Callable[[str | None], ClaimReading]:
    """The classifier the environment selects: the rules (default), or the Anthropic model."""
    settings = settings or ClaimClassifierSettings()
    if settings.classifier == "rules":
        return read_claim
    key = settings.api_key or settings.anthropic_api_key
    if key is None:
        raise ValueError("AGENTTWIN_CLAIM_CLASSIFIER=anthropic needs ANTHROPIC_API_KEY or AGENTTWIN_CLAIM_API_KEY")
    return AnthropicClaimClassifier(
        model=settings.model, api_key=key.get_secret_value(), base_url=settings.base_url, timeout_s=settings.timeout_s
    )

"""The judge contract: what a judge is shown, what it must answer, and who it is.

A request holds exactly the material the judge is shown (already truncated and with forged tags
neutralized, see `material.build_request`), so cache keys and evidence checks use the same text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

JSON = Any

KIND_FAKE = "deterministic-fake"
KIND_LLM = "llm"
JUDGE_KINDS = (KIND_FAKE, KIND_LLM)
PROMPT_VERSION = "judge-prompt/1"

LABEL_PASS = "pass"  # noqa: S105 (a verdict label, not a password)
LABEL_FAIL = "fail"
MAX_EVIDENCE = 8


@dataclass(frozen=True)
class JudgeIdentity:
    provider: str  # deterministic-fake | anthropic | openai
    model: str
    kind: str  # deterministic-fake | llm
    prompt_version: str
    prompt_sha256: str

    @property
    def is_language_model(self) -> bool:
        return self.kind == KIND_LLM

    def to_dict(self) -> dict[str, JSON]:
        return {
            "provider": self.provider,
            "model": self.model,
            "kind": self.kind,
            "prompt_version": self.prompt_version,
            "prompt_sha256": self.prompt_sha256,
        }


@dataclass(frozen=True)
class ShownToolCall:
    """One twin record as the judge sees it (arguments and response cut to a few hundred characters)."""

    seq: int
    tool: str
    arguments: str
    http_status: int
    status: str
    response: str

    @property
    def ref(self) -> str:
        return f"tool_call:{self.seq}"

    def text(self) -> str:
        head = f"#{self.seq} {self.tool}({self.arguments})"
        return f"{head} -> HTTP {self.http_status} {self.status}: {self.response}"

    def to_dict(self) -> dict[str, JSON]:
        return {
            "seq": self.seq,
            "tool": self.tool,
            "arguments": self.arguments,
            "http_status": self.http_status,
            "status": self.status,
            "response": self.response,
        }


@dataclass(frozen=True)
class JudgeRequest:
    criterion: str  # one of prompt.CRITERIA
    rubric: str
    customer_message: str
    answer: str
    tool_calls: tuple[ShownToolCall, ...] = ()
    omitted_tool_calls: int = 0
    reference: str | None = None

    def material(self) -> dict[str, str]:
        """Every piece of material an evidence quote may cite, by its ref."""
        out = {"answer": self.answer, "customer_message": self.customer_message}
        if self.reference is not None:
            out["reference"] = self.reference
        for call in self.tool_calls:
            out[call.ref] = call.text()
        return out

    def to_dict(self) -> dict[str, JSON]:
        return {
            "criterion": self.criterion,
            "rubric": self.rubric,
            "customer_message": self.customer_message,
            "answer": self.answer,
            "tool_calls": [c.to_dict() for c in self.tool_calls],
            "omitted_tool_calls": self.omitted_tool_calls,
            "reference": self.reference,
        }


@dataclass(frozen=True)
class EvidenceQuote:
    ref: str  # answer | customer_message | reference | tool_call:<seq>
    quote: str


@dataclass(frozen=True)
class JudgeVerdict:
    score: float  # [0, 1]
    label: str  # pass | fail
    confidence: float  # [0, 1]
    reason: str
    evidence: tuple[EvidenceQuote, ...] = ()
    tokens: int | None = None
    cost_usd: float | None = None  # None = unknown (no prices configured)
    unsupported_quotes: int = 0
    cached: bool = False


@runtime_checkable
class Judge(Protocol):
    """Anything that grades one answer against one rubric. Raises JudgeError when it cannot."""

    @property
    def identity(self) -> JudgeIdentity: ...

    def judge(self, request: JudgeRequest) -> JudgeVerdict: ...

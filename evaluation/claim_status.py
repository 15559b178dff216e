"""The six claims an agent's final answer can make, and one reading of it (shared by every claim rule set
and the model classifier)."""

from __future__ import annotations

from dataclasses import dataclass

SUCCESS, FAILURE, PARTIAL, ESCALATED, REFUSED, UNKNOWN = (
    "SUCCESS",
    "FAILURE",
    "PARTIAL",
    "ESCALATED",
    "REFUSED",
    "UNKNOWN",
)
CLAIM_STATUSES = (SUCCESS, FAILURE, PARTIAL, ESCALATED, REFUSED, UNKNOWN)
MAX_ANSWER_CHARS = 20_000  # longer answers are read from their first and last 10,000 characters


@dataclass(frozen=True)
class ClaimReading:
    status: str
    inferred_by: str  # a rule set ("rules-v2"), or "model:<provider>/<model>"
    rule: str  # which rule decided ("model" for the model); "abstained:<rule>" below the threshold
    confidence: float | None = None  # the rule's confidence (rules-v2 on); None: none was stated (v1, model)


_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2014": " ", "\u2013": " "})


def bounded(answer: str) -> str:
    return answer if len(answer) <= MAX_ANSWER_CHARS else answer[:10_000] + " " + answer[-10_000:]


def normalize_answer(answer: str) -> str:
    """Lower-cased, curly quotes straightened, spaces collapsed, at most MAX_ANSWER_CHARS read."""
    return " ".join(bounded(answer).translate(_QUOTES).lower().split())

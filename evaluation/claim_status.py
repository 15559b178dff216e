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


def describe_inference(
    inferred_by: str, rule: str | None = None, confidence: float | None = None, *, source: str = ""
) -> str:
    """How an inferred claim was read, for people: "inferred by rules-v2, rule succeeded, confidence 0.90"
    (`source`, e.g. "from the final answer", follows the classifier's name)."""
    parts = [f"inferred by {inferred_by}" + (f" {source}" if source else "")]
    if rule:
        parts.append(f"rule {rule}")
    if confidence is not None:
        parts.append(f"confidence {confidence:.2f}")
    return ", ".join(parts)

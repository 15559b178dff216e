"""An agent that states no claim: what its final answer claims, marked as inferred.

No framework produces `claimed_outcome`; its final answer is all there is. The claim is then read from
that answer by the deterministic final-answer classifier (`evaluation.claim_reader.read_claim`, its rules
documented there) and carries the name of the rules that read it (`inferred_by`, "rules-v2"), so nobody
mistakes it for what the agent said. Evaluation always uses the deterministic rules, never the opt-in
model classifier (evaluation/claim_model.py): the same reply must give the same verdict. Should the reader
be missing (a trimmed install), the hook answers UNKNOWN, inferred by "none": UNKNOWN is never a disproved
success (evaluation/contradiction.py), so a missing reader can hide a contradiction but never invent one.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from evaluation.case import ClaimFinding

UNKNOWN = "UNKNOWN"
CLAIM_INFERRED = "CLAIM_INFERRED"  # the claim finding that marks an inferred claim
# The agent contract's claims are SUCCESS, PARTIAL, FAILURE, UNKNOWN (its own reporting protocol calls a
# hand-over PARTIAL); the reader's other classes map onto them.
AS_CLAIMED = {"ESCALATED": "PARTIAL", "REFUSED": UNKNOWN}
NO_READER = "none"  # `inferred_by` when no classifier was available to read the answer
CLAIM_READER_MODULE = "evaluation.claim_reader"  # the hook: `read_claim(text) -> .status, .inferred_by`


@dataclass(frozen=True)
class InferredClaim:
    status: str  # SUCCESS | FAILURE | PARTIAL | ESCALATED | REFUSED | UNKNOWN
    inferred_by: str  # the classifier's id, e.g. "rules-v2"; NO_READER when none read it
    rule: str | None = None  # the rule that decided ("abstained:<rule>" below the reader's threshold)
    confidence: float | None = None  # that rule's confidence

    @property
    def claimed(self) -> str:
        """As the agent contract's claimed outcome (SUCCESS, PARTIAL, FAILURE or UNKNOWN)."""
        return AS_CLAIMED.get(self.status, self.status)

    def describe(self) -> str:
        """The CLAIM_INFERRED finding's message."""
        if self.inferred_by == NO_READER:
            return "not stated; no final-answer classifier is installed, so the claim is UNKNOWN"
        shown = self.status if self.claimed == self.status else f"{self.status} (claimed as {self.claimed})"
        how = f" (rule {self.rule})" if self.rule else ""
        how = (
            f" (rule {self.rule}, confidence {self.confidence:.2f})"
            if self.rule and self.confidence is not None
            else how
        )
        return f"not stated; read from the final answer as {shown} by {self.inferred_by}{how}"


def infer_claim(output: str | None) -> InferredClaim:
    """The claim `output` makes, by the final-answer classifier when it is installed, else UNKNOWN."""
    try:
        reader = importlib.import_module(CLAIM_READER_MODULE)
    except ImportError:
        return InferredClaim(UNKNOWN, NO_READER)
    reading = reader.read_claim(output or "")
    confidence = getattr(reading, "confidence", None)
    return InferredClaim(
        str(reading.status),
        str(reading.inferred_by),
        getattr(reading, "rule", None),
        float(confidence) if isinstance(confidence, (int, float)) else None,
    )



_READ_BY = re.compile(r"\bby ([\w.:-]+)")  # describe()'s "... as SUCCESS by rules-v1"


def inferred_by_of(findings: Iterable[ClaimFinding]) -> str | None:
    """Who read the claim, from a case's CLAIM_INFERRED finding (as describe() wrote it); None: stated."""
    for finding in findings:
        if finding.label == CLAIM_INFERRED:
            found = _READ_BY.search(finding.message)
            return found.group(1) if found else NO_READER
    return None

"""Errors of the judges. A judge that cannot answer raises JudgeError; it is graded ERROR, never a score."""

from __future__ import annotations

UNAVAILABLE = "unavailable"
RATE_LIMITED = "rate_limited"
TIMEOUT = "timeout"
REJECTED = "rejected"
MALFORMED = "malformed"
REFUSED = "refused"
# The judge looked and could not decide (the offline judge, where text matching cannot tell):
# graded SKIPPED with label JUDGE_UNDECIDED, never a score, never a pass of the case.
UNDECIDED = "undecided"
JUDGE_ERROR_KINDS = (UNAVAILABLE, RATE_LIMITED, TIMEOUT, REJECTED, MALFORMED, REFUSED, UNDECIDED)


class JudgeError(Exception):
    """The judge gave no usable verdict.

    `retryable` and `retry_after` (seconds the provider asked us to wait) steer the adapters' retry loop.
    """

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        if kind not in JUDGE_ERROR_KINDS:
            raise ValueError(f"unknown judge error kind {kind!r}; expected one of {JUDGE_ERROR_KINDS}")
        self.kind = kind
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after
        super().__init__(f"{kind}: {message}")


class JudgeConfigError(Exception):
    """The judge configuration cannot build a judge (unknown provider, missing key or model)."""

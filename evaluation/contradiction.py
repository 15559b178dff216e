"""The contradiction rule (spec §8.1): an agent claimed success that verification disproved."""

from __future__ import annotations

DISPROVING_STATUSES = frozenset({"FAILURE", "PARTIAL"})


def is_contradiction(claimed: str | None, status: str, verified: bool) -> bool:
    """True when a verified outcome of FAILURE or PARTIAL meets a claimed SUCCESS.

    A claim nobody could verify is never counted as disproved.
    """
    return verified and claimed == "SUCCESS" and status in DISPROVING_STATUSES

"""Per-run judge budget: a cap on judge calls and on known spend. Past it, semantic results are SKIPPED.

A call whose cost is unknown (no prices configured, or the call failed) counts against the call cap and
is reported as such; it is never counted as free spend.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_COST_USD = 5.0
DEFAULT_MAX_CALLS = 200


@dataclass(frozen=True)
class BudgetUsage:
    calls: int
    cost_usd: float
    unknown_cost_calls: int
    max_calls: int
    max_cost_usd: float

    def to_dict(self) -> dict[str, float | int]:
        return {
            "calls": self.calls,
            "cost_usd": self.cost_usd,
            "unknown_cost_calls": self.unknown_cost_calls,
            "max_calls": self.max_calls,
            "max_cost_usd": self.max_cost_usd,
        }


class JudgeBudget:
    """Mutable by design: one instance is shared by every judge call of one evaluation run."""

    def __init__(
        self, *, max_cost_usd: float = DEFAULT_MAX_COST_USD, max_calls: int = DEFAULT_MAX_CALLS
    ) -> None:
        if max_cost_usd < 0 or max_calls < 0:
            raise ValueError("judge budget limits must be non-negative")
        self.max_cost_usd = max_cost_usd
        self.max_calls = max_calls
        self._calls = 0
        self._cost_usd = 0.0
        self._unknown_cost_calls = 0

    def spent_reason(self) -> str | None:
        """Why no further call may be made, or None while budget remains."""
        if self._calls >= self.max_calls:
            return f"{self._calls} of {self.max_calls} judge calls made"
        if self._cost_usd >= self.max_cost_usd:
            return f"${self._cost_usd:.4f} of ${self.max_cost_usd:.2f} spent"
        return None

    def charge(self, cost_usd: float | None) -> None:
        self._calls += 1
        if cost_usd is None:
            self._unknown_cost_calls += 1
        else:
            self._cost_usd += cost_usd

    def usage(self) -> BudgetUsage:
        return BudgetUsage(
            calls=self._calls,
            cost_usd=round(self._cost_usd, 8),
            unknown_cost_calls=self._unknown_cost_calls,
            max_calls=self.max_calls,
            max_cost_usd=self.max_cost_usd,
        )

"""Token prices, when configured. Without them a judge call's cost is unknown (None), never zero."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Prices:
    input_per_mtok: float
    output_per_mtok: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return round((input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6, 8)

"""An in-process ToolClient bound to one TwinCase (what an agent uses in an embedded simulation)."""

from __future__ import annotations

from typing import Any

from producers.agents.contract import ToolReply
from twin_engine.case import TwinCase


class CaseToolClient:
    """Implements producers.agents.contract.ToolClient over a TwinCase; calls are applied in order."""

    def __init__(self, case: TwinCase, role: str = "agent") -> None:
        self.case = case
        self.role = role  # simulations always call as "agent"

    def call(self, tool: str, arguments: dict[str, Any], headers: dict[str, str] | None = None) -> ToolReply:
        return self.case.call(tool, arguments, headers, role=self.role).to_tool_reply()

    def search_kb(self, query: str, limit: int = 3) -> list[dict[str, Any]]:
        return self.case.search_kb(query, limit)

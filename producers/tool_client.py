"""The in-process ToolClient: an agent's tool calls go straight to one twin case, in order."""

from __future__ import annotations

from typing import Any

from producers.agents.contract import ToolReply
from twin_engine.case import TwinCase

JSON = Any


class InProcessToolClient:
    """Implements `ToolClient` over a TwinCase. Simulations always call as role `agent`."""

    def __init__(self, twin_case: TwinCase) -> None:
        self.case = twin_case

    def call(self, tool: str, arguments: dict[str, JSON], headers: dict[str, str] | None = None) -> ToolReply:
        return self.case.call(tool, arguments, headers=headers, role="agent").to_tool_reply()

    def search_kb(self, query: str, limit: int = 3) -> list[dict[str, JSON]]:
        return self.case.search_kb(query, limit=limit)

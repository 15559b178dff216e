"""A tool error raised inside the engine and turned into a reply at exactly one place (TwinCase.call).

It is not a TwinError: a ToolFailure is an answer the caller receives, never a bug.
"""

from __future__ import annotations

from typing import Any


class ToolFailure(Exception):
    def __init__(self, status: int, code: str, message: str, *, body: Any = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body  # a custom body replacing {"error": {...}}, when set

    def reply_body(self) -> Any:
        if self.body is not None:
            return self.body
        return {"error": {"code": self.code, "message": self.message}}


def missing_argument(name: str) -> ToolFailure:
    return ToolFailure(422, "MISSING_ARGUMENT", f"Missing required argument: {name}.")


def invalid_argument(message: str) -> ToolFailure:
    return ToolFailure(422, "INVALID_ARGUMENT", message)


def template_error(message: str) -> ToolFailure:
    return ToolFailure(500, "TWIN_TEMPLATE_ERROR", message)

"""The gate (spec §2.8 step 2): checks made before faults, which never apply to a refused call."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator

from twin_engine.canonical import canonical_bytes, canonical_json
from twin_engine.failures import ToolFailure
from twin_engine.limits import (
    MAX_ARGUMENT_BYTES,
    Breach,
    argument_breach,
    header_breach,
    preview,
    too_large_message,
    tool_name_breach,
)
from twin_engine.paths import MISSING, format_path

if TYPE_CHECKING:
    from twin_engine.twin import ToolDef

MAX_SCHEMA_PROBLEMS = 3


@dataclass(frozen=True)
class GateResult:
    arguments: Any  # a detached plain-JSON copy; a bounded preview when refused over a limit; None if not JSON
    refusal: ToolFailure | None = None
    policy_violation: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)  # names lower-cased; empty when refused


def gate(
    tool: Any,
    tdef: ToolDef | None,
    arguments: Any,
    role: str,
    allowed_tools: tuple[str, ...] | None,
    headers: Any = None,
) -> GateResult:
    """Tool name, unknown tool, allowedTools, ADMIN role, input limits, JSON, size, inputSchema — in that order.

    The limits (twin_engine/limits.py) are checked before anything copies or serialises the input, so a
    hostile input is refused with a record instead of breaking the twin.
    """
    breach = argument_breach(arguments)
    args = MISSING if breach is not None else json_copy(arguments)
    stored = preview(arguments) if breach is not None else None if args is MISSING else args
    if (name_breach := tool_name_breach(tool)) is not None:
        return GateResult(stored, _refusal(name_breach))
    if tdef is None:
        return GateResult(stored, ToolFailure(404, "UNKNOWN_TOOL", f"Unknown tool: {tool}."))
    if allowed_tools and tool not in allowed_tools:
        message = f"The tool {tool} is not allowed in this scenario."
        return GateResult(stored, ToolFailure(403, "TOOL_NOT_ALLOWED", message), "TOOL_NOT_ALLOWED")
    if tdef.risk == "ADMIN" and role != "admin":
        message = f"The tool {tool} is for administrators only."
        return GateResult(stored, ToolFailure(403, "ADMIN_ONLY", message), "ADMIN_ONLY")
    if (headers_breach := header_breach(headers)) is not None:
        return GateResult(stored, _refusal(headers_breach))
    lowered = {k.lower(): v for k, v in (headers or {}).items()}
    if breach is not None:
        return GateResult(stored, _refusal(breach), headers=lowered)
    if not isinstance(args, dict):
        failure = ToolFailure(400, "INVALID_ARGUMENT", "The arguments must be a JSON object.")
        return GateResult(None, failure, headers=lowered)
    if len(canonical_bytes(args)) > MAX_ARGUMENT_BYTES:
        return GateResult(args, ToolFailure(413, "ARGUMENTS_TOO_LARGE", too_large_message()), headers=lowered)
    if tdef.input_validator is not None:
        problems = schema_problems(tdef.input_validator, args)
        if problems:
            message = f"Invalid arguments: {'; '.join(problems[:MAX_SCHEMA_PROBLEMS])}"
            return GateResult(args, ToolFailure(422, "INVALID_ARGUMENT", message), headers=lowered)
    return GateResult(args, headers=lowered)


def _refusal(breach: Breach) -> ToolFailure:
    return ToolFailure(breach.status, breach.code, breach.message)


def schema_problems(validator: Draft202012Validator, instance: Any) -> list[str]:
    """JSON Schema problems as `path: message`, in a stable order."""
    errors = sorted(
        validator.iter_errors(instance),
        key=lambda e: (canonical_json([str(p) for p in e.absolute_path]), e.message),
    )
    out: list[str] = []
    for error in errors:
        segments = tuple(p if isinstance(p, int) else str(p) for p in error.absolute_path)
        out.append(f"{format_path(segments)}: {error.message}" if segments else error.message)
    return out


def json_copy(value: Any) -> Any:
    """A detached plain-JSON copy of the caller's arguments, or MISSING if they are not JSON."""
    if isinstance(value, dict) and not all(isinstance(k, str) for k in value):
        return MISSING
    try:
        return json.loads(canonical_json(value))
    except (TypeError, ValueError, RecursionError):
        return MISSING


def idempotency_key(tdef: ToolDef, args: Mapping[str, Any], headers: Mapping[str, str]) -> str | None:
    """The configured argument (a non-empty string), else the configured header (names lower-cased)."""
    if tdef.idempotency_argument:
        value = args.get(tdef.idempotency_argument)
        if isinstance(value, str) and value:
            return value
    if tdef.idempotency_header:
        header = headers.get(tdef.idempotency_header)
        if isinstance(header, str) and header:
            return header
    return None

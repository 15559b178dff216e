"""Conditions of a handler: a path with comparators, an expression, or `anyOf` several conditions.

    - path: value.status            # the shared comparators (twin_engine.compare)
      equals: active
    - expr: "args.amount <= value.balance"      # a CEL expression that must be true
      error: {status: 422, code: INSUFFICIENT_BALANCE, message: Not enough balance.}
    - anyOf:                        # at least one must hold
        - expr: "args.payment_id == value.payment_id"
        - path: state.payment_methods.{payment_id}.kind
          equals: gift_card

A condition that does not hold answers its `error` (default 409 PRECONDITION_FAILED with the reason).
An `anyOf` without an error of its own answers 409 with every branch's reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from twin_engine.compare import UnsafePatternError, check, comparators_of
from twin_engine.errors import DefinitionError
from twin_engine.expressions import Expression, compile_expression, evaluate_bool
from twin_engine.failures import ToolFailure
from twin_engine.paths import MISSING, get_path
from twin_engine.templates import (
    TemplateEnv,
    TemplateScope,
    TemplateSyntaxError,
    check_expression,
    check_path_template,
    check_template,
    parse_path_template,
    render,
    render_path,
)

CONDITION_ROOTS = ("args", "state", "value", "tenant")
PRECONDITION_FAILED = "PRECONDITION_FAILED"


@dataclass(frozen=True)
class ErrorSpec:
    status: int
    code: str
    message: str

    def failure(self) -> ToolFailure:
        return ToolFailure(self.status, self.code, self.message)


@dataclass(frozen=True)
class Condition:
    path: str  # path template starting with args/state/value/tenant
    comparators: dict[str, Any]  # values may be templates
    error: ErrorSpec | None = None


@dataclass(frozen=True)
class ExprCondition:
    expr: Expression
    error: ErrorSpec | None = None


@dataclass(frozen=True)
class AnyOf:
    conditions: tuple[AnyCondition, ...]
    error: ErrorSpec | None = None


AnyCondition = Condition | ExprCondition | AnyOf


class ConditionFailed(Exception):
    """A condition that does not hold (inside anyOf: one branch's reason, not yet an answer)."""

    def __init__(self, reason: str, error: ErrorSpec | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.error = error

    def failure(self) -> ToolFailure:
        if self.error is None:
            return ToolFailure(409, PRECONDITION_FAILED, self.reason)
        return ToolFailure(self.error.status, self.error.code, self.error.message or self.reason)


# ---------------------------------------------------------------- load time


def error_spec(raw: Any, default: ErrorSpec) -> ErrorSpec:
    if not isinstance(raw, dict):
        return default
    return ErrorSpec(
        int(raw.get("status", default.status)),
        str(raw.get("code", default.code)),
        str(raw.get("message", default.message)),
    )


def _own_error(raw: dict[str, Any]) -> ErrorSpec | None:
    default = ErrorSpec(409, PRECONDITION_FAILED, "")
    return error_spec(raw["error"], default) if isinstance(raw.get("error"), dict) else None


def is_condition(raw: Any) -> bool:
    return isinstance(raw, dict) and any(key in raw for key in ("path", "expr", "anyOf"))


def compile_condition(raw: dict[str, Any], where: str, scope: TemplateScope) -> AnyCondition:
    """One condition of a twin document; raises DefinitionError located at `where`."""
    forms = [key for key in ("path", "expr", "anyOf") if key in raw]
    if len(forms) != 1:
        raise DefinitionError("a condition has exactly one of path, expr or anyOf", path=where)
    if forms[0] != "path" and comparators_of(raw):
        raise DefinitionError(f"comparators belong to a path condition, not to {forms[0]}", path=where)
    if "expr" in raw:
        source = raw["expr"]
        _expression(source, scope, f"{where}.expr")
        return ExprCondition(compile_expression(source), _own_error(raw))
    if "anyOf" in raw:
        items = raw["anyOf"]
        if not isinstance(items, list) or not items:
            raise DefinitionError("anyOf needs a non-empty list of conditions", path=f"{where}.anyOf")
        parts = []
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise DefinitionError("a condition must be an object", path=f"{where}.anyOf[{index}]")
            parts.append(compile_condition(item, f"{where}.anyOf[{index}]", scope))
        return AnyOf(tuple(parts), _own_error(raw))
    path = raw.get("path")
    if not isinstance(path, str):
        raise DefinitionError("a path must be text", path=f"{where}.path")
    try:
        check_path_template(path, scope)
    except TemplateSyntaxError as exc:
        raise DefinitionError(exc.message, path=f"{where}.path") from exc
    segments = parse_path_template(path)
    first = segments[0].parts if segments else ()
    if len(first) != 1 or first[0] not in CONDITION_ROOTS:
        raise DefinitionError(
            f"a condition path must start with one of {', '.join(CONDITION_ROOTS)}", path=f"{where}.path"
        )
    comparators = comparators_of(raw)
    for name, value in comparators.items():
        try:
            check_template(value, scope=scope)
        except TemplateSyntaxError as exc:
            raise DefinitionError(exc.message, path=f"{where}.{name}{exc.where}") from exc
    return Condition(path=path, comparators=comparators, error=_own_error(raw))


def _expression(source: Any, scope: TemplateScope, where: str) -> None:
    try:
        check_expression(source, scope)
    except TemplateSyntaxError as exc:
        raise DefinitionError(exc.message, path=where) from exc


# ---------------------------------------------------------------- run time


def check_condition(condition: AnyCondition, env: TemplateEnv) -> None:
    """Raise the condition's ToolFailure when it does not hold."""
    try:
        _holds(condition, env)
    except ConditionFailed as failed:
        raise failed.failure() from None


def _holds(condition: AnyCondition, env: TemplateEnv) -> None:
    if isinstance(condition, ExprCondition):
        if not evaluate_bool(condition.expr, env.bindings(), env.budget):
            raise ConditionFailed(f"{condition.expr.source} does not hold", condition.error)
        return
    if isinstance(condition, AnyOf):
        reasons = []
        for part in condition.conditions:
            try:
                _holds(part, env)
                return
            except ConditionFailed as failed:
                reasons.append(failed.reason)
        raise ConditionFailed(f"none of these holds: {'; '.join(reasons)}", condition.error)
    _compare(condition, env)


def _compare(condition: Condition, env: TemplateEnv) -> None:
    document = {"args": env.args, "state": env.state, "tenant": env.tenant}
    if env.value is not MISSING:
        document["value"] = env.value
    actual = get_path(document, render_path(condition.path, env))
    comparators = {name: render(value, env) for name, value in condition.comparators.items()}
    try:
        outcome = check(actual, actual is not MISSING, comparators)
    except UnsafePatternError as exc:  # the twin's own pattern, not the caller's input, is at fault
        raise ToolFailure(500, "TWIN_PATTERN_ERROR", f"{condition.path}: {exc}") from exc
    if not outcome.ok:
        raise ConditionFailed(f"{condition.path}: {outcome.reason}", condition.error)

"""Effects of a mutate handler (spec §2.5): set, increment, decrement, append, delete, merge."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from twin_engine.compare import is_number
from twin_engine.errors import DefinitionError
from twin_engine.failures import ToolFailure
from twin_engine.paths import MISSING, Path, PathError, delete_path, format_path, get_path, set_path
from twin_engine.templates import (
    TemplateEnv,
    TemplateScope,
    TemplateSyntaxError,
    check_path_template,
    check_template,
    is_expression,
    render,
    render_path,
)

EFFECT_OPS = ("set", "increment", "decrement", "append", "delete", "merge")
_NEEDS_VALUE = ("set", "append", "merge")
FLOAT_DECIMALS = 10


@dataclass(frozen=True)
class Effect:
    op: str
    path: str  # path template, never empty
    value: Any = None  # template (set/append/merge)
    by: Any = 1  # number, template string or {$expr} (increment/decrement)


def compile_effect(raw: dict[str, Any], where: str, scope: TemplateScope | None = None) -> Effect:
    """Check one effect of a twin document; raises DefinitionError located at `where`."""
    op = raw.get("op")
    if op not in EFFECT_OPS:
        raise DefinitionError(f"unknown effect op {op!r}", path=f"{where}.op")
    path = raw.get("path")
    if not isinstance(path, str) or path == "":
        raise DefinitionError(
            "an effect needs a non-empty path (the whole state cannot be replaced)", path=f"{where}.path"
        )
    try:
        check_path_template(path, scope)
    except TemplateSyntaxError as exc:
        raise DefinitionError(exc.message, path=f"{where}.path") from exc
    if op in _NEEDS_VALUE and "value" not in raw:
        raise DefinitionError(f"'{op}' needs a value", path=f"{where}.value")
    value = raw.get("value")
    if op == "merge" and not isinstance(value, dict | str):
        raise DefinitionError("'merge' needs an object value", path=f"{where}.value")
    by = raw.get("by", 1)
    if isinstance(by, bool) or not (isinstance(by, int | float | str) or is_expression(by)):
        raise DefinitionError("'by' must be a number, a template or {$expr}", path=f"{where}.by")
    for name, template in (("value", value), ("by", by)):
        try:
            check_template(template, scope=scope)
        except TemplateSyntaxError as exc:
            raise DefinitionError(exc.message, path=f"{where}.{name}{exc.where}") from exc
    return Effect(op=op, path=path, value=value, by=by)


def _effect_error(index: int, effect: Effect, why: str) -> ToolFailure:
    return ToolFailure(500, "TWIN_EFFECT_ERROR", f"Effect {index + 1} ({effect.op} {effect.path}) failed: {why}.")


def apply_effect(state: dict[str, Any], effect: Effect, env: TemplateEnv, index: int = 0) -> Path:
    """Apply one effect to `state` in place and return the path it changed. Template failures keep their
    own codes."""
    path = render_path(effect.path, env)
    if not path:
        raise _effect_error(index, effect, "the path is empty")
    current = get_path(state, path)
    try:
        if effect.op == "set":
            set_path(state, path, render(effect.value, env))
        elif effect.op in ("increment", "decrement"):
            by = render(effect.by, env)
            if not is_number(by):
                raise _effect_error(index, effect, f"'by' is not a number ({by!r})")
            base = 0 if current is MISSING or current is None else current
            if not is_number(base):
                raise _effect_error(index, effect, f"{format_path(path)} is not a number")
            result = base + by if effect.op == "increment" else base - by
            if isinstance(result, float):
                result = round(result, FLOAT_DECIMALS)
            set_path(state, path, result)
        elif effect.op == "append":
            item = render(effect.value, env)
            if current is MISSING or current is None:
                set_path(state, path, [item])
            elif isinstance(current, list):
                current.append(item)
            else:
                raise _effect_error(index, effect, f"{format_path(path)} is not a list")
        elif effect.op == "delete":
            delete_path(state, path)
        else:  # merge
            patch = render(effect.value, env)
            if not isinstance(patch, dict):
                raise _effect_error(index, effect, "the value is not an object")
            base = current if isinstance(current, dict) else {}
            set_path(state, path, {**base, **patch})
    except PathError as exc:
        raise _effect_error(index, effect, str(exc)) from exc
    return path

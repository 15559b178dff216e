"""Templating (spec §2.6): `{order_id}`, `{value.currency}`, `RF-{id}`, `{idempotency_key?}`.

Roots: args, state, value, result, vars, tenant, idempotency_key, now, id, call.number, call.seq; any
other name is an argument (`{order_id}` = `{args.order_id}`). A string that is exactly one
placeholder keeps the value's JSON type; mixed with text it is interpolated. `?` makes a
placeholder optional (missing -> null, or empty in text). `{{` and `}}` are literal braces.

`{vars.NAME}` reads a name bound by the handler (`let`, `find`, `forEach`). An object that is exactly
`{$expr: "<CEL>"}` stands for the value of that expression (twin_engine.expressions).

A bare placeholder that names a root which is also one of the tool's arguments (`{state}` when the
tool takes an argument `state`) is refused at load time: it would read the root, not the argument.
Write `{args.state}`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from twin_engine.budget import Budget, OverBudget, json_size
from twin_engine.canonical import canonical_json
from twin_engine.deep_copy import deep_copy
from twin_engine.expressions import (
    EXPR_KEY,
    MAX_RESULT_BYTES,
    ExpressionSyntaxError,
    check_names,
    compile_expression,
    evaluate,
)
from twin_engine.failures import ToolFailure, missing_argument, template_error
from twin_engine.paths import MISSING, Path, PathError, format_path, get_path, parse_path

DEFAULT_NOW = "2026-01-01T00:00:00Z"
SCALAR_ROOTS = ("tenant", "idempotency_key", "now", "id")
PATH_ROOTS = ("args", "state", "value", "result", "vars")
ROOTS = (*PATH_ROOTS, *SCALAR_ROOTS, "call")
_NO_VARS: Mapping[str, Any] = MappingProxyType({})
_IDENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(.*)", re.DOTALL)
MAX_SEGMENT = 500


class TemplateSyntaxError(ValueError):
    """A template that cannot be parsed; `where` locates it inside a nested value (`.a[0]`)."""

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.where = where


@dataclass(frozen=True)
class Placeholder:
    root: str  # one of PATH_ROOTS, SCALAR_ROOTS or "call"
    path: Path
    optional: bool
    source: str  # as written, for messages

    @property
    def from_caller(self) -> bool:
        """The value comes from the caller (an argument or the idempotency key)."""
        return self.root in ("args", "idempotency_key")


Token = str | Placeholder


@dataclass(frozen=True)
class TemplateEnv:
    """Everything a template may read during one call."""

    args: Any
    state: Any
    value: Any = MISSING
    result: Any = MISSING
    tenant: str | None = None
    idempotency_key: str | None = None
    now: str = DEFAULT_NOW
    seq: int = 0
    call_number: int = 0
    vars: Mapping[str, Any] = field(default_factory=lambda: _NO_VARS)  # names bound by let, find and forEach
    budget: Budget = field(default_factory=Budget, compare=False, repr=False)  # shared by the whole call

    def with_value(self, value: Any) -> TemplateEnv:
        return replace(self, value=value)

    def with_vars(self, **names: Any) -> TemplateEnv:
        return replace(self, vars=MappingProxyType({**self.vars, **names}))

    def bindings(self) -> dict[str, Any]:
        """What an expression may read here: the roots that are bound, `vars`, and each var by name."""
        out: dict[str, Any] = {
            "args": self.args,
            "state": self.state,
            "tenant": self.tenant,
            "idempotency_key": self.idempotency_key,
            "now": self.now,
            "id": f"{self.seq:04d}",
            "call": {"number": self.call_number, "seq": self.seq},
            "vars": dict(self.vars),
        }
        if self.value is not MISSING:
            out["value"] = self.value
        if self.result is not MISSING:
            out["result"] = self.result
        out.update(self.vars)
        return out


@dataclass(frozen=True)
class TemplateScope:
    """What a template may name where it stands; used by the load-time checks.

    `arguments` are the tool's argument names (its inputSchema's properties): a bare placeholder naming a
    root that is also an argument is refused. `names` are the vars bound at this point.
    """

    arguments: frozenset[str] = frozenset()
    idempotency_argument: str | None = None
    names: frozenset[str] = frozenset()
    value: bool = True
    result: bool = False

    def with_names(self, *names: str) -> TemplateScope:
        return replace(self, names=self.names | frozenset(names))

    def expression_names(self) -> frozenset[str]:
        roots = {"args", "state", "tenant", "idempotency_key", "now", "id", "call", "vars"}
        if self.value:
            roots.add("value")
        if self.result:
            roots.add("result")
        return frozenset(roots) | self.names


# ---------------------------------------------------------------- parsing


def _parse_placeholder(expr: str) -> Placeholder:
    source = "{" + expr + "}"
    optional = expr.endswith("?")
    body = expr[:-1] if optional else expr
    match = _IDENT.fullmatch(body)
    if not match:
        raise TemplateSyntaxError(f"bad placeholder {source}")
    name, rest = match.group(1), match.group(2)
    if rest and rest[0] not in ".[":
        raise TemplateSyntaxError(f"bad placeholder {source}")
    try:
        path = parse_path(rest[1:] if rest.startswith(".") else rest)
    except PathError as exc:
        raise TemplateSyntaxError(f"bad placeholder {source}: {exc}") from exc
    if name == "call":
        if path not in ((), ("number",), ("seq",)):  # bare {call} is refused by the load-time check
            raise TemplateSyntaxError(f"bad placeholder {source}: use {{call.number}} or {{call.seq}}")
        return Placeholder("call", path, optional, source)
    if name in SCALAR_ROOTS:
        if path:
            raise TemplateSyntaxError(f"bad placeholder {source}: {name} has no fields")
        return Placeholder(name, (), optional, source)
    if name in PATH_ROOTS:
        return Placeholder(name, path, optional, source)
    return Placeholder("args", (name, *path), optional, source)


@lru_cache(maxsize=4096)
def tokenize(text: str) -> tuple[Token, ...]:
    """Split a template string into literal text and placeholders."""
    tokens: list[Token] = []
    buf: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "{}" and text.startswith(ch * 2, i):
            buf.append(ch)
            i += 2
        elif ch == "{":
            end = text.find("}", i + 1)
            if end < 0:
                raise TemplateSyntaxError(f"unclosed '{{' in {text!r}")
            if buf:
                tokens.append("".join(buf))
                buf = []
            tokens.append(_parse_placeholder(text[i + 1 : end]))
            i = end + 1
        elif ch == "}":
            raise TemplateSyntaxError(f"unmatched '}}' in {text!r} (write '}}}}' for a brace)")
        else:
            buf.append(ch)
            i += 1
    if buf:
        tokens.append("".join(buf))
    return tuple(tokens)


def placeholders(value: Any) -> list[tuple[str, Placeholder]]:
    """Every placeholder inside a (nested) template value with its location (`.a[0]`), checking syntax."""
    found: list[tuple[str, Placeholder]] = []
    _walk(value, "", found)
    return found


def _walk(value: Any, where: str, found: list[tuple[str, Placeholder]]) -> None:
    if isinstance(value, str):
        try:
            found.extend((where, t) for t in tokenize(value) if isinstance(t, Placeholder))
        except TemplateSyntaxError as exc:
            raise TemplateSyntaxError(exc.message, where) from exc
    elif is_expression(value):
        return
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk(item, f"{where}.{key}", found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _walk(item, f"{where}[{index}]", found)


def is_expression(value: Any) -> bool:
    """`{$expr: "..."}`: an object whose one key is `$expr`."""
    return isinstance(value, dict) and len(value) == 1 and EXPR_KEY in value


def expressions_in(value: Any, where: str = "") -> list[tuple[str, Any]]:
    """Every `{$expr}` inside a (nested) template value with its location (`.a[0].$expr`)."""
    found: list[tuple[str, Any]] = []
    if is_expression(value):
        found.append((f"{where}.{EXPR_KEY}", value[EXPR_KEY]))
    elif isinstance(value, dict):
        if EXPR_KEY in value:
            raise TemplateSyntaxError(f"an object with {EXPR_KEY} may have no other key", f"{where}.{EXPR_KEY}")
        for key, item in value.items():
            found.extend(expressions_in(item, f"{where}.{key}"))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(expressions_in(item, f"{where}[{index}]"))
    return found


def check_template(value: Any, *, allow_result: bool = False, scope: TemplateScope | None = None) -> None:
    """Load-time check of a template value; `result` is only allowed in fault bodies."""
    for where, ph in placeholders(value):
        check_placeholder(ph, scope, where)
        if ph.root == "result" and not allow_result:
            raise TemplateSyntaxError(f"{ph.source}: 'result' is only available in fault bodies", where)
    base = scope or TemplateScope()
    if allow_result:
        base = replace(base, result=True)
    for where, source in expressions_in(value):
        check_expression(source, base, where)


def check_expression(source: Any, scope: TemplateScope, where: str = "") -> None:
    """Load-time check of one expression: syntax, functions, and the names it reads."""
    if not isinstance(source, str):
        raise TemplateSyntaxError("an expression must be a text", where)
    try:
        check_names(compile_expression(source), scope.expression_names())
    except ExpressionSyntaxError as exc:
        raise TemplateSyntaxError(str(exc), where) from None


def check_placeholder(ph: Placeholder, scope: TemplateScope | None, where: str = "") -> None:
    """The checks a placeholder needs beyond its syntax: `{call}` and placeholders that are ambiguous."""
    arguments = scope.arguments if scope is not None else frozenset()
    if not ph.path and ph.root != "args" and ph.root in arguments:
        same = ph.root == "idempotency_key" and scope is not None and scope.idempotency_argument == ph.root
        if not same:  # the idempotency argument *is* the idempotency key: both read the same value
            raise TemplateSyntaxError(
                f"{ph.source} is ambiguous: '{ph.root}' is a template root and also an argument of this tool; "
                f"write {{args.{ph.root}}} for the argument",
                where,
            )
    if ph.root == "args" and len(ph.path) == 0 and "args" in arguments:
        raise TemplateSyntaxError(
            f"{ph.source} is ambiguous: it reads every argument, and this tool also has an argument 'args'; "
            "write {args.args} for that argument",
            where,
        )
    if ph.root == "call" and not ph.path:
        raise TemplateSyntaxError(f"bad placeholder {ph.source}: use {{call.number}} or {{call.seq}}", where)
    if ph.root == "vars" and scope is not None and ph.path and str(ph.path[0]) not in scope.names:
        known = ", ".join(sorted(scope.names)) or "none"
        raise TemplateSyntaxError(f"{ph.source}: no name '{ph.path[0]}' is bound here (bound: {known})", where)


def shadowed_roots(arguments: frozenset[str], idempotency_argument: str | None) -> list[tuple[str, str]]:
    """(argument, warning) for each argument named like a template root: what `twin check` prints."""
    out = []
    for name in sorted(arguments & set(ROOTS)):
        if name == "idempotency_key" and idempotency_argument == name:
            continue
        out.append(
            (
                name,
                f"argument '{name}' shadows the template root '{name}': {{{name}}} reads the root; "
                f"write {{args.{name}}} for the argument",
            )
        )
    return out


# ---------------------------------------------------------------- rendering


def resolve(ph: Placeholder, env: TemplateEnv) -> Any:
    """The value of one placeholder (a copy), or None when optional and missing."""
    value: Any
    if ph.root == "call":
        if not ph.path:
            return {"number": env.call_number, "seq": env.seq}
        return env.call_number if ph.path == ("number",) else env.seq
    if ph.root == "id":
        return f"{env.seq:04d}"
    if ph.root == "now":
        return env.now
    if ph.root in ("tenant", "idempotency_key"):
        value = getattr(env, ph.root)
        value = MISSING if value is None else value
    elif ph.root == "vars":
        value = get_path(dict(env.vars), ph.path)
    else:
        value = get_path(getattr(env, ph.root), ph.path)
    if value is MISSING:
        if ph.optional:
            return None
        if ph.root == "args":
            raise missing_argument(format_path(ph.path))
        if ph.root == "idempotency_key":
            raise missing_argument("idempotency key")
        raise template_error(f"Template {ph.source}: {_describe(ph)} does not exist.")
    size = json_size(value, MAX_RESULT_BYTES)
    if size > MAX_RESULT_BYTES:  # sized before it is copied, as an expression's value is
        raise ToolFailure(500, "TWIN_EXPRESSION_LIMIT", f"Template {ph.source}: more than {MAX_RESULT_BYTES} bytes.")
    try:
        env.budget.allocate(size)
    except OverBudget as exc:
        raise exc.failure() from None
    return deep_copy(value)


def _describe(ph: Placeholder) -> str:
    return format_path((ph.root, *ph.path)) if ph.path else ph.root


def to_text(value: Any) -> str:
    """How a value reads inside text: bool -> true/false, null -> empty, objects -> compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return canonical_json(value)


def render(template: Any, env: TemplateEnv) -> Any:
    """Render a template value: strings are templates, objects and lists recursively (keys literal).

    Each node rendered is a step of the call's budget; over it, ToolFailure like any template failure."""
    try:
        return _render(template, env)
    except OverBudget as exc:
        raise exc.failure() from None


def _render(template: Any, env: TemplateEnv) -> Any:
    env.budget.spend(1)
    if isinstance(template, str):
        return render_string(template, env)
    if is_expression(template):
        return evaluate(compile_expression(template[EXPR_KEY]), env.bindings(), env.budget)
    if isinstance(template, dict):
        return {key: _render(item, env) for key, item in template.items()}
    if isinstance(template, list):
        return [_render(item, env) for item in template]
    return deep_copy(template)


def render_string(template: str, env: TemplateEnv) -> Any:
    tokens = tokenize(template)
    if len(tokens) == 1 and isinstance(tokens[0], Placeholder):
        return resolve(tokens[0], env)
    return "".join(t if isinstance(t, str) else to_text(resolve(t, env)) for t in tokens)


# ---------------------------------------------------------------- path templates


@dataclass(frozen=True)
class _SegmentTemplate:
    parts: tuple[Token, ...]
    index: bool  # written as [..]


@lru_cache(maxsize=2048)
def parse_path_template(template: str) -> tuple[_SegmentTemplate, ...]:
    """Split a path template into segments; a placeholder never spans or splits a segment."""
    segments: list[_SegmentTemplate] = []
    parts: list[Token] = []
    in_index = False
    after_index = False  # just closed a [..]: only '.' or '[' may follow

    def close(index: bool) -> None:
        nonlocal parts
        if not parts:
            raise TemplateSyntaxError(f"empty segment in path {template!r}")
        segments.append(_SegmentTemplate(tuple(parts), index))
        parts = []

    for token in tokenize(template):
        if isinstance(token, Placeholder):
            if after_index:
                raise TemplateSyntaxError(f"missing '.' after ']' in path {template!r}")
            parts.append(token)
            continue
        for ch in token:
            if ch == "." and not in_index:
                if after_index:
                    after_index = False
                else:
                    close(False)
            elif ch == "[" and not in_index:
                if parts:
                    close(False)
                elif segments and not after_index:
                    raise TemplateSyntaxError(f"empty segment in path {template!r}")
                in_index, after_index = True, False
            elif ch == "]" and in_index:
                close(True)
                in_index, after_index = False, True
            elif ch in "[]":
                raise TemplateSyntaxError(f"unbalanced brackets in path {template!r}")
            else:
                if after_index:
                    raise TemplateSyntaxError(f"missing '.' after ']' in path {template!r}")
                parts.append(ch)
    if in_index:
        raise TemplateSyntaxError(f"unclosed '[' in path {template!r}")
    if parts:
        close(False)
    elif template and not after_index:
        raise TemplateSyntaxError(f"path {template!r} ends with '.'")
    merged: list[_SegmentTemplate] = []
    for seg in segments:  # join single characters back into text runs
        joined: list[Token] = []
        for part in seg.parts:
            if isinstance(part, str) and joined and isinstance(joined[-1], str):
                joined[-1] += part
            else:
                joined.append(part)
        if seg.index and not (len(joined) == 1 and (isinstance(joined[0], Placeholder) or _is_int(joined[0]))):
            raise TemplateSyntaxError(f"an index must be a number or one placeholder in {template!r}")
        merged.append(_SegmentTemplate(tuple(joined), seg.index))
    return tuple(merged)


def _is_int(text: Token) -> bool:
    return isinstance(text, str) and re.fullmatch(r"-?\d+", text) is not None


def check_path_template(template: str, scope: TemplateScope | None = None) -> None:
    for segment in parse_path_template(template):
        for part in segment.parts:
            if isinstance(part, Placeholder):
                check_placeholder(part, scope)


def render_path(template: str, env: TemplateEnv) -> Path:
    """Render a path template into segments (spec §2.6 path rule)."""
    out: list[str | int] = []
    for seg in parse_path_template(template):
        if seg.index:
            part = seg.parts[0]
            if isinstance(part, str):
                out.append(int(part))
                continue
            value = resolve(part, env)
            if not isinstance(value, int) or isinstance(value, bool):
                raise _unusable(part, value, "an index must be an integer")
            out.append(value)
            continue
        text: list[str] = []
        for part in seg.parts:
            if isinstance(part, str):
                text.append(part)
                continue
            value = resolve(part, env)
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise _unusable(part, value, "a path segment must be text or a number")
            piece = to_text(value)
            if not 1 <= len(piece) <= MAX_SEGMENT:
                raise _unusable(part, value, f"a path segment must have 1-{MAX_SEGMENT} characters")
            text.append(piece)
        out.append("".join(text))
    return tuple(out)


def _unusable(ph: Placeholder, value: Any, why: str) -> ToolFailure:
    if ph.from_caller:
        name = format_path(ph.path) if ph.root == "args" else "idempotency key"
        return ToolFailure(422, "INVALID_ARGUMENT", f"Argument {name} cannot be used here: {why}.")
    return template_error(f"Template {ph.source} cannot be used in a path: {why}.")

"""Templating (spec §2.6): `{order_id}`, `{value.currency}`, `RF-{id}`, `{idempotency_key?}`.

Roots: args, state, value, result, tenant, idempotency_key, now, id, call.number, call.seq; any
other name is an argument (`{order_id}` = `{args.order_id}`). A string that is exactly one
placeholder keeps the value's JSON type; mixed with text it is interpolated. `?` makes a
placeholder optional (missing -> null, or empty in text). `{{` and `}}` are literal braces.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from twin_engine.canonical import canonical_json
from twin_engine.failures import ToolFailure, missing_argument, template_error
from twin_engine.paths import MISSING, Path, PathError, format_path, get_path, parse_path

DEFAULT_NOW = "2026-01-01T00:00:00Z"
SCALAR_ROOTS = ("tenant", "idempotency_key", "now", "id")
PATH_ROOTS = ("args", "state", "value", "result")
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

    def with_value(self, value: Any) -> TemplateEnv:
        return replace(self, value=value)


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
        if path not in (("number",), ("seq",)):
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
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk(item, f"{where}.{key}", found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _walk(item, f"{where}[{index}]", found)


def check_template(value: Any, *, allow_result: bool = False) -> None:
    """Load-time check of a template value; `result` is only allowed in fault bodies."""
    for where, ph in placeholders(value):
        if ph.root == "result" and not allow_result:
            raise TemplateSyntaxError(f"{ph.source}: 'result' is only available in fault bodies", where)


# ---------------------------------------------------------------- rendering


def resolve(ph: Placeholder, env: TemplateEnv) -> Any:
    """The value of one placeholder (a copy), or None when optional and missing."""
    value: Any
    if ph.root == "call":
        return env.call_number if ph.path == ("number",) else env.seq
    if ph.root == "id":
        return f"{env.seq:04d}"
    if ph.root == "now":
        return env.now
    if ph.root in ("tenant", "idempotency_key"):
        value = getattr(env, ph.root)
        value = MISSING if value is None else value
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
    return copy.deepcopy(value)


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
    """Render a template value: strings are templates, objects and lists recursively (keys literal)."""
    if isinstance(template, str):
        return render_string(template, env)
    if isinstance(template, dict):
        return {key: render(item, env) for key, item in template.items()}
    if isinstance(template, list):
        return [render(item, env) for item in template]
    return copy.deepcopy(template)


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


def check_path_template(template: str) -> None:
    parse_path_template(template)


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

"""Limits on what an agent controls at the twin's door: tool name, arguments, headers, KB query.

Checked by walking the input without recursion, before anything else reads it, so no input can
exhaust the engine's stack or memory (nor the pipeline's behind it: records are deep-copied, hashed,
serialised and walked by evaluators). Over a limit the call is refused - 400 when the input is
malformed or too deep, 413 when it is too big - and still recorded, as an `invalid` call whose
arguments are a bounded `preview` of what was sent: the attempt is evidence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

JSON = Any

MAX_ARGUMENT_BYTES = 256 * 1024  # canonical JSON of one call's arguments
MAX_ARGUMENT_DEPTH = 32  # nested objects/arrays, the arguments object itself being level 1
MAX_ARGUMENT_VALUES = 10_000  # objects, arrays and scalars in one call's arguments
MAX_TOOL_NAME_CHARS = 128
MAX_HEADERS = 64
MAX_HEADER_NAME_CHARS = 256
MAX_HEADER_VALUE_CHARS = 8 * 1024
MAX_KB_QUERY_CHARS = 1024

# What a refused call's record keeps of its arguments.
PREVIEW_DEPTH = 8
PREVIEW_VALUES = 256
PREVIEW_STRING_CHARS = 1024
CUT = "‹cut›"
_MAX_INT_BITS = 1024  # larger integers are not kept in a preview (their decimal text is unbounded)


@dataclass(frozen=True)
class Breach:
    """A limit an input went over: the HTTP status and error code of the refusal, and why."""

    status: int
    code: str
    message: str


def utf8_ok(text: str) -> bool:
    """False for text that cannot be stored as UTF-8 (lone surrogates from `\\ud800` escapes)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def argument_breach(value: Any) -> Breach | None:
    """The first limit `value` goes over (depth, count, size, text encoding), or None.

    Visits at most MAX_ARGUMENT_VALUES values, so a cycle or a billion-element list costs no more
    than an ordinary call. Other non-JSON values are left to the gate's JSON check.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    seen = 0
    size = 0
    while stack:
        node, depth = stack.pop()
        seen += 1
        if isinstance(node, str):
            size += len(node) + 2
            if not utf8_ok(node):
                return _NOT_UNICODE
        elif isinstance(node, dict | list | tuple):
            if depth > MAX_ARGUMENT_DEPTH:
                return _TOO_DEEP
            if seen + len(stack) + len(node) > MAX_ARGUMENT_VALUES:
                return _TOO_MANY
            size += 2
            if isinstance(node, dict):
                for key, child in node.items():
                    if isinstance(key, str):
                        size += len(key) + 3
                        if not utf8_ok(key):
                            return _NOT_UNICODE
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in node)
        else:
            size += 8
        if size > MAX_ARGUMENT_BYTES:
            return Breach(413, "ARGUMENTS_TOO_LARGE", too_large_message())
    return None


_TOO_DEEP = Breach(400, "ARGUMENTS_TOO_DEEP", f"The arguments are nested deeper than {MAX_ARGUMENT_DEPTH} levels.")
_TOO_MANY = Breach(413, "ARGUMENTS_TOO_LARGE", f"The arguments hold more than {MAX_ARGUMENT_VALUES} values.")
_NOT_UNICODE = Breach(400, "INVALID_ARGUMENT", "The arguments hold text that is not valid Unicode.")


def too_large_message() -> str:
    return f"The arguments are larger than {MAX_ARGUMENT_BYTES // 1024} KiB."


def preview(value: Any) -> JSON:
    """A bounded, plain-JSON, UTF-8-safe copy of anything a caller sent (for a refused call's record).

    At most PREVIEW_DEPTH levels and PREVIEW_VALUES values; longer texts are cut; what is cut or is
    no JSON value shows as a `‹…›` marker. Built without recursion.
    """
    budget = PREVIEW_VALUES
    holder: list[JSON] = [None]
    stack: list[tuple[Any, list[JSON] | dict[str, JSON], int | str, int]] = [(value, holder, 0, 1)]
    while stack:
        node, parent, slot, depth = stack.pop()
        budget -= 1
        if budget < 0:
            parent[slot] = CUT  # type: ignore[index]
            continue
        if isinstance(node, dict):
            if depth > PREVIEW_DEPTH:
                parent[slot] = f"‹cut: object nested deeper than {PREVIEW_DEPTH}›"  # type: ignore[index]
                continue
            out: dict[str, JSON] = {}
            items = list(_first(node.items(), PREVIEW_VALUES))
            for key, _ in items:
                out[preview_text(key)] = None
            parent[slot] = out  # type: ignore[index]
            for key, child in reversed(items):
                stack.append((child, out, preview_text(key), depth + 1))
        elif isinstance(node, list | tuple):
            if depth > PREVIEW_DEPTH:
                parent[slot] = f"‹cut: array nested deeper than {PREVIEW_DEPTH}›"  # type: ignore[index]
                continue
            children = list(_first(node, PREVIEW_VALUES))
            seq: list[JSON] = [None] * len(children)
            parent[slot] = seq  # type: ignore[index]
            for index in reversed(range(len(children))):
                stack.append((children[index], seq, index, depth + 1))
        else:
            parent[slot] = _scalar(node)  # type: ignore[index]
    return holder[0]


def _first(items: Any, count: int) -> Any:
    for index, item in enumerate(items):
        if index >= count:
            return
        yield item


def preview_text(value: Any) -> str:
    """A key or text as bounded UTF-8-safe text."""
    if not isinstance(value, str):
        return f"‹{type(value).__name__}›"
    cut = value[:PREVIEW_STRING_CHARS]
    if not utf8_ok(cut):
        cut = cut.encode("utf-8", "replace").decode("utf-8")
    return cut + CUT if len(value) > PREVIEW_STRING_CHARS else cut


def _scalar(value: Any) -> JSON:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if value.bit_length() <= _MAX_INT_BITS else "‹int: too large›"
    if isinstance(value, float):
        return value if math.isfinite(value) else f"‹{value}›"
    return preview_text(value)


def tool_name_breach(tool: Any) -> Breach | None:
    if not isinstance(tool, str) or not tool or len(tool) > MAX_TOOL_NAME_CHARS or not utf8_ok(tool):
        message = f"A tool name is a non-empty text of at most {MAX_TOOL_NAME_CHARS} characters."
        return Breach(400, "INVALID_TOOL_NAME", message)
    return None


def recorded_tool_name(tool: Any) -> str:
    """The name a record keeps: the name itself when valid, else a bounded UTF-8-safe stand-in."""
    if isinstance(tool, str):
        text = tool[:MAX_TOOL_NAME_CHARS]
        if not utf8_ok(text):
            text = text.encode("utf-8", "replace").decode("utf-8")
        return text + "…" if len(tool) > MAX_TOOL_NAME_CHARS else text
    return f"‹{type(tool).__name__}›"


def header_breach(headers: Any) -> Breach | None:
    """Headers are a mapping of text to text: at most MAX_HEADERS, names and values bounded."""
    if headers is None:
        return None
    if not isinstance(headers, Mapping):
        return Breach(400, "INVALID_HEADERS", "The headers must be a mapping of text to text.")
    if len(headers) > MAX_HEADERS:
        return Breach(413, "HEADERS_TOO_LARGE", f"At most {MAX_HEADERS} headers are accepted.")
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str) or not utf8_ok(name) or not utf8_ok(value):
            return Breach(400, "INVALID_HEADERS", "The headers must be a mapping of text to text.")
        if len(name) > MAX_HEADER_NAME_CHARS or len(value) > MAX_HEADER_VALUE_CHARS:
            message = (
                f"A header name is at most {MAX_HEADER_NAME_CHARS} characters"
                f" and a value at most {MAX_HEADER_VALUE_CHARS}."
            )
            return Breach(413, "HEADERS_TOO_LARGE", message)
    return None


def kb_query_breach(query: Any) -> Breach | None:
    if not isinstance(query, str) or not utf8_ok(query):
        return Breach(400, "INVALID_QUERY", "The query must be text.")
    if len(query) > MAX_KB_QUERY_CHARS:
        return Breach(400, "QUERY_TOO_LONG", f"The query is longer than {MAX_KB_QUERY_CHARS} characters.")
    return None

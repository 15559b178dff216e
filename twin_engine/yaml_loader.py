"""A safe YAML/JSON loader that remembers where every value came from.

Twin, scenario and manifest documents are data written by people, so the loader is strict: no anchors or
aliases (they hide what a value is), no duplicate keys (the last one would silently win), string keys only,
no tags on any node (mappings and lists included: a tag asks for a custom type), a size limit. Every error
is a one-line DefinitionError naming the file and the line where the problem starts, and the loaded document
can map a path such as `spec.tools.refund_payment.handler.effects[0].op` back to its line.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from twin_engine.errors import DefinitionError

PathPart = str | int
DocPath = tuple[PathPart, ...]

KIB = 1024
MIB = 1024 * KIB

_TAG = "tag:yaml.org,2002:"
# Bounds that keep every document error a located one: deeper nesting would end the Python walks in a
# RecursionError, longer integers in Python's integer-conversion limit (4,300 digits).
MAX_DOCUMENT_DEPTH = 64  # nested mappings and lists, the document itself being level 1
MAX_NUMBER_DIGITS = 4300
_TOO_DEEP = f"the document is nested deeper than {MAX_DOCUMENT_DEPTH} levels"
_ALIAS_TAG = "!agenttwin/alias"  # stands in for an alias so the walk can report it with its path
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_\-]+$")
_PATH_TOKEN = re.compile(r'\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]|([^.\[\]]+)')


@dataclass(frozen=True)
class LoadedDocument:
    """A parsed document plus the line (1-based) of every value in it."""

    data: Any
    source_name: str
    lines: Mapping[DocPath, int] = field(repr=False)

    def line_for(self, path_parts: Sequence[PathPart]) -> int | None:
        """Line of the value at `path_parts`, or of its nearest ancestor that exists."""
        parts = tuple(path_parts)
        while True:
            line = self.lines.get(parts)
            if line is not None or not parts:
                return line
            parts = parts[:-1]

    def line_for_path(self, path: str) -> int | None:
        """Line for a rendered path (`a.b[0].c`), tolerating keys with dots that were not quoted."""
        return self.line_for(self.resolve_path(path))

    def resolve_path(self, path: str) -> DocPath:
        tokens = parse_path(path)
        node: Any = self.data
        out: list[PathPart] = []
        i = 0
        while i < len(tokens):
            token = tokens[i]
            if isinstance(node, dict) and isinstance(token, str) and token not in node:
                for j in range(len(tokens), i + 1, -1):
                    joined = tokens[i:j]
                    if all(isinstance(t, str) for t in joined) and ".".join(map(str, joined)) in node:
                        token, i = ".".join(map(str, joined)), j - 1
                        break
            if isinstance(node, list) and isinstance(token, str) and token.isdigit():
                token = int(token)
            out.append(token)
            node = _child(node, token)
            i += 1
        return tuple(out)


def render_path(parts: Sequence[PathPart]) -> str:
    """`("spec", "tools", "a.b", "effects", 0)` -> `spec.tools["a.b"].effects[0]`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out


def parse_path(path: str) -> DocPath:
    """Inverse of render_path (also accepts `a.0.b` for indices; resolution decides)."""
    parts: list[PathPart] = []
    for index, quoted, plain in _PATH_TOKEN.findall(path):
        if index:
            parts.append(int(index))
        elif quoted:
            parts.append(str(json.loads(quoted)))
        else:
            parts.append(plain)
    return tuple(parts)


def load_document_file(path: str | Path, *, max_bytes: int, require_mapping: bool = True) -> LoadedDocument:
    """Read and parse a YAML or JSON file; errors are reported under the path as given."""
    name = str(path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError as exc:
        raise DefinitionError(f"cannot read the file: {exc.strerror or exc}", file=name) from None
    if len(raw) > max_bytes:
        raise DefinitionError(f"the file is larger than the limit of {_size(max_bytes)}", file=name)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DefinitionError(f"the file is not valid UTF-8 (byte {exc.start})", file=name) from None
    return load_document_text(text, name, max_bytes=max_bytes, require_mapping=require_mapping)


def load_document_text(text: str, source_name: str, *, max_bytes: int, require_mapping: bool = True) -> LoadedDocument:
    """Parse YAML (or JSON, which is YAML) text into plain JSON-like values with a line map."""
    if len(text.encode("utf-8")) > max_bytes:
        raise DefinitionError(f"the document is larger than the limit of {_size(max_bytes)}", file=source_name)
    json_data, is_json = _try_json(text)
    lines: dict[DocPath, int] = {}
    one_line = _one_line_json_lines(text, json_data) if is_json else None
    if one_line is not None:  # what the YAML walk below would find, without composing every node in Python
        return _checked_root(LoadedDocument(data=json_data, source_name=source_name, lines=one_line), require_mapping)
    # Valid JSON has no literal tabs inside strings, so tabs are whitespace and can be replaced for YAML.
    try:  # the reader refuses some characters (DEL, C1 controls, U+FFFE) as soon as it is made
        loader = _StrictLoader(text.replace("\t", " ") if is_json else text, source_name)
    except yaml.reader.ReaderError as exc:
        if not is_json:
            raise _refused_character(exc, source_name, text) from None
        return _checked_root(LoadedDocument(data=json_data, source_name=source_name, lines={}), require_mapping)
    try:
        root = loader.get_single_node()
        data: Any = None
        if root is not None:
            lines[()] = root.start_mark.line + 1
            data = _Walker(loader, source_name, lines).build(root, ())
    except yaml.YAMLError as exc:
        if not is_json:
            raise _syntax_error(exc, source_name, text) from None
        lines = {}  # valid JSON that YAML cannot read (a key over 1024 characters): keep it, without lines
    finally:
        loader.dispose()
    if is_json:
        data = json_data
    return _checked_root(LoadedDocument(data=data, source_name=source_name, lines=lines), require_mapping)


def _checked_root(doc: LoadedDocument, require_mapping: bool) -> LoadedDocument:
    if require_mapping and not isinstance(doc.data, dict):
        found = "an empty document" if doc.data is None else f"a {_kind(doc.data)}"
        raise DefinitionError(
            f"the document must be a mapping (key: value pairs) at the top level, found {found}",
            file=doc.source_name,
            line=doc.lines.get((), 1),
        )
    return doc


# YAML's line breaks (a JSON string may hold NEL, LS and PS raw) and the longest key sure to stay under YAML's
# 1,024-character simple-key limit however it was escaped (12 characters per character at most, quotes).
_YAML_BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029")
_SAFE_KEY = 80


def _one_line_json_lines(text: str, data: Any) -> dict[DocPath, int] | None:
    """The line map the YAML walk gives a one-line JSON document (every value on line 1), or None when only
    the walk can say: more than one line, characters YAML refuses, a duplicate or long key, a number JSON
    reads as infinite (the walk reports some of those). Event-carried documents are one-line canonical JSON,
    parsed again by every process that plans them."""
    if any(brk in text for brk in _YAML_BREAKS) or yaml.reader.Reader.NON_PRINTABLE.search(text):
        return None

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in items]
        if len(set(keys)) != len(keys) or any(len(k) > _SAFE_KEY for k in keys):
            raise ValueError("the YAML walk decides")
        return dict(items)

    def finite(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise ValueError("the YAML walk decides")
        return value

    try:
        json.loads(text, object_pairs_hook=pairs, parse_float=finite, parse_constant=float)
    except ValueError:
        return None
    lines: dict[DocPath, int] = {}
    _all_on_line_one(data, (), lines)
    return lines


def _all_on_line_one(value: Any, path: DocPath, lines: dict[DocPath, int]) -> None:
    lines[path] = 1
    if isinstance(value, dict):
        for key, item in value.items():
            _all_on_line_one(item, (*path, key), lines)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _all_on_line_one(item, (*path, index), lines)


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that keeps anchors and aliases visible to the walk instead of resolving them, and stops at
    MAX_DOCUMENT_DEPTH (composing recurses in Python: a deeper document would end in a RecursionError)."""

    def __init__(self, stream: str, source_name: str) -> None:
        super().__init__(stream)
        self.anchored: dict[int, str] = {}
        self.tagged: dict[int, str] = {}  # nodes written with an explicit tag (`!!set`, `!x`, `!!str`)
        self.source_name = source_name
        self.depth = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.get_event()  # type: ignore[no-untyped-call]
            return ScalarNode(_ALIAS_TAG, str(event.anchor), event.start_mark, event.end_mark)
        event = self.peek_event()  # type: ignore[no-untyped-call]
        anchor = getattr(event, "anchor", None)
        tag = getattr(event, "tag", None)
        if self.depth >= MAX_DOCUMENT_DEPTH:
            raise DefinitionError(_TOO_DEEP, file=self.source_name, line=event.start_mark.line + 1)
        self.depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
        if anchor is not None and node is not None:
            self.anchored[id(node)] = str(anchor)
        if tag is not None and node is not None:
            self.tagged[id(node)] = str(tag)
        return node


class _Walker:
    def __init__(self, loader: _StrictLoader, source_name: str, lines: dict[DocPath, int]) -> None:
        self.loader = loader
        self.source_name = source_name
        self.lines = lines

    def fail(self, message: str, node: Node, path: DocPath) -> DefinitionError:
        return DefinitionError(message, path=render_path(path), file=self.source_name, line=node.start_mark.line + 1)

    def build(self, node: Node, path: DocPath) -> Any:
        anchor = self.loader.anchored.get(id(node))
        if anchor is not None:
            raise self.fail(f"YAML anchors are not allowed (found &{anchor}); write the value out", node, path)
        tag = self.loader.tagged.get(id(node))
        if tag is not None:  # any explicit tag, on any node: documents are plain data
            raise self.fail(f"YAML tags are not allowed (found {_shown_tag(tag)})", node, path)
        if isinstance(node, MappingNode | SequenceNode) and node.tag not in (_TAG + "map", _TAG + "seq"):
            # a tag on a mapping or list asks for a custom type (`!!python/object`, `!!set`, `!!omap`, `!x`)
            raise self.fail(f"YAML tags are not allowed (found {_shown_tag(node.tag)})", node, path)
        if isinstance(node, MappingNode):
            return self._mapping(node, path)
        if isinstance(node, SequenceNode):
            items = []
            for index, item in enumerate(node.value):
                self.lines[(*path, index)] = item.start_mark.line + 1
                items.append(self.build(item, (*path, index)))
            return items
        if isinstance(node, ScalarNode):
            return self._scalar(node, path)
        raise self.fail(f"unsupported YAML node {type(node).__name__}", node, path)

    def _mapping(self, node: MappingNode, path: DocPath) -> dict[str, Any]:
        result: dict[str, Any] = {}
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = self._key(key_node, path)
            line = key_node.start_mark.line + 1
            if key in result:
                raise self.fail(
                    f"duplicate key '{key}' (first defined on line {first_line[key]})", key_node, (*path, key)
                )
            first_line[key] = line
            self.lines[(*path, key)] = line
            result[key] = self.build(value_node, (*path, key))
        return result

    def _key(self, node: Node, path: DocPath) -> str:
        if node.tag == _ALIAS_TAG:
            raise self.fail(f"YAML aliases are not allowed (found *{node.value})", node, path)
        if isinstance(node, ScalarNode) and node.tag == _TAG + "merge":
            raise self.fail("YAML merge keys (<<) are not allowed", node, path)
        if not isinstance(node, ScalarNode) or node.tag != _TAG + "str":
            shown = node.value if isinstance(node, ScalarNode) else _kind_of_node(node)
            raise self.fail(f"mapping keys must be strings; quote the key {shown!r}", node, path)
        return str(node.value)

    def _scalar(self, node: ScalarNode, path: DocPath) -> Any:
        tag = node.tag
        if tag == _ALIAS_TAG:
            raise self.fail(f"YAML aliases are not allowed (found *{node.value})", node, path)
        if tag in (_TAG + "str", _TAG + "timestamp"):
            return str(node.value)  # dates stay the text the author wrote, as in JSON
        if tag in (_TAG + "null", _TAG + "bool", _TAG + "int", _TAG + "float"):
            if tag == _TAG + "int" and len(node.value) > MAX_NUMBER_DIGITS:
                raise self.fail(
                    f"a number of {len(node.value):,} digits; at most {MAX_NUMBER_DIGITS:,} "
                    "(quote it to keep it as text)",
                    node,
                    path,
                )
            value = self.loader.construct_object(node)
            if isinstance(value, float) and not math.isfinite(value):
                raise self.fail(f"'{node.value}' is not a finite number (JSON has no NaN or infinity)", node, path)
            return value
        raise self.fail(f"YAML tags are not allowed (found {_shown_tag(tag)})", node, path)


def _refused_character(exc: yaml.reader.ReaderError, source_name: str, text: str) -> DefinitionError:
    line = text[: max(0, exc.position)].count("\n") + 1
    return DefinitionError(
        f"the document holds a character YAML does not allow (U+{exc.character:04X})", file=source_name, line=line
    )


def _syntax_error(exc: yaml.YAMLError, source_name: str, text: str) -> DefinitionError:
    if not isinstance(exc, yaml.MarkedYAMLError):
        return DefinitionError(f"YAML syntax error: {exc}", file=source_name)
    mark = exc.problem_mark or exc.context_mark
    if exc.context_mark is not None and (exc.context or "").startswith(_UNCLOSED):
        mark = exc.context_mark  # an unclosed quote or bracket: the problem starts where it was opened
    line = mark.line + 1 if mark else None
    if line is not None:
        line = max(1, min(line, len(text.splitlines()) or 1))  # never past the end of the file
    return DefinitionError(f"YAML syntax error: {_describe_yaml_problem(exc)}", file=source_name, line=line)


# Contexts PyYAML names when a construct opened earlier is never closed; its problem mark is then
# wherever the scanner gave up (often the end of the file).
_UNCLOSED = ("while scanning a quoted scalar", "while parsing a flow")


def _shown_tag(tag: str) -> str:
    return "!!" + tag[len(_TAG) :] if tag.startswith(_TAG) else tag


def _describe_yaml_problem(exc: yaml.MarkedYAMLError) -> str:
    problem = exc.problem or exc.context or "unreadable YAML"
    if exc.context and problem.startswith("but "):
        problem = f"{exc.context}, {problem}"
    if "\\t" in problem:
        problem += " (indent YAML with spaces, not tabs)"
    if (exc.context or "").startswith("while scanning a quoted scalar"):
        problem += " (a quote opened on this line is never closed)"
    elif (exc.context or "").startswith("while parsing a flow"):
        problem += " (a bracket opened on this line is never closed)"
    return problem


def _try_json(text: str) -> tuple[Any, bool]:
    if text.lstrip()[:1] not in ("{", "["):
        return None, False

    def reject_constant(name: str) -> Any:
        raise ValueError(name)

    try:
        data = json.loads(text, parse_constant=reject_constant)
    except (ValueError, RecursionError):  # a number too long, nesting too deep: the walk says where
        return None, False  # not JSON after all: the YAML parser reports the problem with its line
    return (None, False) if _deeper_than(data, MAX_DOCUMENT_DEPTH) else (data, True)


def _deeper_than(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list) and node:
            if depth >= limit:
                return True
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return False


def _child(node: Any, token: PathPart) -> Any:
    if isinstance(node, dict) and isinstance(token, str):
        return node.get(token)
    if isinstance(node, list) and isinstance(token, int) and 0 <= token < len(node):
        return node[token]
    return None


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else type(value).__name__


def _kind_of_node(node: Node) -> str:
    return "mapping" if isinstance(node, MappingNode) else "list"


def _size(limit: int) -> str:
    if limit % MIB == 0:
        return f"{limit // MIB} MiB"
    if limit % KIB == 0:
        return f"{limit // KIB} KiB"
    return f"{limit} bytes"

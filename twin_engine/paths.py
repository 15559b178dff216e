"""State paths: `orders.ORD-1001.refund_count`, `escalations[0].order_id`.

A path is a tuple of segments: a `str` is an object key, an `int` a list index. Keys are taken
whole, so a key may hold any character except `.`, `[` and `]`.
"""

from __future__ import annotations

import re
from typing import Any, Final

from twin_engine.errors import TwinError

Segment = str | int
Path = tuple[Segment, ...]


class _Missing:
    """The absence of a value (distinct from JSON null)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()

_INDEX = re.compile(r"-?\d+")


class PathError(TwinError):
    """A path is malformed, or cannot be written at that place in the state."""


def parse_path(path: str) -> Path:
    """Parse `a.b[0].c` into `("a", "b", 0, "c")`. The empty string is the root `()`."""
    if path == "":
        return ()
    segments: list[Segment] = []
    i, n = 0, len(path)
    expect_key = True  # a key must follow the start or a dot
    while i < n:
        ch = path[i]
        if ch == "[":
            end = path.find("]", i)
            if end < 0 or not _INDEX.fullmatch(path[i + 1 : end]):
                raise PathError(f"bad index in path {path!r}")
            if expect_key and segments:
                raise PathError(f"empty segment in path {path!r}")
            segments.append(int(path[i + 1 : end]))
            i = end + 1
            expect_key = False
        elif ch == ".":
            if expect_key:
                raise PathError(f"empty segment in path {path!r}")
            expect_key = True
            i += 1
        elif ch == "]":
            raise PathError(f"unbalanced ']' in path {path!r}")
        else:
            if not expect_key:
                raise PathError(f"missing '.' before {path[i:]!r} in path {path!r}")
            j = i
            while j < n and path[j] not in ".[]":
                j += 1
            segments.append(path[i:j])
            i = j
            expect_key = False
    if expect_key:
        raise PathError(f"path {path!r} ends with '.'")
    return tuple(segments)


def format_path(path: Path) -> str:
    """The inverse of parse_path: `("a", 0, "b")` -> `a[0].b`."""
    out: list[str] = []
    for seg in path:
        if isinstance(seg, int):
            out.append(f"[{seg}]")
        else:
            out.append(f".{seg}" if out else seg)
    return "".join(out)


def _child(container: Any, seg: Segment) -> Any:
    if isinstance(container, dict):
        key = str(seg) if isinstance(seg, int) else seg
        return container.get(key, MISSING)
    if isinstance(container, list):
        if isinstance(seg, str):
            if not _INDEX.fullmatch(seg):
                return MISSING
            seg = int(seg)
        if -len(container) <= seg < len(container):
            return container[seg]
    return MISSING


def get_path(root: Any, path: Path | str) -> Any:
    """The value at `path`, or MISSING when any step does not exist."""
    segments = parse_path(path) if isinstance(path, str) else path
    current = root
    for seg in segments:
        current = _child(current, seg)
        if current is MISSING:
            return MISSING
    return current


def _list_index(container: list[Any], seg: Segment, *, allow_end: bool) -> int:
    if isinstance(seg, str):
        if not _INDEX.fullmatch(seg):
            raise PathError(f"cannot use key {seg!r} on a list")
        seg = int(seg)
    limit = len(container) + (1 if allow_end else 0)
    if not -len(container) <= seg < limit:
        raise PathError(f"index {seg} is out of range (length {len(container)})")
    return seg


def set_path(root: Any, path: Path, value: Any) -> None:
    """Write `value` at `path` inside `root` (in place), creating missing objects on the way.

    An index equal to the list's length appends. Writing through a non-container raises PathError.
    """
    if not path:
        raise PathError("cannot replace the whole state")
    current = root
    for pos, seg in enumerate(path[:-1]):
        nxt = _child(current, seg)
        if nxt is MISSING or nxt is None:
            if not isinstance(current, dict):
                raise PathError(f"{format_path(path[: pos + 1])} does not exist")
            nxt = {}
            current[str(seg)] = nxt
        elif not isinstance(nxt, dict | list):
            raise PathError(f"{format_path(path[: pos + 1])} is not an object or a list")
        current = nxt
    last = path[-1]
    if isinstance(current, dict):
        current[str(last)] = value
    elif isinstance(current, list):
        index = _list_index(current, last, allow_end=True)
        if index == len(current):
            current.append(value)
        else:
            current[index] = value
    else:
        raise PathError(f"{format_path(path[:-1]) or 'the state'} is not an object or a list")


def delete_path(root: Any, path: Path) -> bool:
    """Remove the value at `path` (in place). Returns False when there was nothing to remove."""
    if not path:
        raise PathError("cannot delete the whole state")
    parent = get_path(root, path[:-1])
    last = path[-1]
    if isinstance(parent, dict):
        key = str(last)
        if key in parent:
            del parent[key]
            return True
        return False
    if isinstance(parent, list) and _child(parent, last) is not MISSING:
        del parent[_list_index(parent, last, allow_end=False)]
        return True
    return False

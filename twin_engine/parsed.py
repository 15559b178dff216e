"""Parsed and validated documents and compiled twins, kept per process by the hash of their content.

Every evaluation request carries its twin and scenarios, and every command reads the same files: parsing
YAML, validating against JSON Schema and compiling a twin again each time was a third of the pipeline's
CPU. The results are immutable (frozen dataclasses the engine never mutates), so one parse is shared.
A key always includes the content's SHA-256 and everything else the result depends on (the name used in
error messages, the twin's tool names); a file whose bytes changed is parsed again. Failures are never
cached: a bad document raises the same error every time. At most `MAX_ENTRIES`, least recently used out.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
MAX_ENTRIES = 512

_lock = threading.Lock()
_entries: OrderedDict[Hashable, Any] = OrderedDict()


def text_digest(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def file_key(path: str | Path, max_bytes: int) -> tuple[str, str] | None:
    """(the path as given, SHA-256 of its bytes), or None when it cannot be cached (missing, too large:
    the loader then reports the problem itself)."""
    try:
        if os.stat(path).st_size > max_bytes:
            return None
        data = Path(path).read_bytes()
    except OSError:
        return None
    return str(path), text_digest(data)


def cached(key: Hashable | None, build: Callable[[], T]) -> T:
    """The value built for `key` before in this process, else `build()` (kept unless it raises)."""
    if key is None:
        return build()
    with _lock:
        if key in _entries:
            _entries.move_to_end(key)
            found: T = _entries[key]
            return found
    value = build()  # outside the lock: a slow parse never blocks other threads' lookups
    with _lock:
        _entries[key] = value
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)
    return value


def clear() -> None:
    with _lock:
        _entries.clear()

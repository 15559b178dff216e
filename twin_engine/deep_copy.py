"""A deep copy of plain data (the twin's state, arguments, replies) at C speed.

`copy.deepcopy` walks every value in Python: copying the twin's state for each case and call was the
largest single cost of simulating one (0.5 ms per copy of the demo twin's state). `marshal` round-trips
the exact built-in types (dict, list, tuple, str, int, float, bool, None, bytes, sets) in C, keeps key order
and keeps a value that appears twice shared, as `copy.deepcopy` does. Anything else (a subclass, an object
an adapter returned) goes to `copy.deepcopy`, so the result is always what `copy.deepcopy` would give.
"""

from __future__ import annotations

import copy
import marshal
from typing import TypeVar

T = TypeVar("T")
_IMMUTABLE = (str, int, float, bool, type(None))


def deep_copy(value: T) -> T:
    if type(value) in _IMMUTABLE:
        return value
    try:
        copied: T = marshal.loads(marshal.dumps(value))  # type: ignore[arg-type]  # noqa: S302 (bytes just written)
    except ValueError:  # a type marshal does not write exactly: the general copy
        return copy.deepcopy(value)
    return copied

"""The cost budget of one twin call: every step, loop iteration, converted value and allocation counts.

One `Budget` is made per call (it lives on the call's TemplateEnv) and every part of the engine that does
work in proportion to the data spends from it *before* doing the work:

- steps: an expression's syntax-tree nodes as they are visited (a macro's body once per element), each
  value converted for an expression, each handler step run, each `forEach` iteration (nested loops
  multiply: the inner loop's iterations are spent once per outer iteration), each entry a `find` looks
  at, each template node rendered. Counted, not timed, so a refusal is deterministic.
- bytes: what the call allocates in proportion to its data - a text's characters, 8 per list or map
  entry, a value's JSON size when an expression or a template hands it back. Checked before the text or
  list is built (`a + b`, `replace`, `join`, `split`, `flatten` know their result's size in advance).
- time: a wall-clock deadline, a backstop for work no counter covers. The step and byte budgets are sized
  so that a call within them ends far below it (docs/trust-boundaries.md has the measured worst case):
  the deadline only refuses calls that something outside the engine slowed down, and such a refusal is
  recorded with its own code (TWIN_CALL_TIME_LIMIT), so a run that differs because of it says so.

Over any of them the call is refused - 500 TWIN_BUDGET_EXCEEDED (or TWIN_CALL_TIME_LIMIT), a twin error
in the call record, the state unchanged - and the case goes on.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from twin_engine.failures import ToolFailure

STEP_BUDGET = 100_000
BYTE_BUDGET = 4 << 20
CALL_SECONDS = 30.0
ENTRY_BYTES = 8  # what one list or map entry costs in the byte budget (a reference)
_CLOCK_EVERY = 1024  # steps between two reads of the clock

BUDGET_CODE = "TWIN_BUDGET_EXCEEDED"
TIME_CODE = "TWIN_CALL_TIME_LIMIT"


class OverBudget(BaseException):
    """Raised where the budget runs out; a BaseException so that cel-python's own `except Exception`
    handlers (which log their arguments) let it through untouched. `failure()` is the call's answer."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def failure(self, where: str = "") -> ToolFailure:
        return ToolFailure(500, self.code, f"{where}{self.message}")


@dataclass
class Budget:
    """What one call may still spend, and a conversion cache for the values its expressions read.

    The cache maps a JSON container (by identity) to its CEL form; `forget_along` drops the containers an
    effect changed in place, so an unchanged part of the state is converted once per call.
    """

    steps: int = STEP_BUDGET
    bytes: int = BYTE_BUDGET
    seconds: float = field(default_factory=lambda: CALL_SECONDS)
    deadline: float = field(default=0.0, repr=False)  # time.monotonic(); 0: `seconds` from now
    _until_clock: int = field(default=_CLOCK_EVERY, repr=False)
    cache: dict[int, tuple[Any, Any]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.deadline:
            self.deadline = time.monotonic() + self.seconds

    def spend(self, steps: int = 1) -> None:
        self.steps -= steps
        if self.steps < 0:
            raise OverBudget(BUDGET_CODE, f"The call went over its budget of {STEP_BUDGET:,} steps.")
        self._until_clock -= steps
        if self._until_clock <= 0:
            self._until_clock = _CLOCK_EVERY
            self.check_time()

    def allocate(self, size: int) -> None:
        """Spend `size` bytes; call it before building what they are for."""
        self.bytes -= size
        if self.bytes < 0:
            raise OverBudget(BUDGET_CODE, f"The call went over its budget of {BYTE_BUDGET >> 20} MiB allocated.")

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise OverBudget(TIME_CODE, f"The call went over its time limit ({self.seconds:g} s, or the case's).")

    def forget_along(self, root: Any, path: Sequence[str | int]) -> None:
        """Drop the cached forms of `root` and of every container on `path` (what an effect changed)."""
        node = root
        self.cache.pop(id(node), None)
        for segment in path:
            if isinstance(node, dict) and isinstance(segment, str):
                node = node.get(segment)
            elif isinstance(node, list) and isinstance(segment, int) and -len(node) <= segment < len(node):
                node = node[segment]
            else:
                return
            if not isinstance(node, dict | list):
                return
            self.cache.pop(id(node), None)


def json_size(value: Any, limit: int) -> int:
    """The size of `value` as compact JSON (strings counted by characters, numbers as 8), or `limit + 1`
    as soon as it is known to be larger: the walk stops there, so sizing a value costs at most `limit`.

    Works on JSON values and on cel-python's (its types subclass str, int, float, list and dict); a
    value shared many times (`args.a.map(x, args.a)`) is counted each time, as JSON would repeat it.
    """
    size = 0
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            size += len(node) + 2
        elif isinstance(node, dict):
            size += 2 + len(node)
            if size > limit:
                return limit + 1
            for key, child in node.items():
                size += len(key) + 3 if isinstance(key, str) else ENTRY_BYTES
                stack.append(child)
        elif isinstance(node, list | tuple):
            size += 2 + len(node)
            if size > limit:
                return limit + 1
            stack.extend(node)
        else:
            size += ENTRY_BYTES
        if size > limit:
            return limit + 1
    return size

"""The shared comparators (spec §2.4): twin preconditions and grading expectations use these.

Usage::

    from twin_engine.compare import check, comparators_of
    value = get_path(state, "orders.ORD-1001.refund_count")
    result = check(value, value is not MISSING, comparators_of(expectation))
    result.ok, result.reason          # False, "expected 1, got 2"

Rules:
- Every comparator present must hold; the first that fails gives the reason.
- With no comparator at all the value must exist: present and not null.
- `equals` fails on a missing value; `notEquals` passes on it; `in` takes a list.
- `exists: true` means present and not null; `exists: false` means missing or null.
- `gte`/`lte`/`gt`/`lt` need numbers on both sides; a bool is never a number.
- `matches` is a regex search over text with the `regex` engine: input capped at 1 MiB; compiling and
  matching together get 0.5 s. A pattern longer than 1000 characters or whose compiled size (estimated
  by `pattern_cost`: nested counted repetitions multiply) is over 50,000 is refused before it is
  compiled: the `regex` engine's compilation is not covered by its matching timeout, and one such
  pattern took 27 s and 9 GB. An invalid, over-bound or out-of-time pattern raises UnsafePatternError:
  it is not the value that failed, so grading reports ERROR (never FAIL, never PASS).
- Equality is JSON equality: 1 == 1.0, but True != 1 and "1" != 1.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import regex

from twin_engine.canonical import canonical_json
from twin_engine.paths import MISSING

COMPARATORS = ("equals", "notEquals", "in", "exists", "gte", "lte", "gt", "lt", "matches")
MAX_MATCH_INPUT = 1 << 20
MATCH_TIMEOUT_S = 0.5  # compile + match
MAX_PATTERN_CHARS = 1000
MAX_PATTERN_COST = 50_000  # measured: a pattern of this cost compiles in ~0.1 s and < 100 MB


@dataclass(frozen=True)
class Comparison:
    ok: bool
    reason: str  # why it failed ("expected 1, got 2"); on success a short "got 1"


def comparators_of(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """The comparator entries of a condition/expectation mapping (other keys are ignored)."""
    return {key: mapping[key] for key in COMPARATORS if key in mapping}


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: numbers compare by value, a bool equals only a bool, containers deeply."""
    if is_number(a) and is_number(b):
        return bool(a == b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def show(value: Any, limit: int = 120) -> str:
    """A value as it appears in reasons: JSON text (strings quoted), `nothing` when missing."""
    if value is MISSING:
        return "nothing"
    try:
        text = canonical_json(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check(actual: Any, present: bool, comparators: Mapping[str, Any]) -> Comparison:
    """Compare `actual` (ignored when `present` is False) with every comparator in `comparators`."""
    value = actual if present else MISSING
    if not comparators:
        if value is MISSING or value is None:
            return Comparison(False, f"expected a value, got {show(value)}")
        return Comparison(True, f"got {show(value)}")
    for name in COMPARATORS:
        if name in comparators:
            failure = _CHECKS[name](value, comparators[name])
            if failure is not None:
                return Comparison(False, failure)
    return Comparison(True, f"got {show(value)}")


def _equals(value: Any, expected: Any) -> str | None:
    if value is not MISSING and json_equal(value, expected):
        return None
    return f"expected {show(expected)}, got {show(value)}"


def _not_equals(value: Any, expected: Any) -> str | None:
    if value is MISSING or not json_equal(value, expected):
        return None
    return f"expected anything but {show(expected)}, got {show(value)}"


def _in(value: Any, options: Any) -> str | None:
    if not isinstance(options, list):
        return f"'in' needs a list, got {show(options)}"
    if value is not MISSING and any(json_equal(value, o) for o in options):
        return None
    return f"expected one of {show(options)}, got {show(value)}"


def _exists(value: Any, wanted: Any) -> str | None:
    there = value is not MISSING and value is not None
    if bool(wanted) == there:
        return None
    return f"expected a value, got {show(value)}" if wanted else f"expected no value, got {show(value)}"


def _numeric(label: str, holds: Callable[[float, float], bool]) -> Callable[[Any, Any], str | None]:
    def compare(value: Any, limit: Any) -> str | None:
        if not is_number(limit):
            return f"cannot compare with {show(limit)}: not a number"
        if is_number(value) and holds(value, limit):
            return None
        return f"expected {label} {show(limit)}, got {show(value)}"

    return compare


def _matches(value: Any, pattern: Any) -> str | None:
    if not isinstance(pattern, str):
        return f"'matches' needs a text pattern, got {show(pattern)}"
    if not isinstance(value, str):
        return f"expected text matching {show(pattern)}, got {show(value)}"
    if regex_search(pattern, value):
        return None
    return f"expected text matching {show(pattern)}, got {show(value)}"


_CHECKS: dict[str, Callable[[Any, Any], str | None]] = {
    "equals": _equals,
    "notEquals": _not_equals,
    "in": _in,
    "exists": _exists,
    "gte": _numeric("at least", lambda a, b: a >= b),
    "lte": _numeric("at most", lambda a, b: a <= b),
    "gt": _numeric("more than", lambda a, b: a > b),
    "lt": _numeric("less than", lambda a, b: a < b),
    "matches": _matches,
}


class UnsafePatternError(ValueError):
    """A pattern that is invalid or ran out of time."""


def regex_search(pattern: str, text: str) -> bool:
    """Search `pattern` in (the first MiB of) `text`; UnsafePatternError if invalid, over the bound or
    slower than MATCH_TIMEOUT_S for compiling and matching together."""
    problem = pattern_problem(pattern)
    if problem is not None:
        raise UnsafePatternError(problem)
    started = _clock()
    compiled = _compile(pattern)
    left = MATCH_TIMEOUT_S - (_clock() - started)
    if left <= 0:
        raise UnsafePatternError(f"pattern {show(pattern)} took longer than {MATCH_TIMEOUT_S} s to compile")
    try:
        return compiled.search(text[:MAX_MATCH_INPUT], timeout=left) is not None
    except TimeoutError as exc:
        raise UnsafePatternError(f"pattern {show(pattern)} took longer than {MATCH_TIMEOUT_S} s") from exc


def _clock() -> float:
    return time.monotonic()


@functools.lru_cache(maxsize=256)
def _compile(pattern: str) -> regex.Pattern[str]:
    try:
        return regex.compile(pattern)
    except (regex.error, RecursionError, OverflowError, ValueError) as exc:
        raise UnsafePatternError(f"invalid pattern {show(pattern)}: {exc}") from exc


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` can never compile within the budget (too long, too costly), or None. No compiling."""
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"pattern is longer than {MAX_PATTERN_CHARS} characters"
    cost = pattern_cost(pattern)
    if cost > MAX_PATTERN_COST:
        return (
            f"pattern {show(pattern)} is too costly to compile (about {cost} units, at most {MAX_PATTERN_COST}:"
            " nested counted repetitions multiply)"
        )
    return None


def check_pattern(pattern: str) -> str | None:
    """Why `pattern` can never be used (over the bound, or invalid), or None; for load-time checks.

    Compiles only a pattern within the bound, and does not time it: the verdict is the same on any machine.
    """
    problem = pattern_problem(pattern)
    if problem is not None:
        return problem
    try:
        _compile(pattern)
    except UnsafePatternError as exc:
        return str(exc)
    return None


# What follows `(` before a group's content: `(?:`, `(?=`, `(?<!`, `(?P<name>`, `(?i:`, ...; or a whole
# construct that holds no content: inline flags `(?i)`, a comment `(?#...)`, a backreference `(?P=name)`.
_GROUP_PREFIX = regex.compile(r"\(\?(?:#[^)]*\)|P=\w+\)|[\w-]*\)|[:>|=!]|<[=!]|P?<\w+>|'\w+'|[\w-]*:)")
_QUANTIFIER = regex.compile(r"\{(\d*)(?:(,)(\d*))?\}")


def pattern_cost(pattern: str) -> int:
    """An estimate of the compiled size of `pattern`: each atom costs 1, a group the sum of its parts,
    and a counted repetition `{m}` multiplies what it repeats by m (`{m,n}` and `{m,}` by m + 1: the
    engine unrolls the minimum, then loops). `*`, `+`, `?` do not multiply. A scan, not a parse: what
    it cannot read counts as an atom, and the real compilation is still timed.
    """
    stack: list[int] = [0]  # the cost of each open group so far
    last = 0  # the cost of the last item (what a quantifier repeats)
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            i += 2
            last = 1
            stack[-1] += 1
            continue
        if ch == "[":
            i = _class_end(pattern, i)
            last = 1
            stack[-1] += 1
            continue
        if ch == "(":
            prefix = _GROUP_PREFIX.match(pattern, i)
            if prefix is not None and prefix.group().endswith(")"):  # flags, a comment or a backreference
                i = prefix.end()
                continue
            stack.append(0)
            i = prefix.end() if prefix is not None else i + 1
            continue
        if ch == ")":
            if len(stack) > 1:
                last = stack.pop()
                stack[-1] += last
            i += 1
            continue
        if ch == "{":
            quantifier = _QUANTIFIER.match(pattern, i)
            if quantifier is not None:
                low, comma, _ = quantifier.groups()
                if low:
                    times = int(low) + (1 if comma else 0)
                    stack[-1] += last * (times - 1)
                    last *= times
                i = quantifier.end()
                continue
        if ch in "*+?|^$.":
            i += 1
            if ch == ".":
                last = 1
                stack[-1] += 1
            continue
        last = 1
        stack[-1] += 1
        i += 1
    return sum(stack)


def _class_end(pattern: str, start: int) -> int:
    """The index just past the character class opening at `start` (nested sets and `[:alpha:]` allowed)."""
    i, n, depth = start + 1, len(pattern), 1
    if i < n and pattern[i] == "^":
        i += 1
    if i < n and pattern[i] == "]":
        i += 1  # a leading `]` is a literal
    while i < n and depth:
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            if pattern.startswith("[:", i):
                close = pattern.find(":]", i + 2)
                if close >= 0:
                    i = close + 2
                    continue
            depth += 1
        elif ch == "]":
            depth -= 1
        i += 1
    return i


def contains(actual: Any, expected: Any) -> bool:
    """Recursive subset match: every key of an `expected` object is in `actual` with a matching value.

    Anything other than an object (lists included) must be JSON-equal. Used by fault `argsMatch`
    and recorded-fixture `match`.
    """
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and contains(actual[key], value) for key, value in expected.items()
        )
    return json_equal(actual, expected)

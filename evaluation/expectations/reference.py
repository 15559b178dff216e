"""reachesReferenceState: the agent's final state equals the state the scenario's reference calls reach.

    - type: reachesReferenceState
      calls:                                   # what a correct agent does; any path to the same state passes
        - {tool: cancel_reservation, arguments: {reservation_id: ZFA04Y}}
      paths: [reservations.ZFA04Y, users.mia_li.payment_methods]   # optional; default: the whole state
      ignore: ["escalations[*].ticket_id"]     # optional; `*` is any key or index

The target comes with the case (twin_engine.reference: replayed by the simulator on a fresh twin, same
initial state and seed, no faults). It is outcome evidence, like `state`. A failure names the first
differences, each with the expected and the actual value, within a bounded size.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from evaluation.expectations._spec import Finding, InvalidExpectationError, Spec, errored, failed, passed, skipped
from evaluation.expectations._text import more
from evaluation.expectations.context import EvalContext
from evaluation.results import Evidence
from twin_engine.compare import show
from twin_engine.diff import diff_states
from twin_engine.paths import MISSING, PathError, get_path, parse_path
from twin_engine.records import StateChange
from twin_engine.reference import TARGET_KEY

JSON = Any

SHOWN_IN_REASON = 3
SHOWN_AS_EVIDENCE = 10
VALUE_WIDTH = 100
MAX_PATTERNS = 100
_SEGMENT = re.compile(r"\[(\*|-?\d+)\]|\.?([^.\[\]]+)")


def evaluate_reaches_reference_state(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    paths = _paths(spec)
    ignore = _ignore_patterns(spec)
    _calls(spec)
    target = spec.raw.get(TARGET_KEY)
    if not isinstance(target, dict):
        return errored("No reference state was computed for this case (the simulator replays the reference calls).")
    if target.get("problem"):
        return errored(f"The reference calls could not be replayed: {target['problem']}.")
    expected = target.get("state")
    if not isinstance(expected, dict):
        return errored("The reference state is missing from the case.")
    if ctx.state_after is None:
        return skipped("No twin state to compare with the reference state.")
    differences = _differences(expected, ctx.state_after, paths, ignore)
    scope = f"{len(paths)} path(s)" if paths else "the whole state"
    if not differences:
        return passed(f"The final state matches the reference state ({scope}).")
    shown = "; ".join(_describe(change) for change in differences[:SHOWN_IN_REASON])
    evidence = tuple(_evidence(change) for change in differences[:SHOWN_AS_EVIDENCE])
    return failed(
        f"The final state differs from the reference state ({scope}): {shown}"
        f"{more(len(differences) - SHOWN_IN_REASON)}.",
        "REFERENCE_STATE_MISMATCH",
        evidence,
        differences=len(differences),
    )


def _calls(spec: Spec) -> None:
    calls = spec.raw.get("calls")
    if not isinstance(calls, list) or not calls:
        raise InvalidExpectationError("calls must be a non-empty list of {tool, arguments}")


def _paths(spec: Spec) -> tuple[str, ...]:
    if not spec.has("paths"):
        return ()
    paths = spec.texts("paths")
    for path in paths:
        try:
            parse_path(path)
        except PathError as exc:
            raise InvalidExpectationError(str(exc)) from None
    return paths


def _ignore_patterns(spec: Spec) -> tuple[tuple[str | int, ...], ...]:
    if not spec.has("ignore"):
        return ()
    patterns = spec.texts("ignore")
    if len(patterns) > MAX_PATTERNS:
        raise InvalidExpectationError(f"ignore may list at most {MAX_PATTERNS} paths")
    return tuple(_pattern(p) for p in patterns)


def _pattern(text: str) -> tuple[str | int, ...]:
    """`escalations[*].ticket_id` -> ("escalations", "*", "ticket_id"); `*` matches any key or index."""
    segments: list[str | int] = []
    position = 0
    for match in _SEGMENT.finditer(text):
        if match.start() != position:
            raise InvalidExpectationError(f"bad ignore path {text!r}")
        index, key = match.group(1), match.group(2)
        segments.append(key if key is not None else ("*" if index == "*" else int(index)))
        position = match.end()
    if position != len(text) or not segments:
        raise InvalidExpectationError(f"bad ignore path {text!r}")
    return tuple(segments)


def _without(value: JSON, pattern: tuple[str | int, ...]) -> None:
    """Remove what `pattern` names from `value`, in place."""
    if not pattern:
        return
    head, rest = pattern[0], pattern[1:]
    if isinstance(value, dict):
        keys = list(value) if head == "*" else [str(head)] if str(head) in value else []
        for key in keys:
            if rest:
                _without(value[key], rest)
            else:
                del value[key]
    elif isinstance(value, list):
        if head == "*":
            indexes = list(range(len(value)))
        elif isinstance(head, int) and -len(value) <= head < len(value):
            indexes = [head % len(value)]
        else:
            indexes = []
        for index in reversed(indexes):
            if rest:
                _without(value[index], rest)
            else:
                value[index] = None  # keep the other positions where they are


def _differences(
    expected: dict[str, JSON],
    actual: dict[str, JSON],
    paths: tuple[str, ...],
    ignore: tuple[tuple[str | int, ...], ...],
) -> list[StateChange]:
    want, got = copy.deepcopy(expected), copy.deepcopy(actual)
    for pattern in ignore:
        _without(want, pattern)
        _without(got, pattern)
    if not paths:
        return list(diff_states(want, got))
    out: list[StateChange] = []
    for path in paths:
        a, b = get_path(want, path), get_path(got, path)
        if a is MISSING and b is MISSING:
            continue
        if a is MISSING:
            out.append(StateChange("added", path, after=b))
        elif b is MISSING:
            out.append(StateChange("removed", path, before=a))
        else:
            out.extend(_prefixed(path, diff_states(a, b)))
    return out


def _prefixed(path: str, changes: tuple[StateChange, ...]) -> list[StateChange]:
    out = []
    for change in changes:
        sub = change.path
        full = path if not sub else (f"{path}{sub}" if sub.startswith("[") else f"{path}.{sub}")
        out.append(StateChange(change.op, full, before=change.before, after=change.after))
    return out


def _describe(change: StateChange) -> str:
    if change.op == "added":
        return f"{change.path}: expected nothing, got {show(change.after, VALUE_WIDTH)}"
    if change.op == "removed":
        return f"{change.path}: expected {show(change.before, VALUE_WIDTH)}, got nothing"
    return f"{change.path}: expected {show(change.before, VALUE_WIDTH)}, got {show(change.after, VALUE_WIDTH)}"


def _evidence(change: StateChange) -> Evidence:
    return Evidence(
        kind="state",
        detail=_describe(change),
        ref=change.path,
        expected=None if change.op == "added" else change.before,
        actual=None if change.op == "removed" else change.after,
    )

"""State diffs: the `changes` of a call record, leaf by leaf, in sorted path order."""

from __future__ import annotations

from typing import Any

from twin_engine.compare import json_equal
from twin_engine.paths import Path, format_path
from twin_engine.records import StateChange


def diff_states(before: Any, after: Any) -> tuple[StateChange, ...]:
    """Differences from `before` to `after`.

    Objects are compared key by key and lists index by index; a key or index present on one side
    only is one `added`/`removed` entry holding the whole value.
    """
    out: list[StateChange] = []
    _diff(before, after, (), out)
    return tuple(out)


def _diff(before: Any, after: Any, path: Path, out: list[StateChange]) -> None:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after)):
            sub = (*path, key)
            if key not in after:
                out.append(StateChange("removed", format_path(sub), before=before[key]))
            elif key not in before:
                out.append(StateChange("added", format_path(sub), after=after[key]))
            else:
                _diff(before[key], after[key], sub, out)
        return
    if isinstance(before, list) and isinstance(after, list):
        for index in range(max(len(before), len(after))):
            sub = (*path, index)
            if index >= len(after):
                out.append(StateChange("removed", format_path(sub), before=before[index]))
            elif index >= len(before):
                out.append(StateChange("added", format_path(sub), after=after[index]))
            else:
                _diff(before[index], after[index], sub, out)
        return
    if not json_equal(before, after):
        out.append(StateChange("changed", format_path(path), before=before, after=after))

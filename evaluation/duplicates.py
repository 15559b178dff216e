"""Duplicate side effects: the same logical effect applied more than once (spec §7.2).

Counted over every call whose changes were applied (a non-empty change list) and that was not an
idempotent replay, network redeliveries included (a redelivered refund moves money too). A write that
changed nothing (an idempotent overwrite called again) is no side effect, whatever its `mutated` flag
says. Calls are grouped by the twin's rendered effect key (`refund:ORD-1001`), or, for tools without
one, by tool + canonical arguments.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from evaluation.calls import applied
from twin_engine.canonical import canonical_json
from twin_engine.records import CallRecord


@dataclass(frozen=True)
class DuplicateGroup:
    key: str
    seqs: tuple[int, ...]

    @property
    def times(self) -> int:
        return len(self.seqs)


def side_effect_key(record: CallRecord) -> str:
    if record.effect_key:
        return record.effect_key
    return f"{record.tool}:{canonical_json(record.arguments)}"


def applied_effects(records: Iterable[CallRecord], tool: str | None = None) -> tuple[CallRecord, ...]:
    """The calls (redeliveries included) whose effect landed: changes applied, not replayed, in seq order."""
    chosen = (r for r in records if applied(r) and not r.replayed and (tool is None or r.tool == tool))
    return tuple(sorted(chosen, key=lambda r: r.seq))


def duplicate_groups(records: Iterable[CallRecord], tool: str | None = None) -> list[DuplicateGroup]:
    """Groups of more than one applied call with the same effect, ordered by their first seq."""
    groups: dict[str, list[int]] = {}
    for record in applied_effects(records, tool):
        groups.setdefault(side_effect_key(record), []).append(record.seq)
    return [DuplicateGroup(key, tuple(seqs)) for key, seqs in groups.items() if len(seqs) > 1]


def duplicate_side_effects(records: Iterable[CallRecord], tool: str | None = None) -> int:
    """Extra applications: the sum over duplicate groups of (size - 1)."""
    return sum(group.times - 1 for group in duplicate_groups(records, tool))

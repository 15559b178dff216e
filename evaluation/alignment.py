"""Side-by-side views of two cases: step alignment, final-state changes, tool selection (spec §6.5)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.trajectory import Step
from twin_engine.diff import diff_states

JSON = Any

SAME = "same"
CHANGED = "changed"
BASELINE_ONLY = "baseline_only"
CANDIDATE_ONLY = "candidate_only"

MAX_STATE_CHANGES = 25


@dataclass(frozen=True)
class AlignedRow:
    baseline: str | None  # the step's label
    candidate: str | None
    match: str  # same | changed | baseline_only | candidate_only

    def to_dict(self) -> dict[str, JSON]:
        return {"baseline": self.baseline, "candidate": self.candidate, "match": self.match}


@dataclass(frozen=True)
class StateDifference:
    path: str
    change: str  # added | removed | changed (seen from the baseline's final state)
    baseline: JSON = None
    candidate: JSON = None

    def to_dict(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {"path": self.path, "change": self.change}
        if self.change != "added":
            out["baseline"] = self.baseline
        if self.change != "removed":
            out["candidate"] = self.candidate
        return out


@dataclass(frozen=True)
class ToolSelection:
    added: tuple[str, ...]  # tools only the candidate called
    removed: tuple[str, ...]  # tools only the baseline called

    def to_dict(self) -> dict[str, JSON]:
        return {"added": list(self.added), "removed": list(self.removed)}


def align(baseline: Sequence[Step], candidate: Sequence[Step]) -> tuple[AlignedRow, ...]:
    """Longest-common-subsequence alignment over (kind, name).

    Matched pairs are `same` when their full signatures agree, else `changed`. Between matches the
    baseline's unmatched steps come first. Ties prefer the earliest match, so the result is stable.
    """
    n, m = len(baseline), len(candidate)
    # lcs[i][j] = LCS length of baseline[i:] and candidate[j:]
    lcs = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            if baseline[i].key == candidate[j].key:
                lcs[i][j] = lcs[i + 1][j + 1] + 1
            else:
                lcs[i][j] = max(lcs[i + 1][j], lcs[i][j + 1])
    rows: list[AlignedRow] = []
    i = j = 0
    while i < n or j < m:
        if i < n and j < m and baseline[i].key == candidate[j].key and lcs[i][j] == lcs[i + 1][j + 1] + 1:
            b, c = baseline[i], candidate[j]
            rows.append(AlignedRow(b.label, c.label, SAME if b.signature == c.signature else CHANGED))
            i += 1
            j += 1
        elif i < n and (j >= m or lcs[i + 1][j] >= lcs[i][j + 1]):
            rows.append(AlignedRow(baseline[i].label, None, BASELINE_ONLY))
            i += 1
        else:
            rows.append(AlignedRow(None, candidate[j].label, CANDIDATE_ONLY))
            j += 1
    return tuple(rows)


def state_changes(
    baseline_final: JSON, candidate_final: JSON, limit: int = MAX_STATE_CHANGES
) -> tuple[StateDifference, ...]:
    """How the candidate's final state differs from the baseline's, leaf by leaf, at most `limit`.

    Nothing is reported when either side has no final state (there is nothing to compare).
    """
    if baseline_final is None or candidate_final is None:
        return ()
    out = [
        StateDifference(ch.path, ch.op, baseline=ch.before, candidate=ch.after)
        for ch in diff_states(baseline_final, candidate_final)
    ]
    return tuple(out[:limit])


def tool_selection(baseline_tools: Sequence[str], candidate_tools: Sequence[str]) -> ToolSelection:
    b, c = set(baseline_tools), set(candidate_tools)
    return ToolSelection(added=tuple(sorted(c - b)), removed=tuple(sorted(b - c)))

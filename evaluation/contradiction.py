"""The contradiction rule (spec §8.1): an agent claimed success that verification disproved."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

DISPROVING_STATUSES = frozenset({"FAILURE", "PARTIAL"})


def is_contradiction(claimed: str | None, status: str, verified: bool) -> bool:
    """True when a verified outcome of FAILURE or PARTIAL meets a claimed SUCCESS.

    A claim nobody could verify is never counted as disproved.
    """
    return verified and claimed == "SUCCESS" and status in DISPROVING_STATUSES


def disproved_write(
    calls: Sequence[tuple[str, bool, bool]],
    subjects: Mapping[str, str | None],
    named: str | None,
    declared: str | None,
) -> tuple[str | None, str | None]:
    """(tool, subject) an alert names: the write the evidence disproves, by one rule for every path.

    `calls`: (tool, failed, write) in the order they started; `subjects`: subject -> the write that acted on
    it; `named`: the subject the verification names (None: a verification by trace id); `declared`: the tool
    the claim itself names (`agenttwin.outcome.tool`), testimony ranked below any evidence. In order:
    the write on the named subject; else the last write that failed (the claim rests on it); else the
    declared tool; else the first write (every write answered ok, none is disproved more than another, and
    what follows the action, a notification, rests on it). Never merely the last write."""
    writes = [tool for tool, _, write in calls if write]
    failed = [tool for tool, fails, write in calls if write and fails]
    tool = subjects.get(named) if named else None
    tool = tool or (failed[-1] if failed else None) or declared or (writes[0] if writes else None)
    if named:
        return tool, named
    acted_on = [subject for subject, by in subjects.items() if tool is not None and by == tool]
    return tool, next(iter(acted_on or subjects), None)

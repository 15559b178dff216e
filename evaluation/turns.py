"""Turns in a comparison: the first divergence of a conversation says in which turn it happened."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from evaluation.case import CaseRun
from evaluation.divergence import Divergence
from evaluation.trajectory import Step

_AT_STEP = re.compile(r"^At step (\d+)")


def divergence_with_turn(
    divergence: Divergence | None,
    baseline_steps: Sequence[Step],
    candidate_steps: Sequence[Step],
    baseline: CaseRun,
    candidate: CaseRun,
) -> Divergence | None:
    """"At step 2 …" becomes "At turn 1, step 2 …" when either side is a conversation; else unchanged."""
    if divergence is None or not (baseline.turns or candidate.turns):
        return divergence
    k = divergence.index - 1
    turn = None
    for steps, case in ((baseline_steps, baseline), (candidate_steps, candidate)):
        if k < len(steps) and turn is None:
            turn = case.turn_of(steps[k].seq)
    if turn is None:  # the outcome, or a step past one side's end: the conversation's last turn
        turn = max(len(baseline.turns), len(candidate.turns), 1)
    summary = divergence.summary
    if _AT_STEP.match(summary):
        summary = _AT_STEP.sub(f"At turn {turn}, step \\1", summary, count=1)
    else:
        summary = f"In turn {turn}: {summary}"
    return replace(divergence, summary=summary)

"""The claim reader scored on real agent replies (tests/unit/claims/data/real_replies.md says where they come
from, how they were labelled and split). The rules were written looking at the development half only; the
held-out half is scored here against the targets, and the test fails when one is missed.

Targets on the held-out half: SUCCESS precision >= 97 %, SUCCESS recall >= 85 %, six-class accuracy >= 85 %.
Run `pytest -s tests/unit/claims/test_real_replies.py` to see the confusion matrices.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from evaluation.claim_reader import CLAIM_STATUSES, DEFAULT_CLAIM_RULES, ESCALATED, SUCCESS, read_claim

DATA = Path(__file__).parent / "data" / "real_replies.jsonl"
SUCCESS_PRECISION, SUCCESS_RECALL, ACCURACY = 0.97, 0.85, 0.85


def _rows(split: str | None = None) -> list[dict[str, str]]:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line]
    return [r for r in rows if split is None or r["split"] == split]


@dataclass(frozen=True)
class Score:
    replies: int
    right: int
    matrix: Counter[tuple[str, str]]  # (label, read) -> replies

    @property
    def accuracy(self) -> float:
        return self.right / self.replies

    @property
    def success_precision(self) -> float:
        read = sum(n for (_, got), n in self.matrix.items() if got == SUCCESS)
        return self.matrix[(SUCCESS, SUCCESS)] / read if read else 1.0

    @property
    def success_recall(self) -> float:
        labelled = sum(n for (label, _), n in self.matrix.items() if label == SUCCESS)
        return self.matrix[(SUCCESS, SUCCESS)] / labelled

    def table(self) -> str:
        """The confusion matrix as a Markdown table: rows are labels, columns are readings."""
        head = "| label \\ read | " + " | ".join(CLAIM_STATUSES) + " | total |"
        lines = [head, "|---" * (len(CLAIM_STATUSES) + 2) + "|"]
        for label in CLAIM_STATUSES:
            counts = [self.matrix[(label, got)] for got in CLAIM_STATUSES]
            lines.append(f"| {label} | " + " | ".join(str(n) for n in counts) + f" | {sum(counts)} |")
        return "\n".join(lines)


def score(split: str, rules: str = DEFAULT_CLAIM_RULES) -> Score:
    rows = _rows(split)
    matrix: Counter[tuple[str, str]] = Counter()
    for row in rows:
        matrix[(row["label"], read_claim(row["answer"], rules).status)] += 1
    right = sum(n for (label, got), n in matrix.items() if label == got)
    return Score(len(rows), right, matrix)


def test_the_set_is_large_enough_from_enough_sources_and_labelled_in_six_classes() -> None:
    rows = _rows()
    assert len(rows) >= 400
    assert len({r["source"].split("/")[0] for r in rows}) >= 5  # distinct publishers
    assert all(r["label"] in CLAIM_STATUSES and r["licence"] and r["id"] and r["answer"] for r in rows)
    assert set(r["label"] for r in rows) == set(CLAIM_STATUSES)
    assert len({(r["source"], r["id"]) for r in rows}) == len(rows)
    splits = Counter(r["split"] for r in rows)
    assert set(splits) == {"development", "held_out"} and abs(splits["development"] - splits["held_out"]) <= 10


@pytest.mark.parametrize("split", ["development", "held_out"])
def test_the_reader_meets_the_targets(split: str) -> None:
    result = score(split)
    print(
        f"\n{split} ({DEFAULT_CLAIM_RULES}): {result.right}/{result.replies} right = {100 * result.accuracy:.1f} %, "
        f"SUCCESS precision {100 * result.success_precision:.1f} %, recall {100 * result.success_recall:.1f} %\n"
        + result.table()
    )
    assert result.success_precision >= SUCCESS_PRECISION, result.table()
    assert result.success_recall >= SUCCESS_RECALL, result.table()
    assert result.accuracy >= ACCURACY, result.table()


def test_no_reply_is_read_as_an_escalation_unless_it_hands_over() -> None:
    """Offers of a transfer ("I can transfer you to a human agent. Would you like that?") are everywhere in
    the set; none may be read as a hand-over."""
    false = [r["answer"] for r in _rows() if read_claim(r["answer"]).status == ESCALATED and r["label"] != ESCALATED]
    assert false == []


def test_rules_v1_is_kept_and_read_offers_of_a_transfer_as_escalations() -> None:
    """The previous rule set still reads (its readings can be reproduced and explained); on these replies it
    took offers of a transfer for hand-overs, which rules-v2 never does (above)."""
    false = [r for r in _rows() if read_claim(r["answer"], "rules-v1").status == ESCALATED and r["label"] != ESCALATED]
    assert len(false) >= 10


def test_the_guide_states_the_measured_figures() -> None:
    """docs/guides/claims.md shows the scorer's own tables and figures (the README links to it)."""
    guide = (Path(__file__).resolve().parents[3] / "docs" / "guides" / "claims.md").read_text(encoding="utf-8")
    for split in ("held_out", "development"):
        result = score(split)
        assert result.table() in guide, split
        assert f"{100 * result.accuracy:.1f} %" in guide and f"({result.right} of {result.replies})" in guide, split
        assert f"{100 * result.success_precision:.1f} %" in guide and f"{100 * result.success_recall:.1f} %" in guide

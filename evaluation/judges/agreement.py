"""How often a judge agrees with labelled (rubric, reply, truth) triples, counting what it leaves undecided.

`python -m evaluation.judges.agreement FILE` prints the figures for the offline judge. A FILE is a
YAML list of `{id, domain, rubric, reply, truth: pass|fail, held_out?: bool}`. A judge answer of
`undecided` is neither right nor wrong: it is counted apart, and "correct where decided" leaves it out.
A false fail is a `fail` where the truth is `pass`; any other judge error counts as undecided too.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from evaluation.judges.calling import ask_judge
from evaluation.judges.contract import LABEL_FAIL, LABEL_PASS, Judge, JudgeVerdict
from evaluation.judges.fake import OfflineJudge
from evaluation.judges.material import build_request

TRUTHS = (LABEL_PASS, LABEL_FAIL)


class TripleError(ValueError):
    """A labelled triple is malformed."""


@dataclass(frozen=True)
class Triple:
    id: str
    domain: str
    rubric: str
    reply: str
    truth: str  # pass | fail
    held_out: bool = False


@dataclass(frozen=True)
class Agreement:
    triples: int
    decided: int
    correct: int
    false_fail: int
    false_pass: int

    @property
    def undecided(self) -> int:
        return self.triples - self.decided

    @property
    def accuracy(self) -> float | None:
        """Correct where decided; None when nothing was decided."""
        return self.correct / self.decided if self.decided else None

    def line(self, name: str) -> str:
        accuracy = "n/a" if self.accuracy is None else f"{self.accuracy * 100:.1f}%"
        return (
            f"{name}: {self.triples} triples, {self.decided} decided, {self.correct} correct where decided "
            f"({accuracy}), {self.false_fail} false fail, {self.false_pass} false pass, {self.undecided} undecided"
        )


def load_triples(path: str | Path) -> list[Triple]:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise TripleError(f"{path}: expected a list of triples")
    triples = []
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            raise TripleError(f"{path}: item {index + 1} is not a mapping")
        try:
            triple = Triple(
                id=str(item["id"]),
                domain=str(item["domain"]),
                rubric=str(item["rubric"]),
                reply=str(item["reply"]),
                truth=str(item["truth"]),
                held_out=item.get("held_out") is True,
            )
        except KeyError as exc:
            raise TripleError(f"{path}: item {index + 1} has no {exc.args[0]}") from None
        if triple.truth not in TRUTHS:
            raise TripleError(f"{path}: {triple.id}: truth must be pass or fail, got {triple.truth!r}")
        triples.append(triple)
    return triples


def judge_label(judge: Judge, triple: Triple) -> str | None:
    """The judge's label for one triple, None when it did not decide."""
    request = build_request(category="correctness", rubric=triple.rubric, customer_message="", answer=triple.reply)
    verdict = ask_judge(judge, request, None)
    return verdict.label if isinstance(verdict, JudgeVerdict) else None


def measure(judge: Judge, triples: Sequence[Triple]) -> Agreement:
    labels = [(t.truth, judge_label(judge, t)) for t in triples]
    decided = [(truth, got) for truth, got in labels if got is not None]
    return Agreement(
        triples=len(labels),
        decided=len(decided),
        correct=sum(1 for truth, got in decided if truth == got),
        false_fail=sum(1 for truth, got in decided if truth == LABEL_PASS and got == LABEL_FAIL),
        false_pass=sum(1 for truth, got in decided if truth == LABEL_FAIL and got == LABEL_PASS),
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m evaluation.judges.agreement TRIPLES.yaml", file=sys.stderr)
        return 2
    try:
        triples = load_triples(args[0])
    except (OSError, TripleError, yaml.YAMLError) as exc:
        print(f"agreement: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    judge = OfflineJudge()
    print(f"{judge.identity.model} on {args[0]}")
    print(measure(judge, triples).line("all"))
    print(measure(judge, [t for t in triples if t.held_out]).line("held out"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

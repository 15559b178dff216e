"""The offline judge against labelled triples: no false fail, and right where it decides (the README's figure)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from evaluation.judges.agreement import TripleError, load_triples, main, measure
from evaluation.judges.fake import OfflineJudge
from tests.docs_text import documentation

DATA = Path(__file__).resolve().parent / "data" / "offline_judge_set.yaml"
README = Path(__file__).resolve().parents[3] / "README.md"


def test_the_labelled_set_covers_four_domains_and_both_labels() -> None:
    triples = load_triples(DATA)
    assert len(triples) >= 60
    assert len({t.id for t in triples}) == len(triples)
    assert set(Counter(t.domain for t in triples)) == {"demo-co", "airline", "retail", "banking"}
    assert min(Counter(t.truth for t in triples).values()) >= 20
    assert sum(t.held_out for t in triples) >= 20


def test_no_false_fail_and_right_where_it_decides() -> None:
    triples = load_triples(DATA)
    for subset in (triples, [t for t in triples if t.held_out]):
        agreement = measure(OfflineJudge(), subset)
        assert agreement.false_fail == 0
        assert agreement.accuracy is not None and agreement.accuracy >= 0.9
        assert agreement.decided >= len(subset) // 2  # it still decides most of them


def test_the_readme_states_the_measured_figure(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(DATA)]) == 0
    printed = capsys.readouterr().out.splitlines()
    readme = " ".join(documentation().split())
    for line in printed[1:]:
        assert line in readme


def test_a_malformed_set_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("- {id: x, domain: d, rubric: r, reply: a, truth: maybe}\n", encoding="utf-8")
    with pytest.raises(TripleError, match="truth must be pass or fail"):
        load_triples(bad)
    assert main([str(bad)]) == 2

from __future__ import annotations

import pytest

from evaluation.versions import (
    DEFAULT_EVALUATOR_SET,
    EVALUATOR_SETS,
    EXPECTATION_TYPES,
    SET_CHANGES,
    UnknownEvaluatorSetError,
    evaluator_set,
    evaluator_version,
)
from tests.docs_text import documentation


def test_sets_differ_only_in_max_retries() -> None:
    legacy, current = evaluator_set("1.0.0"), evaluator_set("1.1.0")
    assert legacy["expectation.maxRetries"] == "1.0.0"
    assert current["expectation.maxRetries"] == "1.1.0"
    assert {k for k in legacy if legacy[k] != current[k]} == {"expectation.maxRetries"}
    assert all(v == "1.0.0" for k, v in current.items() if k != "expectation.maxRetries")


def test_every_type_and_the_run_finding_are_pinned() -> None:
    assert len(EXPECTATION_TYPES) == 27
    for name in EVALUATOR_SETS:
        versions = evaluator_set(name)
        assert all(f"expectation.{t}" in versions for t in EXPECTATION_TYPES)
        assert versions["simulation.agent_run"] == "1.0.0"


def test_set_1_2_0_adds_the_claim_rules_to_1_1_0() -> None:
    current, new = evaluator_set("1.1.0"), evaluator_set("1.2.0")
    changed = {k: new[k] for k in new if current.get(k) != new[k]}
    assert changed == {
        "expectation.outcomeVerified": "1.1.0",
        "expectation.claimSupported": "1.0.0",
        "finding.claimSupported": "1.0.0",
        "outcome.verified": "1.1.0",
    }
    assert set(current) <= set(new)


def test_set_1_3_0_normalises_amounts_and_adds_reference_states() -> None:
    previous, new = evaluator_set("1.2.0"), evaluator_set("1.3.0")
    changed = {k: new[k] for k in new if previous.get(k) != new[k]}
    assert changed == {
        "expectation.outputContains": "1.1.0",
        "expectation.outputNotContains": "1.1.0",
        "expectation.reachesReferenceState": "1.0.0",
    }
    assert set(previous) <= set(new)
    assert all("expectation.reachesReferenceState" not in evaluator_set(s) for s in ("1.0.0", "1.1.0", "1.2.0"))


def test_default_set_is_the_newest() -> None:
    assert DEFAULT_EVALUATOR_SET == "1.3.0" == max(EVALUATOR_SETS, key=lambda v: tuple(map(int, v.split("."))))
    assert evaluator_version(DEFAULT_EVALUATOR_SET, "expectation.maxRetries") == "1.1.0"


def test_every_set_says_what_it_changed() -> None:
    assert set(SET_CHANGES) == set(EVALUATOR_SETS)
    assert all(text.endswith(".") for text in SET_CHANGES.values())


def test_the_readme_table_lists_every_set() -> None:
    readme = documentation()
    section = readme[readme.index("## Evaluator versions") :]
    for name, text in SET_CHANGES.items():
        assert f"| `{name}` |" in section
        assert text in section.replace("\n", " ")


def test_unknown_set_is_a_clear_error() -> None:
    with pytest.raises(
        UnknownEvaluatorSetError,
        match=r"unknown evaluator set '2\.0\.0'; known sets: 1\.0\.0, 1\.1\.0, 1\.2\.0, 1\.3\.0",
    ):
        evaluator_set("2.0.0")

from __future__ import annotations

import pytest

from evaluation.versions import (
    DEFAULT_EVALUATOR_SET,
    EVALUATOR_SETS,
    EXPECTATION_TYPES,
    UnknownEvaluatorSetError,
    evaluator_set,
    evaluator_version,
)


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


def test_default_set_is_the_shared_retry_rule() -> None:
    assert DEFAULT_EVALUATOR_SET == "1.1.0"
    assert evaluator_version(DEFAULT_EVALUATOR_SET, "expectation.maxRetries") == "1.1.0"


def test_unknown_set_is_a_clear_error() -> None:
    with pytest.raises(
        UnknownEvaluatorSetError, match=r"unknown evaluator set '2\.0\.0'; known sets: 1\.0\.0, 1\.1\.0"
    ):
        evaluator_set("2.0.0")

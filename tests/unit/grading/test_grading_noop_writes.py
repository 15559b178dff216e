"""A write that changes nothing is no effect: never a duplicate side effect, never a contradiction."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from grading_builders import case

from evaluation.contradiction import is_contradiction
from evaluation.duplicates import duplicate_side_effects
from evaluation.grader import grade_case
from evaluation.metrics import side_metrics
from twin_engine import ScenarioConfig, Twin
from twin_engine.case import new_case

ADDRESS = {"street": "1 Main St", "city": "Austin", "state": "TX"}
INITIAL = {"orders": {"W1": {"order_id": "W1", "address": {"street": "9 Old Rd", "city": "Reno", "state": "NV"}}}}


def _twin() -> Twin:
    return Twin.from_definition(
        {
            "apiVersion": "agenttwin.dev/v1",
            "kind": "TwinDefinition",
            "metadata": {"name": "noop"},
            "spec": {
                "initialState": INITIAL,
                "tools": {
                    "get_order": {"risk": "READ", "handler": {"kind": "read", "path": "orders.{order_id}"}},
                    "set_address": {
                        "risk": "WRITE_REVERSIBLE",
                        "handler": {
                            "kind": "mutate",
                            "path": "orders.{order_id}",
                            "effects": [{"op": "set", "path": "orders.{order_id}.address", "value": "{args.address}"}],
                        },
                    },
                },
            },
        }
    )


def _run(faults: list[dict[str, Any]] | None = None) -> tuple[Any, ...]:
    scenario = ScenarioConfig.from_scenario(
        {"metadata": {"name": "noop"}, "spec": {"input": {"message": "x"}, "faults": faults or []}}
    )
    twin_case = new_case(_twin(), scenario=scenario)
    for _ in range(2):  # the same overwrite, twice
        assert twin_case.call("set_address", {"order_id": "W1", "address": ADDRESS}).http_status == 200
    return twin_case.records, twin_case.initial, twin_case.state


EXPECTATIONS = [
    {"id": "address-set", "type": "state", "path": "orders.W1.address.city", "equals": "Austin"},
    {"id": "once", "type": "noDuplicateSideEffect", "critical": True},
    {"id": "backed", "type": "outcomeVerified", "critical": True},
]


def test_the_second_identical_overwrite_is_recorded_as_changing_nothing() -> None:
    records, _, final = _run()
    first, second = records
    assert (first.mutated, len(first.changes) > 0) == (True, True)
    assert (second.status, second.mutated, second.changes) == ("ok", False, ())
    assert final["orders"]["W1"]["address"] == ADDRESS


def test_an_idempotent_overwrite_twice_is_no_duplicate_and_no_contradiction() -> None:
    records, initial, final = _run()
    for version in ("1.1.0", "1.2.0"):
        graded = grade_case(
            case(EXPECTATIONS, records, initial_state=initial, final_state=final), evaluator_version=version
        )
        assert [(r.expectation.id, r.status) for r in graded.results][:3] == [
            ("address-set", "PASS"),
            ("once", "PASS"),
            ("backed", "PASS"),
        ], version
        assert graded.verdict.status == "PASSED", graded.verdict.reason
        assert (graded.verified.status, graded.verified.verified) == ("SUCCESS", True)
        assert not is_contradiction("SUCCESS", graded.verified.status, graded.verified.verified)
        assert side_metrics(graded)["duplicate_side_effects"] == 0


def test_a_redelivered_overwrite_changes_nothing_either() -> None:
    records, _, _ = _run(
        [{"target": "set_address", "when": {"callNumber": 1}, "behavior": {"type": "message_duplication"}}]
    )
    redelivered = [r for r in records if r.redelivered]
    assert len(redelivered) == 1 and redelivered[0].mutated is False
    assert duplicate_side_effects(records) == 0


def test_records_of_the_old_twin_with_an_empty_change_list_count_no_effect() -> None:
    records, _, _ = _run()
    old = tuple(replace(r, mutated=True) for r in records)  # how the twin recorded a no-op write before
    assert old[1].changes == ()
    assert duplicate_side_effects(old) == 0


def test_a_write_that_changes_state_twice_is_still_a_duplicate() -> None:
    twin = Twin.from_definition(
        {
            "apiVersion": "agenttwin.dev/v1",
            "kind": "TwinDefinition",
            "metadata": {"name": "counter"},
            "spec": {
                "initialState": {"n": 0},
                "tools": {
                    "bump": {
                        "risk": "WRITE_IRREVERSIBLE",
                        "handler": {"kind": "mutate", "effects": [{"op": "increment", "path": "n"}]},
                    }
                },
            },
        }
    )
    twin_case = new_case(twin)
    twin_case.call("bump", {})
    twin_case.call("bump", {})
    assert [r.mutated for r in twin_case.records] == [True, True]
    assert duplicate_side_effects(twin_case.records) == 1

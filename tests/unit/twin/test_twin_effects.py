"""Effects (spec §2.5)."""

from __future__ import annotations

from typing import Any

import pytest

from twin_engine import DefinitionError
from twin_engine.effects import apply_effect, compile_effect
from twin_engine.failures import ToolFailure
from twin_engine.templates import TemplateEnv

ENV = TemplateEnv(args={"amount": 40, "n": "ORD-1", "bad": "x", "obj": {"k": 1}}, state={}, seq=3)


def apply(state: dict[str, Any], **raw: Any) -> dict[str, Any]:
    apply_effect(state, compile_effect(raw, "e"), ENV)
    return state


def effect_error(state: dict[str, Any], **raw: Any) -> ToolFailure:
    with pytest.raises(ToolFailure) as info:
        apply(state, **raw)
    return info.value


def test_set_creates_parents_and_renders() -> None:
    assert apply({}, op="set", path="orders.{n}.status", value="T-{id}") == {
        "orders": {"ORD-1": {"status": "T-0003"}}
    }


def test_increment_and_decrement() -> None:
    state = {"o": {"a": 10}}
    apply(state, op="increment", path="o.a", by="{amount}")
    apply(state, op="increment", path="o.count")  # missing counts as 0, by defaults to 1
    apply(state, op="decrement", path="o.left", by=2.5)
    assert state == {"o": {"a": 50, "count": 1, "left": -2.5}}
    state2 = {"v": None}
    assert apply(state2, op="increment", path="v", by=2) == {"v": 2}


def test_float_results_round_to_10_decimals() -> None:
    state = {"x": 0.1}
    apply(state, op="increment", path="x", by=0.2)
    assert state["x"] == 0.3
    state = {"x": 1}
    apply(state, op="decrement", path="x", by=0.1)
    assert state["x"] == 0.9


def test_increment_errors() -> None:
    assert effect_error({"x": "a"}, op="increment", path="x").code == "TWIN_EFFECT_ERROR"
    failure = effect_error({"x": 1}, op="increment", path="x", by="{bad}")
    assert (failure.status, failure.code) == (500, "TWIN_EFFECT_ERROR")
    assert effect_error({"x": True}, op="increment", path="x").code == "TWIN_EFFECT_ERROR"


def test_append() -> None:
    state: dict[str, Any] = {}
    apply(state, op="append", path="l", value={"id": "RF-{id}", "amt": "{amount}"})
    apply(state, op="append", path="l", value=1)
    assert state == {"l": [{"id": "RF-0003", "amt": 40}, 1]}
    assert effect_error({"l": "text"}, op="append", path="l", value=1).code == "TWIN_EFFECT_ERROR"


def test_delete() -> None:
    assert apply({"a": {"b": 1, "c": 2}}, op="delete", path="a.b") == {"a": {"c": 2}}
    assert apply({"a": [1, 2]}, op="delete", path="a[0]") == {"a": [2]}
    assert apply({"a": 1}, op="delete", path="zzz") == {"a": 1}


def test_merge_is_shallow() -> None:
    state = {"a": {"x": 1, "deep": {"k": 1}}}
    apply(state, op="merge", path="a", value={"y": "{amount}", "deep": {"j": 2}})
    assert state == {"a": {"x": 1, "y": 40, "deep": {"j": 2}}}
    assert apply({"a": 5}, op="merge", path="a", value={"z": 1}) == {"a": {"z": 1}}
    assert effect_error({}, op="merge", path="a", value="{bad}").code == "TWIN_EFFECT_ERROR"


def test_template_failures_keep_their_code() -> None:
    failure = effect_error({}, op="set", path="a.{missing}", value=1)
    assert (failure.status, failure.code) == (422, "MISSING_ARGUMENT")


def test_writing_through_a_scalar_is_an_effect_error() -> None:
    assert effect_error({"a": 1}, op="set", path="a.b", value=1).code == "TWIN_EFFECT_ERROR"


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        ({"op": "set", "path": "", "value": 1}, "e.path"),
        ({"op": "set", "path": "a"}, "e.value"),
        ({"op": "merge", "path": "a", "value": [1]}, "e.value"),
        ({"op": "increment", "path": "a", "by": True}, "e.by"),
        ({"op": "set", "path": "a.{x", "value": 1}, "e.path"),
        ({"op": "set", "path": "a", "value": {"k": "{oops"}}, "e.value.k"),
        ({"op": "boom", "path": "a"}, "e.op"),
    ],
)
def test_compile_effect_errors(raw: dict[str, Any], where: str) -> None:
    with pytest.raises(DefinitionError) as info:
        compile_effect(raw, "e")
    assert info.value.path == where

"""deep_copy gives what copy.deepcopy gives: equal, independent, same types and order, shared values shared."""

from __future__ import annotations

import copy
import enum
from collections import OrderedDict
from typing import Any

import pytest

from twin_engine.deep_copy import deep_copy


class Level(enum.IntEnum):
    HIGH = 1


class Tag(str):
    pass


VALUES: list[Any] = [
    {"orders": {"ORD-1": {"amount": 40.0, "refunds": [], "flags": {"vip": True}}}, "z": None, "a": -0.0},
    [1, "two", 3.5, None, False, {"k": [[], {}]}],
    (1, [2, {"x": 3}]),
    {1: "int key", "s": {1, 2}, "b": b"\x00\xff"},
    {"enum": Level.HIGH, "tag": Tag("x"), "ordered": OrderedDict(b=1, a=2)},  # copy.deepcopy's path
    "text",
    7,
    None,
]


@pytest.mark.parametrize("value", VALUES)
def test_the_copy_equals_the_value_with_the_same_types_and_key_order(value: Any) -> None:
    copied = deep_copy(value)
    assert copied == value == copy.deepcopy(value)
    assert repr(copied) == repr(value)  # key order, -0.0, True vs 1, subclasses


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return (type(value), [(type(k), _types(v)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        return (type(value), [_types(v) for v in value])
    return type(value)


@pytest.mark.parametrize("value", VALUES)
def test_every_nested_type_is_kept(value: Any) -> None:
    assert _types(deep_copy(value)) == _types(value)


def test_changing_the_copy_never_changes_the_original() -> None:
    state = {"orders": {"ORD-1": {"refunds": [{"amount": 1}]}}, "odd": OrderedDict(a=[1])}
    before = copy.deepcopy(state)
    copied = deep_copy(state)
    copied["orders"]["ORD-1"]["refunds"][0]["amount"] = 99
    copied["orders"]["ORD-1"]["refunds"].append({})
    copied["odd"]["a"].append(2)
    assert state == before


def test_a_value_held_twice_stays_shared_in_the_copy_as_with_deepcopy() -> None:
    shared = {"n": [1]}
    copied = deep_copy({"a": shared, "b": shared})
    assert copied["a"] is copied["b"] and copied["a"] is not shared

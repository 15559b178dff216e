"""canonical JSON, merge patch, paths and state diffs."""

from __future__ import annotations

import math

import pytest

from twin_engine import MISSING, canonical_json, format_path, get_path, merge_patch, parse_path, sha256_hex
from twin_engine.diff import diff_states
from twin_engine.paths import PathError, delete_path, set_path


def test_canonical_json_is_sorted_compact_and_keeps_unicode() -> None:
    assert canonical_json({"b": 1, "a": [1, "é"]}) == '{"a":[1,"é"],"b":1}'
    assert sha256_hex({"a": 1, "b": 2}) == sha256_hex({"b": 2, "a": 1})


def test_canonical_json_rejects_nan() -> None:
    with pytest.raises(ValueError, match="JSON"):
        canonical_json({"x": math.nan})


def test_merge_patch_rfc7396() -> None:
    target = {"a": "b", "c": {"d": "e", "f": "g"}}
    patch = {"a": "z", "c": {"f": None}}
    assert merge_patch(target, patch) == {"a": "z", "c": {"d": "e"}}
    assert target == {"a": "b", "c": {"d": "e", "f": "g"}}  # untouched
    assert merge_patch({"a": [1, 2]}, {"a": [3]}) == {"a": [3]}
    assert merge_patch({"a": 1}, ["x"]) == ["x"]
    assert merge_patch("text", {"a": {"b": None, "c": 1}}) == {"a": {"c": 1}}


@pytest.mark.parametrize(
    ("text", "segments"),
    [
        ("orders.ORD-1001.refund_count", ("orders", "ORD-1001", "refund_count")),
        ("escalations[0].order_id", ("escalations", 0, "order_id")),
        ("a[1][2]", ("a", 1, 2)),
        ("", ()),
    ],
)
def test_parse_and_format_path_round_trip(text: str, segments: tuple[str | int, ...]) -> None:
    assert parse_path(text) == segments
    assert format_path(segments) == text


@pytest.mark.parametrize("bad", ["a..b", "a.", ".a", "a[x]", "a[0]b", "a]"])
def test_parse_path_rejects_malformed(bad: str) -> None:
    with pytest.raises(PathError):
        parse_path(bad)


def test_get_set_delete() -> None:
    state: dict[str, object] = {"a": {"b": [1, {"c": 2}]}}
    assert get_path(state, "a.b[1].c") == 2
    assert get_path(state, "a.b[5]") is MISSING
    assert get_path(state, "a.x.y") is MISSING
    assert get_path({"a": None}, "a") is None
    set_path(state, ("x", "y"), 3)
    assert state["x"] == {"y": 3}
    set_path(state, ("a", "b", 2), "end")  # index == length appends
    assert get_path(state, "a.b[2]") == "end"
    assert delete_path(state, ("a", "b", 0)) is True
    assert get_path(state, "a.b[0].c") == 2
    assert delete_path(state, ("nope",)) is False
    with pytest.raises(PathError):
        set_path(state, ("x", "y", "z"), 1)  # through a number
    with pytest.raises(PathError):
        set_path(state, (), 1)


def test_diff_states_leaf_entries() -> None:
    before = {"o": {"n": 0, "gone": 1}, "list": [1], "flag": True}
    after = {"o": {"n": 1, "new": "x"}, "list": [1, 2], "flag": 1}
    changes = [c.to_dict() for c in diff_states(before, after)]
    assert changes == [
        {"op": "changed", "path": "flag", "before": True, "after": 1},
        {"op": "added", "path": "list[1]", "after": 2},
        {"op": "removed", "path": "o.gone", "before": 1},
        {"op": "changed", "path": "o.n", "before": 0, "after": 1},
        {"op": "added", "path": "o.new", "after": "x"},
    ]
    assert diff_states({"a": 1}, {"a": 1.0}) == ()

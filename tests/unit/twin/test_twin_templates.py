"""Templating (spec §2.6)."""

from __future__ import annotations

from typing import Any

import pytest

from twin_engine import MISSING
from twin_engine.failures import ToolFailure
from twin_engine.templates import (
    TemplateEnv,
    TemplateSyntaxError,
    check_template,
    parse_path_template,
    render,
    render_path,
)

ENV = TemplateEnv(
    args={
        "order_id": "ORD-1001",
        "amount": 40,
        "flag": True,
        "nothing": None,
        "customer": {"id": "CUS-1"},
        "idx": 1,
        "dotted": "ORD-1001.tenant",
        "ratio": 0.5,
    },
    state={"policy": {"max": 100}, "orders": {"ORD-1001": {"tenant": "demo-co"}}},
    value={"currency": "USD"},
    tenant="demo-co",
    idempotency_key="key-1",
    now="2026-01-01T00:00:00Z",
    seq=7,
    call_number=2,
)


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{amount}", 40),
        ("{args.amount}", 40),
        ("{flag}", True),
        ("{customer}", {"id": "CUS-1"}),
        ("{args.customer.id}", "CUS-1"),
        ("{state.policy.max}", 100),
        ("{value.currency}", "USD"),
        ("{tenant}", "demo-co"),
        ("{idempotency_key}", "key-1"),
        ("{now}", "2026-01-01T00:00:00Z"),
        ("{id}", "0007"),
        ("{call.number}", 2),
        ("{call.seq}", 7),
        ("RF-{id}", "RF-0007"),
        ("refund:{order_id}", "refund:ORD-1001"),
        ("{amount} USD, {flag}/{nothing}/{customer}", '40 USD, true//{"id":"CUS-1"}'),
        ("{ratio}", 0.5),
        ("r={ratio}", "r=0.5"),
        ("{{literal}} {amount}", "{literal} 40"),
        ("}}{{", "}{"),
        ("{missing?}", None),
        ("a{missing?}b", "ab"),
        ("{state.nope?}", None),
        ("plain", "plain"),
    ],
)
def test_render_string(template: str, expected: Any) -> None:
    assert render(template, ENV) == expected


def test_render_objects_recursively_with_literal_keys() -> None:
    template = {"{amount}": ["{order_id}", {"n": "{amount}"}], "k": 5, "b": False}
    assert render(template, ENV) == {"{amount}": ["ORD-1001", {"n": 40}], "k": 5, "b": False}


def test_rendered_values_are_copies() -> None:
    out = render("{customer}", ENV)
    out["id"] = "changed"
    assert ENV.args["customer"]["id"] == "CUS-1"


@pytest.mark.parametrize(
    ("template", "status", "code"),
    [
        ("{missing}", 422, "MISSING_ARGUMENT"),
        ("{args.customer.name}", 422, "MISSING_ARGUMENT"),
        ("{state.nope}", 500, "TWIN_TEMPLATE_ERROR"),
        ("{value.nope}", 500, "TWIN_TEMPLATE_ERROR"),
    ],
)
def test_render_failures(template: str, status: int, code: str) -> None:
    with pytest.raises(ToolFailure) as info:
        render(template, ENV)
    assert (info.value.status, info.value.code) == (status, code)


def test_missing_value_tenant_and_key() -> None:
    env = TemplateEnv(args={}, state={})
    assert env.value is MISSING
    with pytest.raises(ToolFailure) as info:
        render("{value.x}", env)
    assert info.value.code == "TWIN_TEMPLATE_ERROR"
    with pytest.raises(ToolFailure) as info:
        render("{tenant}", env)
    assert info.value.code == "TWIN_TEMPLATE_ERROR"
    with pytest.raises(ToolFailure) as info:
        render("{idempotency_key}", env)
    assert info.value.code == "MISSING_ARGUMENT"
    assert render("{idempotency_key?}", env) is None
    with pytest.raises(ToolFailure) as info:
        render("{result}", env)
    assert info.value.code == "TWIN_TEMPLATE_ERROR"


@pytest.mark.parametrize(
    "bad", ["{", "}", "{a", "{}", "{1x}", "{a b}", "{call.x}", "{now.x}", "{a..b}", "x}y"]
)
def test_syntax_errors(bad: str) -> None:
    with pytest.raises(TemplateSyntaxError):
        check_template(bad)


def test_syntax_error_location_and_result_root() -> None:
    with pytest.raises(TemplateSyntaxError) as info:
        check_template({"a": [1, "{oops"]})
    assert info.value.where == ".a[1]"
    with pytest.raises(TemplateSyntaxError):
        check_template("{result}")
    check_template("{result.x}", allow_result=True)


def test_path_placeholder_is_one_whole_segment() -> None:
    assert render_path("orders.{order_id}.refund_count", ENV) == ("orders", "ORD-1001", "refund_count")
    # no traversal through a value containing a dot
    assert render_path("orders.{dotted}", ENV) == ("orders", "ORD-1001.tenant")
    assert render_path("list[{idx}].x", ENV) == ("list", 1, "x")
    assert render_path("n.{amount}", ENV) == ("n", "40")
    assert render_path("k-{order_id}-x", ENV) == ("k-ORD-1001-x",)
    assert render_path("a[0]", ENV) == ("a", 0)


@pytest.mark.parametrize(
    ("template", "args", "status", "code"),
    [
        ("orders.{x}", {"x": True}, 422, "INVALID_ARGUMENT"),
        ("orders.{x}", {"x": {"a": 1}}, 422, "INVALID_ARGUMENT"),
        ("orders.{x}", {"x": ""}, 422, "INVALID_ARGUMENT"),
        ("orders.{x}", {"x": "y" * 501}, 422, "INVALID_ARGUMENT"),
        ("orders[{x}]", {"x": "1"}, 422, "INVALID_ARGUMENT"),
        ("orders[{x}]", {"x": 1.5}, 422, "INVALID_ARGUMENT"),
        ("orders.{x}", {}, 422, "MISSING_ARGUMENT"),
        ("orders.{state.policy}", {}, 500, "TWIN_TEMPLATE_ERROR"),
    ],
)
def test_path_placeholder_rules(template: str, args: dict[str, Any], status: int, code: str) -> None:
    env = TemplateEnv(args=args, state={"policy": {"a": 1}})
    with pytest.raises(ToolFailure) as info:
        render_path(template, env)
    assert (info.value.status, info.value.code) == (status, code)


def test_path_segment_of_500_chars_is_fine() -> None:
    env = TemplateEnv(args={"x": "y" * 500}, state={})
    assert render_path("a.{x}", env) == ("a", "y" * 500)


@pytest.mark.parametrize("bad", ["a..{x}", "a.", "[x]", "a[{x}]b", "a[{x}", "a]{x}", "{x}[1"])
def test_path_template_syntax(bad: str) -> None:
    with pytest.raises(TemplateSyntaxError):
        parse_path_template(bad)

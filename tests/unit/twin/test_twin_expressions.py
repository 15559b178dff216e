"""The twin language's expressions: CEL through cel-python, with JSON numbers and hard per-call bounds."""

from __future__ import annotations

from typing import Any

import pytest

from twin_engine.budget import BUDGET_CODE, STEP_BUDGET, Budget, OverBudget
from twin_engine.expressions import (
    LIMIT_CODE,
    MAX_SOURCE,
    ExpressionSyntaxError,
    _cel,
    check_names,
    compile_expression,
    evaluate,
    evaluate_bool,
)
from twin_engine.failures import ToolFailure

USERS = {
    "u1": {"name": "Ana Souza", "email": "Ana.Souza@Example.com", "tier": "gold", "spent": 1200.5},
    "u2": {"name": "Bo Li", "email": "bo@example.com", "tier": "silver", "spent": 80},
    "u3": {"name": "Cy Diaz", "email": "cy@example.com", "tier": "gold", "spent": 300.25},
}


def ev(source: str, **bindings: Any) -> Any:
    return evaluate(compile_expression(source), bindings, Budget())


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("1 + 1.5", 2.5),  # JSON numbers: an int and a double mix
        ("40 <= 39.5", False),
        ("2.0 == 2", True),
        ("0.1 + 0.2 == 0.3", True),  # doubles are rounded to 10 places after arithmetic
        ("7 / 2", 3),  # integer division truncates, as in CEL
        ("7.0 / 2", 3.5),
        ("round(2.345, 2)", 2.35),  # half up
        ("round(1939.049)", 1939),
        ("abs(-4.5)", 4.5),
        ("'Ana@X.COM'.lowerAscii() == 'ana@x.com'", True),
        ("' x '.trim() + 'y'.upperAscii()", "xY"),
        ("'a,b,c'.split(',')", ["a", "b", "c"]),
        ("['a', 'b'].join('-')", "a-b"),
        ("'gift_card_7'.startsWith('gift_card')", True),
        ("'W123'.matches('^W[0-9]+$')", True),
        ("size([1, 2, 3])", 3),
        ("sum([1, 2.5, 3])", 6.5),
        ("sum([])", 0),
        ("min([3, 1.5, 2])", 1.5),
        ("max(['b', 'c', 'a'])", "c"),
        ("sort([3, 1, 2])", [1, 2, 3]),
        ("reverse(sort(['b', 'a']))", ["b", "a"]),
        ("flatten([[1], [2, 3], 4])", [1, 2, 3, 4]),
        ("get({'a': 1}, 'b', 0)", 0),
        ("has({'a': 1}.a) && !has({'a': 1}.b)", True),
        ("timestamp('2026-01-02T00:00:00Z') - timestamp('2026-01-01T12:00:00Z') < duration('24h')", True),
        ("timestamp('2026-01-01T00:00:00Z') + duration('48h')", "2026-01-03T00:00:00Z"),
        ("{'a': [1, {'b': null}]}", {"a": [1, {"b": None}]}),
        ("true ? 'yes' : 'no'", "yes"),
    ],
)
def test_operators_and_functions(source: str, expected: Any) -> None:
    assert ev(source) == expected


def test_lookups_filters_maps_and_sorting_over_the_state() -> None:
    state = {"users": USERS}
    assert ev("keys(state.users).filter(k, state.users[k].tier == 'gold')", state=state) == ["u1", "u3"]
    assert ev(
        "values(state.users).exists(u, u.email.lowerAscii() == args.email.lowerAscii())",
        state=state,
        args={"email": "ana.souza@EXAMPLE.com"},
    )
    assert ev("sum(values(state.users).map(u, u.spent))", state=state) == 1580.75
    assert ev("sortBy(values(state.users), 'spent').map(u, u.name)", state=state) == ["Bo Li", "Cy Diaz", "Ana Souza"]
    assert ev("values(state.users).all(u, u.spent > 50)", state=state) is True
    assert ev("values(state.users).exists_one(u, u.tier == 'silver')", state=state) is True


def test_free_names_exclude_the_macros_own_variables() -> None:
    expr = compile_expression("args.items.map(i, i.price * value.qty).filter(p, p > limit)")
    assert expr.names == frozenset({"args", "value", "limit"})
    check_names(expr, {"args", "value", "limit"})
    with pytest.raises(ExpressionSyntaxError, match="unknown name 'limit'"):
        check_names(expr, {"args", "value"})


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("a.b +", "expression syntax error at column"),
        ("nope(1)", "unknown function nope()"),
        ("'a'.shout()", r"unknown function \.shout\(\)"),
        ("[1].reduce(a, b, a + b)", "not available"),
        ("google.protobuf.Int32Value{value: 1}", "message construction"),
        ("", "non-empty"),
        ("1 + " * 600 + "1", f"at most {MAX_SOURCE} characters"),
    ],
)
def test_bad_expressions_are_refused_when_compiled(source: str, message: str) -> None:
    with pytest.raises(ExpressionSyntaxError, match=message):
        compile_expression(source)


def test_a_failing_expression_is_a_twin_error_not_a_crash() -> None:
    with pytest.raises(ToolFailure) as info:
        ev("args.missing + 1", args={})
    assert (info.value.status, info.value.code) == (500, "TWIN_EXPRESSION_ERROR")
    assert "args.missing" in info.value.message
    assert "activation" not in info.value.message  # the library's internals are not leaked
    with pytest.raises(ToolFailure, match="must be true or false"):
        evaluate_bool(compile_expression("1 + 1"), {}, Budget())
    with pytest.raises(ToolFailure, match=r"not a finite number|divide by zero"):
        ev("1.0 / 0")


def test_the_step_budget_stops_an_explosive_expression_deterministically() -> None:
    nested = "[1,2,3,4,5,6,7,8,9,10]"
    source = f"{nested}.map(a, {nested}.map(b, {nested}.map(c, {nested}.map(d, {nested}.map(e, a+b+c+d+e)))))"
    outcomes = []
    for _ in range(2):
        budget = Budget()
        with pytest.raises(ToolFailure) as info:
            evaluate(compile_expression(source), {}, budget)
        outcomes.append((info.value.code, info.value.message, budget.steps))
    assert outcomes[0] == outcomes[1]  # the same point every time: counted, not timed
    assert outcomes[0][0] == BUDGET_CODE
    assert f"budget of {STEP_BUDGET:,} steps" in outcomes[0][1]


def test_the_budget_is_shared_by_every_expression_of_a_call() -> None:
    budget = Budget(steps=150)  # one evaluation takes 90 steps
    expr = compile_expression("[1, 2, 3].map(x, x * 2)")
    evaluate(expr, {}, budget)
    with pytest.raises(ToolFailure) as info:
        evaluate(expr, {}, budget)
    assert info.value.code == BUDGET_CODE


def test_sizes_are_bounded() -> None:
    big = "x" * 700_000
    with pytest.raises(ToolFailure) as info:
        ev("args.s + args.s", args={"s": big})
    assert info.value.code == LIMIT_CODE
    with pytest.raises(ToolFailure) as info:
        ev("flatten([args.l, args.l])", args={"l": list(range(6000))})
    assert info.value.code == LIMIT_CODE


def test_the_state_is_converted_once_per_call_until_it_changes() -> None:
    budget = Budget()
    state = {"users": USERS}
    first = _cel(state, budget)
    assert _cel(state, budget) is first
    spent = budget.steps
    budget.forget_along(state, ("users", "u1", "name"))  # an effect changed users.u1.name in place
    again = _cel(state, budget)
    assert again is not first
    assert again["users"]["u2"] is first["users"]["u2"]  # what the effect did not touch stays converted
    assert spent - budget.steps == 2 + 4 + 5  # state, users and u1 converted again: 1 + one step per entry


def test_membership_spends_a_step_per_element_it_looks_at() -> None:
    small, large = Budget(), Budget()
    evaluate(compile_expression("0 in args.l"), {"args": {"l": [1, 2]}}, small)
    evaluate(compile_expression("0 in args.l"), {"args": {"l": list(range(1, 1001))}}, large)
    conversion = 998  # the larger list also costs its conversion: one step per entry
    assert (STEP_BUDGET - large.steps) - (STEP_BUDGET - small.steps) == 998 + conversion


def test_the_wall_clock_is_a_backstop_read_every_so_many_steps() -> None:
    budget = Budget(seconds=0.0)  # its deadline is already past
    budget.spend(1000)  # the clock is read every 1,024 steps: counted work stays deterministic between reads
    with pytest.raises(OverBudget) as info:
        budget.spend(100)
    assert info.value.code == "TWIN_CALL_TIME_LIMIT"

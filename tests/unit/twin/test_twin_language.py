"""The twin language's handler constructs: find, let, forEach, when/else, anyOf, expression conditions and
values, text responses; all-or-nothing calls, bounded cost, deterministic records, load-time errors."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from twin_engine import DefinitionError, Twin
from twin_engine.case import new_case
from twin_engine.documents import load_twin
from twin_engine.twin import ScenarioConfig

SHOP = textwrap.dedent(
    """\
    apiVersion: agenttwin.dev/v1
    kind: TwinDefinition
    metadata: {name: shop}
    spec:
      initialState:
        users:
          u1: {name: Ana Souza, email: Ana.Souza@Example.com, zip: "10001"}
          u2: {name: Bo Li, email: bo@example.com, zip: "10001"}
          u3: {name: Cy Diaz, email: cy@example.com, zip: "94107"}
        orders:
          W1:
            user_id: u1
            status: delivered
            items:
              i1: {price: 10.5, status: delivered}
              i2: {price: 20.25, status: delivered}
              i3: {price: 5, status: pending}
        gift_cards:
          gc1: {balance: 25}
        charges: []
      tools:
        find_user_by_email:
          inputSchema: {type: object, required: [email], properties: {email: {type: string}}}
          handler:
            kind: read
            find:
              in: state.users
              where: "item.email.lowerAscii() == args.email.lowerAscii()"
              notFound: {status: 404, code: USER_NOT_FOUND, message: No user with this email.}
            response: {user_id: "{vars.key}", name: "{value.name}"}
        find_user_by_zip:
          inputSchema: {type: object, required: [zip], properties: {zip: {type: string}}}
          handler:
            kind: read
            find: {in: state.users, where: "item.zip == args.zip", unique: true}
        rename_user:
          inputSchema: {type: object, properties: {email: {type: string}, name: {type: string}}}
          handler:
            kind: mutate
            find: {in: state.users, where: "item.email.lowerAscii() == args.email.lowerAscii()"}
            effects:
              - {op: set, path: "users.{vars.key}.name", value: "{name}"}
        return_items:
          inputSchema:
            type: object
            required: [order_id, item_ids, payment]
            properties:
              order_id: {type: string}
              item_ids: {type: array, items: {type: string}}
              payment: {type: string}
          handler:
            kind: mutate
            path: "orders.{order_id}"
            notFound: {status: 404, code: ORDER_NOT_FOUND, message: No such order.}
            preconditions:
              - forEach: args.item_ids
                preconditions:
                  - expr: "item in value.items"
                    error: {status: 404, code: ITEM_NOT_FOUND, message: No such item in this order.}
              - let:
                  refund: "sum(args.item_ids.map(i, value.items[i].price))"
              - anyOf:
                  - expr: "args.payment == 'original'"
                  - expr: "args.payment in state.gift_cards"
                error: {status: 422, code: UNKNOWN_PAYMENT, message: Refund to the original method or a gift card.}
            effects:
              - forEach: args.item_ids
                as: it
                preconditions:
                  - path: "value.items.{vars.it}.status"
                    equals: delivered
                    error: {status: 409, code: NOT_RETURNABLE, message: Only delivered items can be returned.}
                effects:
                  - {op: set, path: "orders.{order_id}.items.{vars.it}.status", value: returned}
              - when: "args.payment == 'original'"
                then:
                  - op: append
                    path: charges
                    value: {order_id: "{order_id}", amount: {$expr: "-refund"}}
                else:
                  - {op: increment, path: "gift_cards.{payment}.balance", by: {$expr: refund}}
            response:
              refunded: {$expr: refund}
              returned: {$expr: "keys(value.items).filter(k, value.items[k].status == 'returned')"}
        cancel_order:
          inputSchema: {type: object, required: [order_id], properties: {order_id: {type: string}}}
          handler:
            kind: mutate
            path: "orders.{order_id}"
            preconditions:
              - {path: value.status, notEquals: cancelled}
            effects:
              - {op: set, path: "orders.{order_id}.status", value: cancelled}
            response: "Order {order_id} is cancelled."
        spend:
          inputSchema: {type: object, properties: {n: {type: integer}}}
          handler:
            kind: read
            path: users
            let: {ten: "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"}
            response:
              $expr: "ten.map(a, ten.map(b, ten.map(c, ten.map(d, ten.map(e, a + b + c + d + e + args.n)))))"
    """
)


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Twin:
    path = tmp_path_factory.mktemp("shop") / "twin.yaml"
    path.write_text(SHOP, encoding="utf-8")
    return load_twin(path)  # JSON Schema + compile: the new constructs are valid twin.v1


def test_find_looks_up_by_any_field_case_insensitively(shop: Twin) -> None:
    case = new_case(shop)
    reply = case.call("find_user_by_email", {"email": "ana.souza@EXAMPLE.COM"})
    assert (reply.http_status, reply.body) == (200, {"result": {"user_id": "u1", "name": "Ana Souza"}})
    missing = case.call("find_user_by_email", {"email": "nobody@example.com"})
    assert (missing.http_status, missing.record.error_code) == (404, "USER_NOT_FOUND")
    ambiguous = case.call("find_user_by_zip", {"zip": "10001"})
    assert (ambiguous.http_status, ambiguous.record.error_code) == (409, "AMBIGUOUS")
    unique = case.call("find_user_by_zip", {"zip": "94107"})
    assert unique.body["result"]["name"] == "Cy Diaz"


def test_a_mutate_through_find_changes_the_found_entity_and_answers_with_it(shop: Twin) -> None:
    case = new_case(shop)
    reply = case.call("rename_user", {"email": "BO@example.com", "name": "Bo Li-Wong"})
    assert reply.body == {"result": {"name": "Bo Li-Wong", "email": "bo@example.com", "zip": "10001"}}
    assert [c.path for c in reply.record.changes] == ["users.u2.name"]


def test_for_each_checks_every_item_before_anything_changes(shop: Twin) -> None:
    case = new_case(shop)
    before = case.state_hash()
    reply = case.call("return_items", {"order_id": "W1", "item_ids": ["i1", "nope"], "payment": "original"})
    assert (reply.http_status, reply.record.error_code) == (404, "ITEM_NOT_FOUND")
    assert case.state_hash() == before and reply.record.changes == () and not reply.record.mutated


def test_per_item_effects_are_all_or_nothing(shop: Twin) -> None:
    case = new_case(shop)
    before = case.state_hash()
    # i1 is returned first, then i3 (pending) fails its own precondition: i1's change is rolled back too
    reply = case.call("return_items", {"order_id": "W1", "item_ids": ["i1", "i3"], "payment": "original"})
    assert (reply.http_status, reply.record.error_code) == (409, "NOT_RETURNABLE")
    assert case.state_hash() == before
    # a repeated id sees its own earlier change: the second pass over i1 is refused
    twice = case.call("return_items", {"order_id": "W1", "item_ids": ["i1", "i1"], "payment": "original"})
    assert twice.record.error_code == "NOT_RETURNABLE"
    assert case.state_hash() == before


def test_when_else_branches_and_arithmetic(shop: Twin) -> None:
    case = new_case(shop)
    to_card = case.call("return_items", {"order_id": "W1", "item_ids": ["i1", "i2"], "payment": "gc1"})
    assert to_card.body == {"result": {"refunded": 30.75, "returned": ["i1", "i2"]}}
    assert case.state["gift_cards"]["gc1"]["balance"] == 55.75
    assert case.state["charges"] == []
    other = new_case(shop)
    other.call("return_items", {"order_id": "W1", "item_ids": ["i2"], "payment": "original"})
    assert other.state["charges"] == [{"order_id": "W1", "amount": -20.25}]
    assert other.state["gift_cards"]["gc1"]["balance"] == 25


def test_any_of_answers_its_own_error(shop: Twin) -> None:
    reply = new_case(shop).call("return_items", {"order_id": "W1", "item_ids": ["i1"], "payment": "bitcoin"})
    assert (reply.http_status, reply.record.error_code) == (422, "UNKNOWN_PAYMENT")


def test_a_response_may_be_a_plain_text(shop: Twin) -> None:
    case = new_case(shop)
    assert case.call("cancel_order", {"order_id": "W1"}).body == {"result": "Order W1 is cancelled."}
    again = case.call("cancel_order", {"order_id": "W1"})
    assert (again.http_status, again.record.error_code) == (409, "PRECONDITION_FAILED")


def test_an_expression_over_its_budget_is_a_recorded_twin_error_and_the_case_goes_on(shop: Twin) -> None:
    case = new_case(shop)
    reply = case.call("spend", {"n": 1})
    assert (reply.http_status, reply.record.error_code, reply.record.status) == (500, "TWIN_BUDGET_EXCEEDED", "error")
    assert "budget" in reply.body["error"]["message"]
    assert case.call("find_user_by_email", {"email": "cy@example.com"}).http_status == 200


def test_the_same_calls_give_the_same_records_and_state(shop: Twin) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("find_user_by_email", {"email": "ANA.souza@example.com"}),
        ("return_items", {"order_id": "W1", "item_ids": ["i2", "nope"], "payment": "gc1"}),
        ("return_items", {"order_id": "W1", "item_ids": ["i2", "i1"], "payment": "gc1"}),
        ("rename_user", {"email": "cy@example.com", "name": "Cy"}),
        ("spend", {"n": 2}),
    ]
    runs = []
    for _ in range(2):
        case = new_case(shop, seed=7)
        for tool, args in calls:
            case.call(tool, args)
        runs.append(([r.to_dict() for r in case.records], case.state_hash()))
    assert runs[0] == runs[1]


def test_inconsistent_state_keeps_only_the_first_applied_effect(shop: Twin) -> None:
    scenario = ScenarioConfig.from_scenario(
        {
            "metadata": {"name": "partial"},
            "spec": {
                "input": {"message": "x"},
                "faults": [{"target": "return_items", "behavior": {"type": "inconsistent_state"}}],
            },
        }
    )
    case = new_case(shop, scenario=scenario)
    case.call("return_items", {"order_id": "W1", "item_ids": ["i1", "i2"], "payment": "gc1"})
    items = case.state["orders"]["W1"]["items"]
    assert (items["i1"]["status"], items["i2"]["status"]) == ("returned", "delivered")
    assert case.state["gift_cards"]["gc1"]["balance"] == 25


# ---------------------------------------------------------------- load time: `twin check` with line numbers


def _tool_file(tmp_path: Path, handler: str, schema: str = "{type: object}") -> Path:
    body = textwrap.indent(textwrap.dedent(handler), " " * 8)
    text = (
        "apiVersion: agenttwin.dev/v1\nkind: TwinDefinition\nmetadata: {name: t}\nspec:\n"
        "  initialState: {items: {}}\n  tools:\n    t:\n"
        f"      inputSchema: {schema}\n      handler:\n{body}"
    )
    path = tmp_path / "twin.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("handler", "line", "where", "message"),
    [
        (
            'kind: read\npath: items\npreconditions:\n  - expr: "args.n >"\n',
            13,
            "spec.tools.t.handler.preconditions[0].expr",
            "expression syntax error at column",
        ),
        (
            'kind: read\npath: items\npreconditions:\n  - expr: "arg.n > 1"\n',
            13,
            "spec.tools.t.handler.preconditions[0].expr",
            "unknown name 'arg'",
        ),
        (
            'kind: read\npath: items\nresponse:\n  n: {$expr: "shout(args.n)"}\n',
            13,
            "spec.tools.t.handler.response.n.$expr",
            "unknown function shout()",
        ),
        (
            'kind: mutate\neffects:\n  - {op: set, path: "items.{vars.item}", value: 1}\n',
            12,
            "spec.tools.t.handler.effects[0].path",
            "no name 'item' is bound here",
        ),
        (
            'kind: read\npath: items\nlet: {state: "1"}\n',
            12,
            "spec.tools.t.handler.let.state",
            "'state' is reserved",
        ),
        (
            'kind: read\npath: items\nresponse: {$expr: "value", extra: 1}\n',
            12,
            "spec.tools.t.handler.response.$expr",
            "may have no other key",
        ),
        (
            'kind: mutate\neffects:\n  - forEach: args.l\n    effects:\n'
            '      - {op: set, path: "items.{vars.item}", value: 1}\n'
            '  - {op: set, path: "items.{vars.item}", value: 2}\n',
            15,
            "spec.tools.t.handler.effects[1].path",
            "no name 'item' is bound here",
        ),
        (
            'kind: read\nfind: {in: state.items, where: "item.x == 1"}\n'
            'preconditions:\n  - {expr: "value.ok", equals: 1}\n',
            13,
            "spec.tools.t.handler.preconditions[0]",
            "comparators belong to a path condition",
        ),
        (
            "kind: read\npath: items\npreconditions:\n  - forEach: args.l\n    effects: []\n",
            13,
            "spec.tools.t.handler.preconditions[0]",
            "'preconditions' is a required property",  # a precondition loop has no effects
        ),
    ],
)
def test_twin_check_places_language_errors_at_their_line(
    tmp_path: Path, handler: str, line: int, where: str, message: str
) -> None:
    with pytest.raises(DefinitionError) as info:
        load_twin(_tool_file(tmp_path, handler))
    error = info.value
    assert error.file is not None and error.file.endswith("twin.yaml")
    assert (error.line, error.path) == (line, where), str(error)
    assert message in error.message


def test_inline_definitions_get_the_same_checks() -> None:
    doc = {
        "apiVersion": "agenttwin.dev/v1",
        "kind": "TwinDefinition",
        "metadata": {"name": "x"},
        "spec": {"tools": {"t": {"handler": {"kind": "read", "path": "a", "preconditions": [{"expr": "nope > 1"}]}}}},
    }
    with pytest.raises(DefinitionError, match="unknown name 'nope'"):
        Twin.from_definition(doc)


def test_let_names_read_each_other_in_any_key_order_so_canonical_json_keeps_the_meaning() -> None:
    import json

    from twin_engine.canonical import canonical_json

    doc = {
        "apiVersion": "agenttwin.dev/v1",
        "kind": "TwinDefinition",
        "metadata": {"name": "fees"},
        "spec": {
            "initialState": {"fee": 50},
            "tools": {
                "quote": {
                    "handler": {
                        "kind": "read",
                        "path": "fee",
                        # `total` (t) is written first but reads `bags` and `unit`, sorted after or before it
                        "let": {"total": "bags * unit", "unit": "value", "bags": "args.n - 1"},
                        "response": {"total": {"$expr": "total"}},
                    }
                }
            },
        },
    }
    as_written = new_case(Twin.from_definition(doc)).call("quote", {"n": 3})
    travelled = new_case(Twin.from_definition(json.loads(canonical_json(doc)))).call("quote", {"n": 3})
    assert as_written.body == travelled.body == {"result": {"total": 100}}


def test_let_names_in_a_cycle_are_refused() -> None:
    doc = {
        "apiVersion": "agenttwin.dev/v1",
        "kind": "TwinDefinition",
        "metadata": {"name": "loop"},
        "spec": {"tools": {"t": {"handler": {"kind": "read", "path": "a", "let": {"a1": "b1 + 1", "b1": "a1 + 1"}}}}},
    }
    with pytest.raises(DefinitionError, match=r"read each other in a cycle: a1 -> b1") as info:
        Twin.from_definition(doc)
    assert info.value.path == "spec.tools.t.handler.let"
    selfish = {**doc}
    selfish["spec"] = {"tools": {"t": {"handler": {"kind": "read", "path": "a", "let": {"a1": "a1 + 1"}}}}}
    with pytest.raises(DefinitionError, match="unknown name 'a1'"):
        Twin.from_definition(selfish)

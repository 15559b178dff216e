"""The call pipeline: counting, gate, idempotency, tenant check, records and replies (spec §2.7-2.9)."""

from __future__ import annotations

from typing import Any

import pytest

from producers.agents.contract import ToolReply
from producers.tool_client import InProcessToolClient
from twin_engine import ScenarioConfig, Twin, call_status, case_seed
from twin_engine.case import new_case

REFUND = {"order_id": "ORD-1001", "amount": 40, "idempotency_key": "refund-ORD-1001-40.00"}


def test_spec_example_refund_50_as_first_call(demo_twin: Twin) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    reply = case.call("refund_payment", {"order_id": "ORD-1001", "amount": 50})
    assert reply.http_status == 200
    assert reply.body == {
        "result": {
            "refund_id": "RF-0001",
            "order_id": "ORD-1001",
            "amount": 50,
            "currency": "USD",
            "status": "succeeded",
        }
    }
    order = case.state["orders"]["ORD-1001"]
    assert (order["refunded_amount"], order["refund_count"], order["refundable_amount"]) == (50, 1, 100)
    assert case.state["refunds"] == [
        {
            "refund_id": "RF-0001",
            "order_id": "ORD-1001",
            "amount": 50,
            "currency": "USD",
            "idempotency_key": None,
        }
    ]
    record = reply.record
    assert (record.seq, record.call_number, record.status, record.effect_key) == (
        1,
        1,
        "ok",
        "refund:ORD-1001",
    )
    assert record.mutated
    assert record.expects_mutation
    assert not record.replayed
    assert record.risk == "WRITE_IRREVERSIBLE"
    assert {c.path for c in record.changes} == {
        "orders.ORD-1001.refunded_amount",
        "orders.ORD-1001.refund_count",
        "orders.ORD-1001.refundable_amount",
        "refunds[0]",
    }


def test_seq_and_call_numbers_count_every_call_and_retrieval(demo_twin: Twin) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    case.call("lookup_order", {"order_id": "ORD-1001"})
    case.call("nope", {})  # refused, still counted
    case.search_kb("refund policy")
    case.call("lookup_order", {"order_id": "ORD-1001"})
    reply = case.call("escalate_to_human", {"order_id": "ORD-1001"})
    assert [(r.seq, r.tool, r.call_number) for r in case.records] == [
        (1, "lookup_order", 1),
        (2, "nope", 1),
        (4, "lookup_order", 2),
        (5, "escalate_to_human", 1),
    ]
    assert case.retrievals[0].seq == 3
    assert reply.body["result"]["ticket_id"] == "TCK-0005"
    assert case.state["escalations"] == [
        {"ticket_id": "TCK-0005", "order_id": "ORD-1001", "reason": None, "amount": None}
    ]


def test_unknown_tool(demo_twin: Twin) -> None:
    reply = new_case(demo_twin).call("drop_tables", {})
    assert (reply.http_status, reply.body["error"]["code"], reply.record.status) == (
        404,
        "UNKNOWN_TOOL",
        "unknown_tool",
    )
    assert reply.record.risk is None


def test_allowed_tools(demo_twin: Twin) -> None:
    scenario = ScenarioConfig(allowed_tools=("lookup_order",))
    case = new_case(demo_twin, scenario=scenario, tenant="demo-co")
    assert case.call("lookup_order", {"order_id": "ORD-1001"}).http_status == 200
    reply = case.call("refund_payment", REFUND)
    assert (reply.http_status, reply.body["error"]["code"]) == (403, "TOOL_NOT_ALLOWED")
    assert (reply.record.status, reply.record.policy_violation) == ("denied", "TOOL_NOT_ALLOWED")
    assert case.state == case.initial


def test_admin_only_for_agents_but_not_admins(demo_twin: Twin) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    reply = case.call("export_customer_data", {"customer_id": "CUS-100"})
    assert (reply.http_status, reply.body["error"]["code"]) == (403, "ADMIN_ONLY")
    assert (reply.record.status, reply.record.policy_violation, reply.record.risk) == (
        "denied",
        "ADMIN_ONLY",
        "ADMIN",
    )
    admin = case.call("export_customer_data", {"customer_id": "CUS-100"}, role="admin")
    assert admin.body == {"result": {"customer_id": "CUS-100", "status": "export_scheduled"}}
    assert admin.record.call_number == 2


@pytest.mark.parametrize("arguments", [[1, 2], "text", {"x": {1, 2}}, {"x": float("nan")}, {1: "a"}])
def test_non_json_arguments(demo_twin: Twin, arguments: Any) -> None:
    reply = new_case(demo_twin).call("escalate_to_human", arguments)
    assert (reply.http_status, reply.body["error"]["code"], reply.record.status) == (
        400,
        "INVALID_ARGUMENT",
        "invalid",
    )


def test_arguments_too_large(demo_twin: Twin) -> None:
    reply = new_case(demo_twin).call("escalate_to_human", {"reason": "x" * (256 * 1024)})
    assert (reply.http_status, reply.body["error"]["code"], reply.record.status) == (
        413,
        "ARGUMENTS_TOO_LARGE",
        "invalid",
    )


def test_input_schema_first_three_problems(demo_twin: Twin) -> None:
    case = new_case(demo_twin)
    reply = case.call("refund_payment", {"order_id": 5, "amount": -1, "idempotency_key": 3})
    assert (reply.http_status, reply.body["error"]["code"]) == (422, "INVALID_ARGUMENT")
    message = reply.body["error"]["message"]
    assert message.startswith("Invalid arguments: ")
    assert message.count(";") == 2
    assert "amount: -1 is less than or equal to the minimum of 0" in message
    missing = case.call("refund_payment", {"order_id": "ORD-1001"})
    assert "'amount' is a required property" in missing.body["error"]["message"]
    assert case.state == case.initial


def test_gate_runs_before_faults(demo_twin: Twin, make_scenario: Any) -> None:
    scenario = make_scenario([{"target": "*", "behavior": {"type": "http_500"}}])
    case = new_case(demo_twin, scenario=scenario)
    reply = case.call("export_customer_data", {"customer_id": "CUS-100"})
    assert reply.body["error"]["code"] == "ADMIN_ONLY"
    assert reply.record.fault is None


def test_idempotent_replay_returns_stored_result_without_second_effect(demo_twin: Twin) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    first = case.call("refund_payment", REFUND)
    after_first = case.state
    again = case.call("refund_payment", REFUND)
    assert again.http_status == 200
    assert again.body == first.body  # RF-0001, not RF-0002
    assert again.headers == {"Idempotent-Replayed": "true"}
    assert (again.record.replayed, again.record.mutated, again.record.changes) == (True, False, ())
    assert again.record.idempotency_key == "refund-ORD-1001-40.00"
    assert case.state == after_first
    assert case.state["orders"]["ORD-1001"]["refund_count"] == 1


def test_idempotency_conflict(demo_twin: Twin) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    case.call("refund_payment", REFUND)
    reply = case.call("refund_payment", {**REFUND, "amount": 41})
    assert (reply.http_status, reply.body["error"]["code"], reply.record.status) == (
        409,
        "IDEMPOTENCY_CONFLICT",
        "invalid",
    )
    assert "already used with different arguments" in reply.body["error"]["message"]
    assert case.state["orders"]["ORD-1001"]["refund_count"] == 1


def test_failed_calls_store_no_slot(demo_twin: Twin) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    too_much = {"order_id": "ORD-1001", "amount": 500, "idempotency_key": "k"}
    refused = case.call("refund_payment", too_much)
    assert (refused.http_status, refused.body["error"]) == (
        422,
        {"code": "AMOUNT_EXCEEDS_ORDER", "message": "Refund would exceed the order total."},
    )
    fine = case.call("refund_payment", {"order_id": "ORD-1001", "amount": 10, "idempotency_key": "k"})
    assert fine.http_status == 200
    assert fine.record.replayed is False


def test_idempotency_header(make_twin: Any) -> None:
    twin = make_twin(
        {
            "pay": {
                "idempotency": {"header": "Idempotency-Key"},
                "handler": {
                    "kind": "mutate",
                    "effects": [{"op": "increment", "path": "n"}],
                    "response": {"n": "{state.n}"},
                },
            }
        }
    )
    case = new_case(twin)
    assert case.call("pay", {}, headers={"idempotency-key": "h1"}).body == {"result": {"n": 1}}
    replay = case.call("pay", {}, headers={"IDEMPOTENCY-KEY": "h1"})
    assert replay.record.replayed
    assert replay.body == {"result": {"n": 1}}
    assert case.call("pay", {}).body == {"result": {"n": 2}}
    assert case.state == {"n": 2}


def test_idempotency_slots_are_per_tool(make_twin: Any) -> None:
    # the same key on another tool is another operation: it executes, it never replays the first tool's reply
    def counter(name: str) -> dict[str, Any]:
        return {
            "idempotency": {"argument": "key"},
            "handler": {
                "kind": "mutate",
                "effects": [{"op": "increment", "path": name}],
                "response": {"tool": name, "n": f"{{state.{name}}}"},
            },
        }

    twin = make_twin({"pay": counter("pay"), "ship": counter("ship")})
    case = new_case(twin)
    first = case.call("pay", {"key": "k-1"})
    other = case.call("ship", {"key": "k-1"})
    assert first.body == {"result": {"tool": "pay", "n": 1}}
    assert other.body == {"result": {"tool": "ship", "n": 1}}
    assert (other.http_status, other.record.replayed, other.record.mutated) == (200, False, True)
    assert case.state == {"pay": 1, "ship": 1}
    replay = case.call("ship", {"key": "k-1"})  # the same tool and key still replays
    assert replay.record.replayed
    assert case.state == {"pay": 1, "ship": 1}


def test_tenant_denied(demo_twin: Twin) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    reply = case.call("lookup_order", {"order_id": "ORD-2001"})
    assert reply.http_status == 403
    assert reply.body == {
        "error": {"code": "ACCESS_DENIED", "message": "This record belongs to another tenant."}
    }
    record = reply.record
    assert (record.status, record.cross_tenant, record.policy_violation) == (
        "denied",
        "denied",
        "CROSS_TENANT",
    )
    refund = case.call("refund_payment", {"order_id": "ORD-2001", "amount": 60})
    assert refund.http_status == 403
    assert case.state == case.initial
    # no tenant on the case: no check
    assert new_case(demo_twin).call("lookup_order", {"order_id": "ORD-2001"}).http_status == 200


def test_tenant_check_skipped_when_the_entity_is_not_named(demo_twin: Twin) -> None:
    reply = new_case(demo_twin, tenant="demo-co").call("escalate_to_human", {"reason": "help"})
    assert reply.http_status == 200
    assert reply.record.cross_tenant is None


def test_tenant_leak_is_recorded_as_allowed(make_twin: Any) -> None:
    twin = make_twin(
        {"all": {"handler": {"kind": "read", "path": "orders"}}},
        {"orders": {"A": {"tenant": "t1"}, "B": {"tenant": "t2"}}},
        tenantKey="tenant",
    )
    reply = new_case(twin, tenant="t1").call("all", {})
    assert reply.http_status == 200
    assert (reply.record.cross_tenant, reply.record.policy_violation) == ("allowed", "CROSS_TENANT")
    clean = make_twin(
        {"all": {"handler": {"kind": "read", "path": "orders"}}},
        {"orders": {"A": {"tenant": "t1"}}},
        tenantKey="tenant",
    )
    assert new_case(clean, tenant="t1").call("all", {}).record.cross_tenant is None


def test_scenario_state_tenant_and_now(
    demo_twin: Twin, scenario_docs: dict[str, Any], make_twin: Any
) -> None:
    scenario = ScenarioConfig.from_scenario(scenario_docs["refund-prompt-injection"])
    case = new_case(demo_twin, scenario=scenario)
    assert case.tenant == "demo-co"
    order = case.initial["orders"]["ORD-1002"]
    assert (order["total"], order["refundable_amount"], order["refunded_amount"]) == (500, 500, 0)
    assert new_case(demo_twin, scenario=scenario, tenant="other-co").tenant == "other-co"
    clock = make_twin({"t": {"handler": {"kind": "static", "response": {"now": "{now}"}}}})
    pinned = ScenarioConfig.from_scenario(
        {"spec": {"input": {"message": "m", "context": {"now": "2030-05-05T00:00:00Z"}}}}
    )
    assert new_case(clock, scenario=pinned).call("t", {}).body == {"result": {"now": "2030-05-05T00:00:00Z"}}


def test_reply_bytes_and_tool_reply(demo_twin: Twin) -> None:
    reply = new_case(demo_twin, tenant="demo-co").call("lookup_customer", {"customer_id": "CUS-100"})
    assert reply.raw_body == (
        b'{"result":{"customer_id":"CUS-100","email":"jane.doe@example.com","name":"Jane Doe","tier":"gold"}}'
    )
    tool_reply = reply.to_tool_reply()
    assert isinstance(tool_reply, ToolReply)
    assert tool_reply.ok
    assert tool_reply.result["name"] == "Jane Doe"
    assert "tenant" not in tool_reply.result
    assert reply.record.to_dict()["response"] == reply.body


@pytest.mark.parametrize(
    ("status", "code", "transport", "expected"),
    [
        (200, None, None, "ok"),
        (201, None, None, "ok"),
        (429, "X", None, "rate_limited"),
        (401, "X", None, "denied"),
        (403, "X", None, "denied"),
        (404, "UNKNOWN_TOOL", None, "unknown_tool"),
        (404, "NOT_FOUND", None, "not_found"),
        (408, "X", None, "timeout"),
        (504, "X", None, "timeout"),
        (400, "X", None, "invalid"),
        (409, "X", None, "invalid"),
        (422, "X", None, "invalid"),
        (500, "X", None, "error"),
        (413, "X", None, "invalid"),
        (411, "X", None, "invalid"),
        (0, None, "dropped", "dropped"),
        (200, None, "partial", "partial"),
        (200, None, "malformed", "malformed"),
    ],
)
def test_call_status_mapping(status: int, code: str | None, transport: str | None, expected: str) -> None:
    assert call_status(status, code, transport) == expected


def test_in_process_tool_client(demo_twin: Twin) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    client = InProcessToolClient(case)
    reply = client.call("lookup_order", {"order_id": "ORD-1001"})
    assert isinstance(reply, ToolReply)
    assert reply.result["refund_count"] == 0
    assert client.call("export_customer_data", {"customer_id": "CUS-100"}).error_code == "ADMIN_ONLY"
    assert [d["id"] for d in client.search_kb("refund policy")] == ["kb-refund-policy"]
    assert [r.seq for r in case.records] == [1, 2]
    assert case.retrievals[0].seq == 3


def test_scenario_case_seed(scenario_docs: dict[str, Any]) -> None:
    config = ScenarioConfig.from_scenario(scenario_docs["refund-happy-path"])
    assert config.case_seed(42) == case_seed(42, "refund-happy-path", None)
    assert ScenarioConfig(name="x", seed=5).case_seed(42) == 5

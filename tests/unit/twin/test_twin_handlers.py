"""The six handler kinds and the load-time checks of a twin definition (spec §2.1-2.3)."""

from __future__ import annotations

from typing import Any

import pytest

from twin_engine import AdapterCall, AdapterRegistry, AdapterResult, DefinitionError, Twin
from twin_engine.case import new_case

ITEMS = {"items": {"A": {"item": "A", "qty": 2, "tenant": "t1"}}, "log": []}


def test_read_returns_a_copy_or_the_rendered_response(make_twin: Any) -> None:
    twin = make_twin(
        {
            "raw": {"handler": {"kind": "read", "path": "items.{item}"}},
            "shaped": {"handler": {"kind": "read", "path": "items.{item}", "response": {"n": "{value.qty}"}}},
        },
        ITEMS,
    )
    case = new_case(twin)
    reply = case.call("raw", {"item": "A"})
    assert (reply.http_status, reply.body) == (200, {"result": {"item": "A", "qty": 2, "tenant": "t1"}})
    assert reply.record.status == "ok"
    assert reply.record.mutated is False
    assert case.call("shaped", {"item": "A"}).body == {"result": {"n": 2}}


def test_read_not_found_default_and_custom(make_twin: Any) -> None:
    twin = make_twin(
        {
            "plain": {"handler": {"kind": "read", "path": "items.{item}"}},
            "custom": {
                "handler": {
                    "kind": "read",
                    "path": "items.{item}",
                    "notFound": {"status": 404, "code": "NO_ITEM", "message": "Nope."},
                }
            },
        },
        ITEMS,
    )
    case = new_case(twin)
    reply = case.call("plain", {"item": "Z"})
    assert reply.http_status == 404
    assert reply.body == {"error": {"code": "NOT_FOUND", "message": "The requested record does not exist."}}
    assert reply.record.status == "not_found"
    assert case.call("custom", {"item": "Z"}).body == {"error": {"code": "NO_ITEM", "message": "Nope."}}


def test_mutate_preconditions_effects_and_response(make_twin: Any) -> None:
    twin = make_twin(
        {
            "take": {
                "handler": {
                    "kind": "mutate",
                    "path": "items.{item}",
                    "preconditions": [{"path": "value.qty", "gte": "{n}"}],
                    "effects": [
                        {"op": "decrement", "path": "items.{item}.qty", "by": "{n}"},
                        {"op": "append", "path": "log", "value": {"item": "{item}", "n": "{n}"}},
                    ],
                    "response": {"left": "{value.qty}"},
                }
            },
            "noresp": {
                "handler": {
                    "kind": "mutate",
                    "path": "items.{item}",
                    "effects": [{"op": "set", "path": "items.{item}.seen", "value": True}],
                }
            },
            "nopath": {
                "handler": {"kind": "mutate", "effects": [{"op": "append", "path": "log", "value": 1}]}
            },
        },
        ITEMS,
    )
    case = new_case(twin)
    reply = case.call("take", {"item": "A", "n": 1})
    assert reply.body == {"result": {"left": 1}}
    assert reply.record.mutated is True
    assert reply.record.expects_mutation is True
    assert [c.to_dict() for c in reply.record.changes] == [
        {"op": "changed", "path": "items.A.qty", "before": 2, "after": 1},
        {"op": "added", "path": "log[0]", "after": {"item": "A", "n": 1}},
    ]
    refused = case.call("take", {"item": "A", "n": 5})
    assert refused.http_status == 409
    assert refused.body == {
        "error": {"code": "PRECONDITION_FAILED", "message": "value.qty: expected at least 5, got 1"}
    }
    assert refused.record.mutated is False
    assert case.state["items"]["A"]["qty"] == 1
    assert case.call("noresp", {"item": "A"}).body["result"]["seen"] is True
    assert case.call("nopath", {}).body == {"result": {"ok": True}}
    assert case.call("noresp", {"item": "Q"}).http_status == 404


def test_failed_effect_leaves_state_untouched(make_twin: Any) -> None:
    twin = make_twin(
        {
            "bad": {
                "handler": {
                    "kind": "mutate",
                    "effects": [
                        {"op": "set", "path": "x", "value": 1},
                        {"op": "append", "path": "items", "value": 1},  # items is an object
                    ],
                }
            }
        },
        ITEMS,
    )
    case = new_case(twin)
    reply = case.call("bad", {})
    assert (reply.http_status, reply.record.error_code, reply.record.status) == (
        500,
        "TWIN_EFFECT_ERROR",
        "error",
    )
    assert case.state == ITEMS


def test_precondition_error_override_and_roots(make_twin: Any) -> None:
    twin = make_twin(
        {
            "t": {
                "handler": {
                    "kind": "mutate",
                    "preconditions": [
                        {"path": "tenant", "equals": "t1"},
                        {
                            "path": "state.items.{item}.qty",
                            "lt": 10,
                            "error": {"status": 422, "code": "TOO_MANY"},
                        },
                        {"path": "args.note", "matches": "^ok"},
                    ],
                    "effects": [{"op": "set", "path": "done", "value": True}],
                }
            }
        },
        ITEMS,
    )
    case = new_case(twin, tenant="t1")
    assert case.call("t", {"item": "A", "note": "ok!"}).http_status == 200
    bad = case.call("t", {"item": "A", "note": "no"})
    assert bad.body["error"]["code"] == "PRECONDITION_FAILED"
    assert bad.body["error"]["message"].startswith("args.note: expected text matching")
    other = new_case(twin, tenant="t2").call("t", {"item": "A", "note": "ok"})
    assert other.body["error"]["message"] == 'tenant: expected "t1", got "t2"'


def test_a_precondition_pattern_that_times_out_is_the_twins_error(make_twin: Any) -> None:
    twin = make_twin(
        {
            "t": {
                "handler": {
                    "kind": "mutate",
                    "preconditions": [{"path": "args.note", "matches": "^(a|aa)+$"}],
                    "effects": [{"op": "set", "path": "done", "value": True}],
                }
            }
        },
        ITEMS,
    )
    case = new_case(twin)
    reply = case.call("t", {"note": "a" * 60 + "!"})
    assert (reply.http_status, reply.record.error_code) == (500, "TWIN_PATTERN_ERROR")
    assert "took longer than 0.5 s" in reply.body["error"]["message"]
    assert case.state == ITEMS


def test_static_and_echo(make_twin: Any) -> None:
    twin = make_twin(
        {
            "s": {"handler": {"kind": "static", "response": {"at": "{now}", "x": "{x?}"}}},
            "empty": {"handler": {"kind": "static"}},
            "e": {"handler": {"kind": "echo"}},
        }
    )
    case = new_case(twin)
    assert case.call("s", {}).body == {"result": {"at": "2026-01-01T00:00:00Z", "x": None}}
    assert case.call("empty", {}).body == {"result": {}}
    assert case.call("e", {"a": [1]}).body == {"result": {"tool": "e", "arguments": {"a": [1]}}}


def test_recorded_fixtures(make_twin: Any) -> None:
    twin = make_twin(
        {
            "r": {
                "handler": {
                    "kind": "recorded",
                    "fixtures": [
                        {"match": {"q": {"k": 1}}, "response": {"hit": 1}},
                        {
                            "match": {"q": "err"},
                            "error": {"status": 502, "code": "BAD_GATEWAY", "message": "down"},
                        },
                        {"match": {"q": "created"}, "status": 201, "response": {"hit": "{q}"}},
                    ],
                }
            }
        }
    )
    case = new_case(twin)
    assert case.call("r", {"q": {"k": 1, "extra": 2}}).body == {"result": {"hit": 1}}
    err = case.call("r", {"q": "err"})
    assert (err.http_status, err.body["error"]["code"]) == (502, "BAD_GATEWAY")
    created = case.call("r", {"q": "created"})
    assert (created.http_status, created.body) == (
        201,
        {"result": {"hit": "{q}"}},
    )  # recorded data is not rendered
    none = case.call("r", {"q": "other"})
    assert (none.http_status, none.body["error"]["code"]) == (404, "NO_FIXTURE")


def _bump(call: AdapterCall) -> AdapterResult:
    if call.arguments.get("fail"):
        return AdapterResult(status=418, error={"message": "teapot"})
    call.state["count"] = call.state.get("count", 0) + 1
    return AdapterResult(
        result={"count": call.state["count"], "seq": call.seq, "n": call.call_number},
        mutated=True,
        headers={"X-A": "1"},
    )


def test_custom_adapter(make_twin: Any) -> None:
    twin = make_twin({"c": {"handler": {"kind": "custom", "adapter": "bump"}}}, {"count": 0})
    case = new_case(twin, adapters=AdapterRegistry({"bump": _bump}))
    reply = case.call("c", {})
    assert reply.body == {"result": {"count": 1, "seq": 1, "n": 1}}
    assert reply.headers == {"X-A": "1"}
    assert reply.record.mutated is True
    assert case.state == {"count": 1}
    fail = case.call("c", {"fail": True})
    assert (fail.http_status, fail.body) == (418, {"error": {"code": "ERROR", "message": "teapot"}})
    assert case.state == {"count": 1}
    missing = new_case(twin).call("c", {})
    assert (missing.http_status, missing.record.error_code) == (500, "TWIN_ADAPTER_MISSING")


def test_output_schema_violation(make_twin: Any) -> None:
    twin = make_twin(
        {
            "m": {
                "outputSchema": {"type": "object", "required": ["id"]},
                "handler": {"kind": "mutate", "effects": [{"op": "set", "path": "x", "value": 1}]},
            }
        }
    )
    case = new_case(twin)
    reply = case.call("m", {})
    assert (reply.http_status, reply.record.error_code) == (500, "TWIN_CONTRACT_VIOLATION")
    assert case.state == {}
    assert reply.record.mutated is False


def test_risk_defaults_and_tool_specs(make_twin: Any, demo_twin: Twin) -> None:
    twin = make_twin(
        {
            "r": {"handler": {"kind": "read", "path": "a"}},
            "s": {"handler": {"kind": "static"}},
            "d": {"risk": "EXECUTE", "handler": {"kind": "echo"}},
        }
    )
    assert [(t.name, t.risk, t.risk_declared) for t in twin.tools.values()] == [
        ("r", "READ", False),
        ("s", "WRITE_IRREVERSIBLE", False),
        ("d", "EXECUTE", True),
    ]
    specs = demo_twin.tool_specs()
    assert [s.name for s in specs] == [
        "lookup_customer",
        "lookup_order",
        "get_refund_policy",
        "refund_payment",
        "send_email",
        "escalate_to_human",
        "export_customer_data",
    ]
    assert specs[3].risk == "WRITE_IRREVERSIBLE"
    assert specs[3].input_schema is not None
    assert specs[3].input_schema["required"] == ["order_id", "amount"]


def test_twin_identity(demo_doc: dict[str, Any], demo_twin: Twin) -> None:
    assert demo_twin.name == "demo-co-support"
    assert demo_twin.secrets == ("sk-demo-internal-9f8e7d6c5b4a39281706",)
    assert demo_twin.tenant_key == "tenant"
    assert demo_twin.retrieval_path == "kb"
    assert demo_twin.hash == Twin.from_definition(demo_doc).hash
    assert len(demo_twin.hash) == 64
    assert demo_twin.tools["refund_payment"].expects_mutation
    assert not demo_twin.tools["export_customer_data"].expects_mutation


@pytest.mark.parametrize(
    ("tool", "where"),
    [
        ({"handler": {"kind": "read"}}, "spec.tools.t.handler.path"),
        ({"handler": {"kind": "mutate"}}, "spec.tools.t.handler.effects"),
        (
            {"handler": {"kind": "read", "path": "a", "effects": [{"op": "delete", "path": "a"}]}},
            "spec.tools.t.handler.effects",
        ),
        (
            {"handler": {"kind": "static", "preconditions": [{"path": "args.a"}]}},
            "spec.tools.t.handler.preconditions",
        ),
        ({"handler": {"kind": "recorded"}}, "spec.tools.t.handler.fixtures"),
        ({"handler": {"kind": "custom"}}, "spec.tools.t.handler.adapter"),
        ({"handler": {"kind": "static", "response": {"a": "{bad"}}}, "spec.tools.t.handler.response.a"),
        ({"handler": {"kind": "static", "response": {"a": "{result}"}}}, "spec.tools.t.handler.response.a"),
        ({"handler": {"kind": "read", "path": "a..{x}"}}, "spec.tools.t.handler.path"),
        ({"effectKey": "x:{", "handler": {"kind": "echo"}}, "spec.tools.t.effectKey"),
        ({"tenantPath": "a.", "handler": {"kind": "echo"}}, "spec.tools.t.tenantPath"),
        (
            {
                "handler": {
                    "kind": "mutate",
                    "preconditions": [{"path": "other.x"}],
                    "effects": [{"op": "delete", "path": "a"}],
                }
            },
            "spec.tools.t.handler.preconditions[0].path",
        ),
        ({"inputSchema": {"type": "nope"}, "handler": {"kind": "echo"}}, "spec.tools.t.inputSchema"),
        (
            {"inputSchema": {"patternProperties": {"^a": {}}}, "handler": {"kind": "echo"}},
            "spec.tools.t.inputSchema",
        ),
    ],
)
def test_definition_errors(make_twin: Any, tool: dict[str, Any], where: str) -> None:
    with pytest.raises(DefinitionError) as info:
        make_twin({"t": tool})
    assert info.value.path == where


def test_initial_state_size_limit(make_twin: Any) -> None:
    with pytest.raises(DefinitionError) as info:
        make_twin({"t": {"handler": {"kind": "echo"}}}, {"blob": "x" * (1 << 20)})
    assert info.value.path == "spec.initialState"

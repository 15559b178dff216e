"""The twenty fault types, each by its two facts (state effect, caller view), and the rule format (§3)."""

from __future__ import annotations

import hashlib
import random
from typing import Any

import pytest

from twin_engine import FAULT_TYPES, DefinitionError, Twin, TwinCase, case_seed
from twin_engine.case import new_case
from twin_engine.faults import draw, retry_after_text

REFUND = {"order_id": "ORD-1001", "amount": 40}
KEYED = {**REFUND, "idempotency_key": "k-1"}


def faulty_case(twin: Twin, make_scenario: Any, behavior: dict[str, Any], **rule: Any) -> TwinCase:
    return new_case(twin,
        scenario=make_scenario([{"target": "refund_payment", "behavior": behavior, **rule}]), seed=7
    )


def order(case: TwinCase) -> dict[str, Any]:
    result: dict[str, Any] = case.state["orders"]["ORD-1001"]
    return result


def refunded(case: TwinCase) -> tuple[int, int]:
    return order(case)["refund_count"], len(case.state["refunds"])


def test_there_are_twenty_fault_types() -> None:
    assert len(FAULT_TYPES) == 20
    assert len(set(FAULT_TYPES)) == 20


# ------------------------------------------------------------ faults where nothing ran


@pytest.mark.parametrize(
    ("kind", "status", "code", "message", "record_status", "retry_after"),
    [
        ("timeout_before_mutation", 504, "TIMEOUT", "The upstream timed out.", "timeout", None),
        ("http_429", 429, "RATE_LIMITED", "Too many requests.", "rate_limited", "1"),
        ("rate_limit", 429, "RATE_LIMITED", "Too many requests.", "rate_limited", "1"),
        ("http_500", 500, "UPSTREAM_ERROR", "Upstream error.", "error", None),
        ("http_503", 503, "UNAVAILABLE", "The service is unavailable.", "error", None),
        ("transient_unavailable", 503, "TRANSIENT_UNAVAILABLE", None, "error", "1"),
        ("permanent_unavailable", 503, "PERMANENTLY_UNAVAILABLE", None, "error", None),
        ("non_retryable_error", 422, "NON_RETRYABLE_ERROR", None, "invalid", None),
        ("auth_denied", 403, "AUTH_DENIED", "The credentials were rejected.", "denied", None),
    ],
)
def test_honest_error_faults_change_nothing(
    demo_twin: Twin,
    make_scenario: Any,
    kind: str,
    status: int,
    code: str,
    message: str | None,
    record_status: str,
    retry_after: str | None,
) -> None:
    case = faulty_case(demo_twin, make_scenario, {"type": kind})
    reply = case.call("refund_payment", KEYED)
    # fact 1: the dependency did nothing
    assert case.state == case.initial
    assert reply.record.mutated is False
    assert reply.record.changes == ()
    # fact 2: the caller sees the error, the record says so
    assert reply.http_status == status
    assert reply.body["error"]["code"] == code
    if message is not None:
        assert reply.body["error"]["message"] == message
    assert reply.headers.get("Retry-After") == retry_after
    assert (reply.record.status, reply.record.fault, reply.record.error_code) == (record_status, kind, code)
    assert reply.transport is None
    # nothing ran, so no idempotency slot: a keyed retry executes for real
    retry = case.call("refund_payment", KEYED)
    assert retry.record.fault == kind  # the rule has no `when`: it fires again
    assert case.state == case.initial


def test_http_503_sends_retry_after_only_when_configured(demo_twin: Twin, make_scenario: Any) -> None:
    case = faulty_case(demo_twin, make_scenario, {"type": "http_503", "retryAfterSeconds": 2.5})
    assert case.call("refund_payment", REFUND).headers == {"Retry-After": "2.5"}


def test_dropped_connection(demo_twin: Twin, make_scenario: Any) -> None:
    case = faulty_case(demo_twin, make_scenario, {"type": "dropped_connection"})
    reply = case.call("refund_payment", KEYED)
    assert case.state == case.initial
    assert (reply.http_status, reply.body, reply.raw_body, reply.transport) == (0, None, None, "dropped")
    assert (reply.record.http_status, reply.record.response, reply.record.status) == (0, None, "dropped")
    assert reply.to_tool_reply().transport_error == "CONNECTION_DROPPED"


# ------------------------------------------------------------ dangerous: the reply and the state disagree


def test_timeout_after_mutation_commits_and_a_keyed_retry_replays(
    demo_twin: Twin, make_scenario: Any
) -> None:
    case = faulty_case(
        demo_twin,
        make_scenario,
        {"type": "timeout_after_mutation", "message": "The payment provider did not answer in time."},
        when={"callNumber": 1},
    )
    reply = case.call("refund_payment", KEYED)
    assert refunded(case) == (1, 1)
    assert reply.record.mutated is True
    assert reply.http_status == 504
    assert reply.body == {
        "error": {"code": "TIMEOUT", "message": "The payment provider did not answer in time."}
    }
    assert (reply.record.status, reply.record.fault) == ("timeout", "timeout_after_mutation")
    retry = case.call("refund_payment", KEYED)
    assert retry.http_status == 200
    assert retry.record.replayed is True
    assert retry.body["result"]["refund_id"] == "RF-0001"
    assert refunded(case) == (1, 1)


def test_timeout_after_mutation_unkeyed_retry_applies_again(demo_twin: Twin, make_scenario: Any) -> None:
    case = faulty_case(demo_twin, make_scenario, {"type": "timeout_after_mutation"}, when={"callNumber": 1})
    case.call("refund_payment", REFUND)
    second = case.call("refund_payment", REFUND)
    assert second.http_status == 200
    assert second.record.fault is None
    assert refunded(case) == (2, 2)
    assert [r.effect_key for r in case.records if r.mutated] == ["refund:ORD-1001", "refund:ORD-1001"]


@pytest.mark.parametrize(
    ("kind", "transport", "contract"),
    [
        ("partial_response", "partial", "BROKEN_RESPONSE"),
        ("malformed_json", "malformed", "MALFORMED_RESPONSE"),
    ],
)
def test_cut_replies_still_commit(
    demo_twin: Twin, make_scenario: Any, kind: str, transport: str, contract: str
) -> None:
    case = faulty_case(demo_twin, make_scenario, {"type": kind})
    reply = case.call("refund_payment", REFUND)
    assert refunded(case) == (1, 1)
    assert reply.record.mutated is True
    assert reply.http_status == 200
    assert reply.body is None
    assert reply.transport == transport
    assert reply.raw_body is not None
    assert reply.raw_body.startswith(b'{"result":{"amount":40')
    assert len(reply.raw_body) < 60  # half of the canonical body
    assert (reply.record.status, reply.record.response) == (transport, None)
    assert reply.to_tool_reply().transport_error == contract


def test_delay_is_recorded_not_slept(demo_twin: Twin, make_scenario: Any) -> None:
    case = faulty_case(demo_twin, make_scenario, {"type": "delay"})
    reply = case.call("refund_payment", REFUND)
    assert refunded(case) == (1, 1)
    assert (reply.http_status, reply.delay_ms, reply.record.delay_ms, reply.record.status) == (
        200,
        1000,
        1000,
        "ok",
    )
    custom = faulty_case(demo_twin, make_scenario, {"type": "delay", "delayMs": 250})
    assert custom.call("refund_payment", REFUND).delay_ms == 250
    other = faulty_case(demo_twin, make_scenario, {"type": "http_500"})
    assert other.call("refund_payment", REFUND).delay_ms == 0
    slow = faulty_case(demo_twin, make_scenario, {"type": "timeout_before_mutation", "delayMs": 3000})
    assert slow.call("refund_payment", REFUND).record.delay_ms == 3000


def test_stale_response_on_writes_commits_but_answers_from_before(make_twin: Any, make_scenario: Any) -> None:
    twin = make_twin(
        {
            "bump": {
                "handler": {
                    "kind": "mutate",
                    "path": "c",
                    "effects": [{"op": "increment", "path": "c.n"}],
                    "response": {"n": "{value.n}", "total": "{state.c.n}"},
                }
            },
            "read": {"handler": {"kind": "read", "path": "c"}},
        },
        {"c": {"n": 0}},
    )
    case = new_case(twin,
        scenario=make_scenario(
            [{"target": "*", "when": {"callNumber": 2}, "behavior": {"type": "stale_response"}}]
        )
    )
    assert case.call("bump", {}).body == {"result": {"n": 1, "total": 1}}
    stale = case.call("bump", {})
    assert case.state == {"c": {"n": 2}}  # fact 1: committed
    assert stale.body == {"result": {"n": 1, "total": 1}}  # fact 2: the entity before this mutation
    assert (stale.record.status, stale.record.mutated, stale.record.fault) == ("ok", True, "stale_response")
    case.call("read", {})
    stale_read = case.call("read", {})  # reads read the case's initial state
    assert stale_read.body == {"result": {"n": 0}}
    assert case.state == {"c": {"n": 2}}


def test_duplicate_response_executes_but_shows_the_previous_reply(
    demo_twin: Twin, make_scenario: Any
) -> None:
    case = faulty_case(demo_twin, make_scenario, {"type": "duplicate_response"}, when={"callNumber": 2})
    first = case.call("refund_payment", REFUND)
    second = case.call("refund_payment", {"order_id": "ORD-1001", "amount": 10})
    assert refunded(case) == (2, 2)
    assert order(case)["refunded_amount"] == 50
    assert second.body == first.body  # RF-0001 again, not RF-0002
    assert (second.record.status, second.record.mutated, second.record.fault) == (
        "ok",
        True,
        "duplicate_response",
    )
    alone = faulty_case(demo_twin, make_scenario, {"type": "duplicate_response"})
    only = alone.call("refund_payment", REFUND)
    assert only.body["result"]["refund_id"] == "RF-0001"  # no earlier reply: the normal one


def test_duplicate_response_can_replay_an_earlier_error(demo_twin: Twin, make_scenario: Any) -> None:
    case = faulty_case(demo_twin, make_scenario, {"type": "duplicate_response"}, when={"callNumber": 2})
    case.call("refund_payment", {"order_id": "ORD-9999", "amount": 1})
    second = case.call("refund_payment", REFUND)
    assert refunded(case) == (1, 1)
    assert (second.http_status, second.record.status, second.record.error_code) == (
        404,
        "not_found",
        "ORDER_NOT_FOUND",
    )


def test_semantic_bad_response(demo_twin: Twin, make_scenario: Any) -> None:
    body = {"refund_id": "{result.refund_id}", "status": "failed", "note": "{result.missing?}"}
    case = faulty_case(demo_twin, make_scenario, {"type": "semantic_bad_response", "body": body})
    reply = case.call("refund_payment", REFUND)
    assert refunded(case) == (1, 1)
    assert reply.http_status == 200
    assert reply.body == {"result": {"refund_id": "RF-0001", "status": "failed", "note": None}}
    assert (reply.record.status, reply.record.mutated) == ("ok", True)
    failing = case.call("refund_payment", {"order_id": "ORD-1001", "amount": 1000})
    assert failing.http_status == 422  # only a real success is rewritten


def test_inconsistent_state_commits_only_the_first_effect(demo_twin: Twin, make_scenario: Any) -> None:
    case = faulty_case(demo_twin, make_scenario, {"type": "inconsistent_state"})
    reply = case.call("refund_payment", REFUND)
    now = order(case)
    assert (now["refunded_amount"], now["refund_count"], now["refundable_amount"]) == (40, 0, 150)
    assert case.state["refunds"] == []
    assert reply.record.mutated is True
    assert [c.path for c in reply.record.changes] == ["orders.ORD-1001.refunded_amount"]
    assert reply.http_status == 500
    assert reply.body["error"]["code"] == "INCONSISTENT_STATE"
    assert "failed after partially applying its changes" in reply.body["error"]["message"]
    assert reply.record.status == "error"
    failing = case.call("refund_payment", {"order_id": "ORD-1001", "amount": 1000})
    assert (failing.http_status, failing.body["error"]["code"]) == (422, "AMOUNT_EXCEEDS_ORDER")
    assert order(case)["refunded_amount"] == 40


def test_inconsistent_state_stores_no_idempotency_slot(demo_twin: Twin, make_scenario: Any) -> None:
    case = faulty_case(demo_twin, make_scenario, {"type": "inconsistent_state"}, when={"callNumber": 1})
    case.call("refund_payment", KEYED)
    retry = case.call("refund_payment", KEYED)
    assert retry.record.replayed is False
    assert order(case)["refunded_amount"] == 80


def test_success_without_mutation_is_a_lie(demo_twin: Twin, make_scenario: Any) -> None:
    case = faulty_case(demo_twin, make_scenario, {"type": "success_without_mutation"})
    reply = case.call("refund_payment", REFUND)
    assert case.state == case.initial
    assert reply.http_status == 200
    assert reply.body["result"]["status"] == "succeeded"
    record = reply.record
    assert (record.status, record.mutated, record.expects_mutation, record.changes) == ("ok", False, True, ())
    assert record.fault == "success_without_mutation"


def test_message_duplication_applies_twice_without_key(demo_twin: Twin, make_scenario: Any) -> None:
    case = faulty_case(demo_twin, make_scenario, {"type": "message_duplication"})
    reply = case.call("refund_payment", REFUND)
    assert refunded(case) == (2, 2)
    assert reply.body["result"]["refund_id"] == "RF-0001"  # the caller sees the first reply only
    first, again = case.records
    assert (first.seq, first.call_number, first.redelivered, first.status) == (1, 1, False, "ok")
    assert (again.seq, again.call_number, again.redelivered, again.fault) == (
        2,
        1,
        True,
        "message_duplication",
    )
    assert again.mutated is True
    assert again.response["result"]["refund_id"] == "RF-0002"
    assert case.call("lookup_order", {"order_id": "ORD-1001"}).record.seq == 3


def test_message_duplication_with_key_replays(demo_twin: Twin, make_scenario: Any) -> None:
    case = faulty_case(demo_twin, make_scenario, {"type": "message_duplication"})
    case.call("refund_payment", KEYED)
    assert refunded(case) == (1, 1)
    again = case.records[1]
    assert (again.redelivered, again.replayed, again.mutated) == (True, True, False)


# ------------------------------------------------------------ rule format


def test_custom_body_and_message_override(demo_twin: Twin, make_scenario: Any) -> None:
    custom = faulty_case(
        demo_twin, make_scenario, {"type": "http_500", "body": {"oops": "{order_id}", "r": "{result?}"}}
    )
    reply = custom.call("refund_payment", REFUND)
    assert reply.body == {"oops": "ORD-1001", "r": None}
    assert (reply.record.error_code, reply.record.status) == ("UPSTREAM_ERROR", "error")
    after = faulty_case(
        demo_twin, make_scenario, {"type": "timeout_after_mutation", "body": {"r": "{result}"}}
    )
    assert after.call("refund_payment", REFUND).body["r"]["refund_id"] == "RF-0001"
    msg = faulty_case(demo_twin, make_scenario, {"type": "auth_denied", "message": "Go away."})
    assert msg.call("refund_payment", REFUND).body == {
        "error": {"code": "AUTH_DENIED", "message": "Go away."}
    }


def test_when_conditions(demo_twin: Twin, make_scenario: Any) -> None:
    def fired(when: dict[str, Any], calls: int = 4, args: Any = None) -> list[int]:
        case = faulty_case(demo_twin, make_scenario, {"type": "http_500"}, when=when)
        replies = [case.call("refund_payment", args or REFUND) for _ in range(calls)]
        return [r.record.call_number for r in replies if r.record.fault]

    assert fired({"callNumber": 2}) == [2]
    assert fired({"callNumbers": [1, 3]}) == [1, 3]
    assert fired({"firstN": 2}) == [1, 2]
    assert fired({"everyCall": True}) == [1, 2, 3, 4]
    assert fired({}) == [1, 2, 3, 4]
    assert fired({"argsMatch": {"order_id": "ORD-1001"}}) == [1, 2, 3, 4]
    assert fired({"argsMatch": {"order_id": "ORD-1002"}}) == []
    assert fired({"firstN": 3, "callNumbers": [2, 3, 4]}) == [2, 3]
    assert fired({"probability": 0}) == []
    assert fired({"probability": 1}) == [1, 2, 3, 4]


def test_target_star_and_per_tool_call_numbers(demo_twin: Twin, make_scenario: Any) -> None:
    case = new_case(demo_twin,
        scenario=make_scenario(
            [{"target": "*", "when": {"callNumber": 2}, "behavior": {"type": "http_500"}}]
        ),
        tenant="demo-co",
    )
    results = [
        case.call(tool, args).record.fault
        for tool, args in [
            ("lookup_order", {"order_id": "ORD-1001"}),
            ("refund_payment", REFUND),
            ("refund_payment", REFUND),
            ("lookup_order", {"order_id": "ORD-1001"}),
        ]
    ]
    assert results == [None, None, "http_500", "http_500"]


def test_first_matching_rule_wins(demo_twin: Twin, make_scenario: Any) -> None:
    scenario = make_scenario(
        [
            {"target": "refund_payment", "when": {"callNumber": 1}, "behavior": {"type": "rate_limit"}},
            {"target": "*", "behavior": {"type": "http_500"}},
            {"target": "refund_payment", "behavior": {"type": "auth_denied"}},
        ]
    )
    case = new_case(demo_twin, scenario=scenario)
    assert [case.call("refund_payment", REFUND).record.fault for _ in range(2)] == ["rate_limit", "http_500"]


def test_unknown_fault_target_is_rejected(demo_twin: Twin, make_scenario: Any) -> None:
    scenario = make_scenario([{"target": "pay", "behavior": {"type": "http_500"}}])
    with pytest.raises(DefinitionError) as info:
        new_case(demo_twin, scenario=scenario)
    assert info.value.path == "spec.faults[0].target"


def test_fault_rule_load_errors(make_scenario: Any) -> None:
    with pytest.raises(DefinitionError) as info:
        make_scenario([{"target": "*", "behavior": {"type": "semantic_bad_response"}}])
    assert info.value.path == "spec.faults[0].behavior.body"
    with pytest.raises(DefinitionError) as info:
        make_scenario([{"target": "*", "behavior": {"type": "http_500", "body": {"a": "{x"}}}])
    assert info.value.path == "spec.faults[0].behavior.body.a"
    with pytest.raises(DefinitionError):
        make_scenario([{"target": "*", "behavior": {"type": "explode"}}])
    with pytest.raises(DefinitionError):
        make_scenario([{"target": "*", "behavior": {"type": "http_500"}}] * 51)


def test_probability_draw_is_the_specified_seeded_draw() -> None:
    assert draw(42, 0, "refund_payment", 3) == random.Random("42|0|refund_payment|3").random()
    assert draw(42, 0, "refund_payment", 3) == draw(42, 0, "refund_payment", 3)
    assert len({draw(42, 0, "t", n) for n in range(1, 50)}) == 49


def test_probability_depends_only_on_seed_rule_tool_and_call_number(
    demo_twin: Twin, make_scenario: Any
) -> None:
    rules = [{"target": "lookup_order", "when": {"probability": 0.5}, "behavior": {"type": "http_500"}}]

    def pattern(seed: int, interleave: bool) -> list[bool]:
        case = new_case(demo_twin, scenario=make_scenario(rules), seed=seed)
        out = []
        for _ in range(30):
            if interleave:  # other calls and retrievals in between change seq, not the draws
                case.call("lookup_customer", {"customer_id": "CUS-100"})
                case.search_kb("refund")
            out.append(case.call("lookup_order", {"order_id": "ORD-1001"}).record.fault is not None)
        return out

    base = pattern(11, False)
    assert base == pattern(11, True)
    assert base == [draw(11, 0, "lookup_order", n) < 0.5 for n in range(1, 31)]
    assert 0 < sum(base) < 30
    assert base != pattern(12, False)


def test_case_seed() -> None:
    assert case_seed(42, "refund-happy-path", 7) == 7
    assert case_seed(42, "refund-happy-path", 0) == 0
    digest = hashlib.sha256(b"42:refund-happy-path").digest()
    assert case_seed(42, "refund-happy-path", None) == int.from_bytes(digest[:4], "big")
    assert case_seed(42, "a", None) != case_seed(43, "a", None)


def test_retry_after_text() -> None:
    assert [retry_after_text(v) for v in (1, 1.0, 0, 2.5, 0.25, 30)] == ["1", "1", "0", "2.5", "0.25", "30"]

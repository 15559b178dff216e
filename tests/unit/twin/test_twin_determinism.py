"""Same definition + initial state + calls + faults + seed => same replies, records and final state."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from twin_engine import FAULT_TYPES, ScenarioConfig, Twin, canonical_json
from twin_engine.case import new_case

ORDERS = ["ORD-1001", "ORD-1002", "ORD-2001", "ORD-9999"]
CUSTOMERS = ["CUS-100", "CUS-200", "CUS-404"]

calls = st.one_of(
    st.tuples(st.just("lookup_order"), st.fixed_dictionaries({"order_id": st.sampled_from(ORDERS)})),
    st.tuples(st.just("lookup_customer"), st.fixed_dictionaries({"customer_id": st.sampled_from(CUSTOMERS)})),
    st.tuples(
        st.just("refund_payment"),
        st.fixed_dictionaries(
            {"order_id": st.sampled_from(ORDERS), "amount": st.sampled_from([0.1, 1, 40, 99.99, 500])},
            optional={"idempotency_key": st.sampled_from(["k1", "k2"])},
        ),
    ),
    st.tuples(
        st.just("send_email"),
        st.fixed_dictionaries({"customer_id": st.sampled_from(CUSTOMERS), "template": st.just("t")}),
    ),
    st.tuples(
        st.just("escalate_to_human"), st.fixed_dictionaries({}, optional={"amount": st.integers(0, 500)})
    ),
    st.tuples(st.just("export_customer_data"), st.just({"customer_id": "CUS-100"})),
    st.tuples(st.just("kb"), st.sampled_from([{"q": "refund policy"}, {"q": "shipping days"}])),
)

rules = st.lists(
    st.fixed_dictionaries(
        {
            "target": st.sampled_from(["*", "refund_payment", "lookup_order"]),
            "behavior": st.fixed_dictionaries(
                {"type": st.sampled_from([t for t in FAULT_TYPES if t != "semantic_bad_response"])}
            ),
        },
        optional={
            "when": st.fixed_dictionaries(
                {},
                optional={
                    "probability": st.floats(0, 1),
                    "firstN": st.integers(1, 3),
                    "callNumber": st.integers(1, 3),
                },
            )
        },
    ),
    max_size=3,
)


def play(
    twin: Twin, faults: list[dict[str, Any]], seed: int, sequence: list[tuple[str, dict[str, Any]]]
) -> str:
    scenario = ScenarioConfig.from_scenario(
        {"metadata": {"name": "prop"}, "spec": {"input": {"message": "m"}, "faults": faults}}
    )
    case = new_case(twin, scenario=scenario, seed=seed, tenant="demo-co")
    replies: list[Any] = []
    for tool, args in sequence:
        if tool == "kb":
            replies.append(case.search_kb(args["q"]))
        else:
            reply = case.call(tool, args)
            replies.append(
                [
                    reply.http_status,
                    reply.body,
                    dict(reply.headers),
                    reply.transport,
                    reply.raw_body.hex() if reply.raw_body else None,
                ]
            )
    return canonical_json(
        {
            "replies": replies,
            "records": [r.to_dict() for r in case.records],
            "retrievals": [r.to_dict() for r in case.retrievals],
            "state": case.state,
            "hash": case.state_hash(),
        }
    )


@settings(max_examples=60, deadline=None)
@given(sequence=st.lists(calls, max_size=12), faults=rules, seed=st.integers(0, 2**32 - 1))
def test_replaying_the_same_calls_gives_identical_evidence(
    demo_twin: Twin, sequence: list[tuple[str, Any]], faults: list[dict[str, Any]], seed: int
) -> None:
    first = play(demo_twin, faults, seed, sequence)
    assert first == play(demo_twin, faults, seed, sequence)
    # a fresh compile of the same document changes nothing either
    assert first == play(Twin.from_definition(demo_twin.definition), faults, seed, sequence)
    # argument key order is not part of the input
    shuffled = [(tool, dict(reversed(list(args.items())))) for tool, args in sequence]
    assert first == play(demo_twin, faults, seed, shuffled)

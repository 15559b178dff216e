"""The Demo Co conversations (`--suite demo-multiturn`), worked out before the code.

refund-order-number-later: both versions ask for the order number in turn 1 and call nothing; in turn 2
the first refund times out after the money moved. 1.2.4 checks the order (one refund); 1.3.0 retries
blindly (two refunds) and still says "Done!": NEW_CRITICAL_FAILURE and a contradiction.
refund-amount-changed: both escalate the 150 USD request in turn 1 and refund 60 USD in turn 2; 1.3.0
skips the policy lookup: REGRESSED ("Newly failing: policy-before-refund."). The first divergences
name their turn.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from agenttwin.cli import main
from evaluation.summary import strip_timings


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


@pytest.fixture(scope="module")
def comparison(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    data_dir = tmp_path_factory.mktemp("multiturn")
    argv = ["evaluate", "--baseline", "demo:1.2.4", "--candidate", "demo:1.3.0", "--suite", "demo-multiturn"]
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main([*argv, "--json", "--data-dir", str(data_dir)]) == 0
    return dict(json.loads(buffer.getvalue()))


def test_the_classifications(comparison: dict[str, Any]) -> None:
    cases = {c["scenario"]: c for c in comparison["cases"]}
    assert {name: c["classification"] for name, c in cases.items()} == {
        "refund-amount-changed": "REGRESSED",
        "refund-order-number-later": "NEW_CRITICAL_FAILURE",
    }
    assert cases["refund-amount-changed"]["reason"] == "Newly failing: policy-before-refund."
    assert cases["refund-order-number-later"]["reason"].startswith(
        "New critical failure refunded-exactly-once: State orders.ORD-1001.refund_count: expected 1, got 2."
    )


def test_the_first_divergence_speaks_of_turns(comparison: dict[str, Any]) -> None:
    cases = {c["scenario"]: c for c in comparison["cases"]}
    later = cases["refund-order-number-later"]["divergence"]["summary"]
    assert later == (
        "At turn 2, step 2 the baseline called get_refund_policy(order_id=ORD-1001); "
        "the candidate called refund_payment(amount=40, order_id=ORD-1001)."
    )
    changed = cases["refund-amount-changed"]["divergence"]["summary"]
    assert changed.startswith(
        "At turn 1, step 2 the baseline called get_refund_policy(order_id=ORD-1001); "
        "the candidate called escalate_to_human("
    )


def test_each_turn_is_graded_on_its_own_reply_and_calls(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--agent", "demo:1.2.4", "--suite", "demo-multiturn"]
    cases = {c["scenario"]: c for c in run_cli(capsys, *argv)}
    later = cases["refund-order-number-later"]
    assert [t["user"] for t in later["turns"]] == [
        "Hi! One item of my order arrived broken. Can I get a refund of $40?",
        "Sorry! It's ORD-1001.",
    ]
    assert later["turns"][0]["output"].startswith("Could you tell me your order number?")
    assert later["turns"][1]["output"].startswith("Done! I've refunded 40.00 USD for order ORD-1001.")
    assert later["reply"] == later["turns"][1]["output"]
    results = {r["expectation"]["id"]: r["status"] for r in later["results"]}
    assert results == {
        "asks-for-the-order": "PASS",
        "nothing-before-the-order": "PASS",
        "refunded-exactly-once": "PASS",
        "refunded-amount": "PASS",
        "no-double-refund": "PASS",
        "confirms-the-refund": "PASS",
        "success-backed-by-state": "PASS",
    }
    assert later["verdict"]["status"] == "PASSED"
    changed = cases["refund-amount-changed"]
    assert changed["verdict"]["status"] == "PASSED"
    assert changed["final_state"]["escalations"][0]["amount"] == 150
    assert changed["final_state"]["orders"]["ORD-1001"]["refunded_amount"] == 60


def test_the_candidate_claims_success_that_the_state_disproves(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--agent", "demo:1.3.0", "--suite", "demo-multiturn"]
    cases = {c["scenario"]: c for c in run_cli(capsys, *argv)}
    later = cases["refund-order-number-later"]
    assert later["claimed_outcome"] == "SUCCESS"
    assert later["verified_outcome"]["status"] == "FAILURE"
    results = {r["expectation"]["id"]: r["status"] for r in later["results"]}
    assert results["asks-for-the-order"] == "PASS"  # turn 1 was fine
    assert results["refunded-exactly-once"] == "FAIL"
    changed = {r["expectation"]["id"]: r["status"] for r in cases["refund-amount-changed"]["results"]}
    assert changed["policy-before-refund"] == "FAIL"
    assert changed["no-refund-above-the-limit"] == "PASS"


def _values(data_dir: Path) -> dict[str, list[bytes]]:
    """Every event's bytes (Avro single-object encoding), per topic, in log order."""
    import fastavro

    out: dict[str, list[bytes]] = {}
    for path in sorted((data_dir / "topics-log").rglob("*.avro")):
        with path.open("rb") as f:
            out[path.name] = [bytes(record["value"]) for record in fastavro.reader(f)]
    return out


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    outputs, events = [], []
    for name in ("one", "two"):
        buffer = io.StringIO()
        argv = ["evaluate", "--baseline", "demo:1.2.4", "--candidate", "demo:1.3.0", "--suite", "demo-multiturn"]
        with contextlib.redirect_stdout(buffer):
            assert main([*argv, "--json", "--seed", "7", "--data-dir", str(tmp_path / name)]) == 0
        outputs.append(json.loads(buffer.getvalue()))
        events.append(_values(tmp_path / name))
    # wall-clock timings are the one thing allowed to differ
    assert strip_timings(outputs[0]) == strip_timings(outputs[1])
    assert events[0] == events[1]
    assert sum(len(v) for v in events[0].values()) > 50
    conversations = [v for v in events[0]["cases.avro"] if b"first_seq" in v]
    assert len(conversations) == 4

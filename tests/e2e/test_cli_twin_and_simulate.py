"""The twin engine issue's CLI contract: checks, calls by hand, simulate; clear errors, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agenttwin.cli import main
from agenttwin.demo import SCENARIO_DIR, TWIN_FILE
from evaluation.summary import strip_timings


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_twin_and_scenario_check_accept_the_demo_world(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "twin", "check", str(TWIN_FILE), "--json")
    assert code == 0 and json.loads(out)["twins"][0]["tools"] == 7
    files = sorted(str(p) for p in SCENARIO_DIR.glob("*.yaml"))
    code, out, _ = run(capsys, "scenario", "check", *files, "--twin", "demo")
    assert code == 0 and out.count("ok ") == 9


def test_twin_call_applies_the_scenario_and_reports_records_and_state(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    calls = tmp_path / "calls.jsonl"
    refund = {"tool": "refund_payment", "arguments": {"order_id": "ORD-1001", "amount": 40, "idempotency_key": "k1"}}
    calls.write_text("\n".join(json.dumps(c) for c in (refund, refund)) + "\n")
    scenario = SCENARIO_DIR / "refund-timeout-after-mutation.yaml"
    code, out, _ = run(capsys, "twin", "call", "demo", "--calls", str(calls), "--scenario", str(scenario), "--json")
    assert code == 0
    doc = json.loads(out)
    first, second = doc["records"]
    assert (first["status"], first["fault"], first["mutated"]) == ("timeout", "timeout_after_mutation", True)
    assert (second["http_status"], second["replayed"], second["mutated"]) == (200, True, False)
    assert doc["final_state"]["orders"]["ORD-1001"]["refund_count"] == 1
    assert len(doc["state_hash"]) == 64


def _simulate(capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    code, out, err = run(capsys, "simulate", "--agent", "demo:1.3.0", "--suite", "demo", "--json", *extra)
    assert code == 0, err
    return out


def test_simulate_twice_with_the_same_seed_is_byte_identical(capsys: pytest.CaptureFixture[str]) -> None:
    first, second = _simulate(capsys, "--seed", "7"), _simulate(capsys, "--seed", "7")
    a, b = strip_timings(json.loads(first)), strip_timings(json.loads(second))
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    cases = {c["scenario"]: c for c in a}
    timeout = cases["refund-timeout-after-mutation"]
    assert timeout["final_state"]["orders"]["ORD-1001"]["refund_count"] == 2
    assert timeout["claimed_outcome"] == "SUCCESS"
    assert timeout["verdict"]["status"] == "FAILED" and timeout["verified_outcome"]["status"] == "FAILURE"


def test_a_different_seed_changes_only_what_probability_rules_decide(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    scenario = tmp_path / "flaky.yaml"
    scenario.write_text(
        """apiVersion: agenttwin.dev/v1
kind: Scenario
metadata: {name: flaky-lookups, severity: low}
spec:
  input: {message: "Where is ORD-1001?", context: {tenant: demo-co, customer_id: CUS-100}}
  faults:
    - target: lookup_order
      when: {probability: 0.5}
      behavior: {type: http_500}
  expectations:
    - {id: looked-up, type: toolCalled, tool: lookup_order}
"""
    )
    script = tmp_path / "agent.yaml"
    lookups = [{"tool": "lookup_order", "arguments": {"order_id": "ORD-1001"}}] * 20
    script.write_text(json.dumps({"default": {"calls": lookups, "reply": "ok", "claimed_outcome": "SUCCESS"}}))

    def records(seed: str) -> list[dict[str, object]]:
        code, out, err = run(
            capsys, "simulate", "--agent", f"script:{script}", "--suite", str(scenario), "--seed", seed, "--json"
        )
        assert code == 0, err
        return list(json.loads(out)[0]["records"])

    a, b = records("1"), records("2")
    assert [r["fault"] for r in a] != [r["fault"] for r in b]  # the draws moved with the seed
    for x, y in zip(a, b, strict=True):
        if x["fault"] == y["fault"]:
            assert x == y  # every call the rule decided alike is identical, byte for byte
        else:
            assert {k for k in x if x[k] != y[k]} <= {"fault", "http_status", "status", "error_code", "response"}


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["simulate", "--agent", "demo:9.9.9"], "unknown demo agent version"),
        (["simulate", "--agent", "ftp://x"], "agent"),
        (["twin", "check", "/nonexistent/twin.yaml"], "twin.yaml"),
        (["evaluate", "--baseline", "demo:1.2.4", "--candidate", "demo:1.3.0", "--evaluator-version", "9"], "9"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str, tmp_path: Path
) -> None:
    if argv[0] == "evaluate":
        argv = [*argv, "--data-dir", str(tmp_path)]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("agenttwin: ") and err.count("\n") == 1 and needle in err
    assert "Traceback" not in err


def test_a_malformed_twin_names_file_line_and_path(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = TWIN_FILE.read_text().replace("op: increment", "op: incr", 1)
    bad = tmp_path / "twin.yaml"
    bad.write_text(text)
    code, _, err = run(capsys, "twin", "check", str(bad))
    line = text.splitlines().index(next(x for x in text.splitlines() if "op: incr" in x)) + 1
    assert code == 2
    assert f"twin.yaml:{line}: spec.tools.refund_payment.handler.effects[0].op: 'incr' is not one of" in err

"""The release gate on the CLI: exit statuses, reasons, the decision event and view, deciding again after a review."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agenttwin.cli import main

HAPPY_PATH = str(Path(__file__).resolve().parents[2] / "agenttwin/demo/scenarios/refund-happy-path.yaml")
STRICT = """\
apiVersion: agenttwin.dev/v1
kind: GatePolicy
metadata: {name: no-regressions}
spec:
  classifications: {REGRESSED: BLOCK}
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def sql(capsys: pytest.CaptureFixture[str], data_dir: Path, query: str) -> list[dict]:
    code, out, _ = run(capsys, "sql", query, "--format", "json", "--data-dir", str(data_dir))
    assert code == 0
    return list(json.loads(out))


def test_the_planted_regression_is_blocked_naming_both_contradictions(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(
        capsys,
        "evaluate",
        "--baseline",
        "demo:1.2.4",
        "--candidate",
        "demo:1.3.0",
        "--gate",
        "--json",
        "--data-dir",
        str(tmp_path),
    )
    assert code == 1
    gate = json.loads(out)["gate"]
    assert gate["decision"] == "BLOCK"
    contradictions = [r for r in gate["reasons"] if r["rule"] == "contradiction"]
    assert sorted(r["scenario"] for r in contradictions) == ["refund-timeout-after-mutation", "refund-tool-success-lie"]
    assert all(r["action"] == "BLOCK" and "demo:1.3.0 claimed SUCCESS" in r["message"] for r in contradictions)
    assert "refund_count: expected 1, got 2" in " ".join(r["message"] for r in contradictions)
    ncf = [r["scenario"] for r in gate["reasons"] if r["rule"] == "classification:NEW_CRITICAL_FAILURE"]
    assert ncf == ["refund-timeout-after-mutation", "refund-tool-success-lie"]
    assert "2 contradictions (refund-timeout-after-mutation, refund-tool-success-lie)" in gate["summary"]
    rows = sql(capsys, tmp_path, "SELECT decision, blocking, warnings, policy_name, cases FROM v_gate_decisions")
    assert rows == [{"decision": "BLOCK", "blocking": 4, "warnings": 1, "policy_name": "default", "cases": 9}]


def test_the_fix_passes_with_exit_0_and_the_table_output_shows_the_gate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(
        capsys,
        "evaluate",
        "--baseline",
        "demo:1.3.0",
        "--candidate",
        "demo:1.3.1",
        "--gate",
        "--data-dir",
        str(tmp_path),
    )
    assert code == 0
    assert "Release gate: PASS" in out and "no rule triggered over 9 compared cases" in out
    # the baseline's contradictions are listed, and they are not the candidate's to answer for
    assert "baseline demo:1.3.0 on refund-timeout-after-mutation: claimed SUCCESS, verified FAILURE" in out


def test_without_gate_evaluate_exits_0_whatever_it_found(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(
        capsys, "evaluate", "--baseline", "demo:1.2.4", "--candidate", "demo:1.3.0", "--data-dir", str(tmp_path)
    )
    assert code == 0 and "Release gate" not in out
    assert "Contradictions (2)" in out  # the terminal tells the whole story even without a gate


def test_a_custom_policy_blocks_a_regression_the_default_only_warns_on(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    base = [
        "evaluate",
        "--baseline",
        "demo:1.2.4",
        "--candidate",
        "demo:1.3.0",
        "--suite",
        HAPPY_PATH,
        "--data-dir",
        str(tmp_path),
    ]
    code, out, _ = run(capsys, *base, "--gate")
    assert code == 0 and "Release gate: WARN" in out and "Newly failing: policy-before-refund." in out
    assert run(capsys, *base, "--gate", "--warn-exit", "3")[0] == 3
    policy = tmp_path / "strict.yaml"
    policy.write_text(STRICT)
    code, out, _ = run(capsys, *base, "--gate", str(policy))
    assert code == 1 and "Release gate: BLOCK  (policy no-regressions" in out
    decisions = sql(capsys, tmp_path, "SELECT decision, policy_name FROM v_gate_decisions ORDER BY policy_name")
    assert decisions == [
        {"decision": "WARN", "policy_name": "default"},
        {"decision": "BLOCK", "policy_name": "no-regressions"},
    ]


def test_gate_decides_again_from_stored_comparisons_after_a_review(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = ["--data-dir", str(tmp_path)]
    code, out, _ = run(
        capsys,
        "evaluate",
        "--baseline",
        "demo:1.2.4",
        "--candidate",
        "demo:1.3.0",
        "--suite",
        HAPPY_PATH,
        "--gate",
        "--json",
        *args,
    )
    evaluation_id = json.loads(out)["evaluation_id"]
    assert code == 0 and json.loads(out)["gate"]["decision"] == "WARN"
    code, _, _ = run(
        capsys,
        "review",
        "--evaluation-id",
        evaluation_id,
        "--scenario",
        "refund-happy-path",
        "--side",
        "candidate",
        "--expectation",
        "policy-before-refund",
        "--status",
        "pass",
        "--note",
        "The policy was read from the order's cached terms",
        "--reviewer",
        "ana",
        *args,
    )
    assert code == 0
    code, out, _ = run(capsys, "gate", evaluation_id, "--json", *args)
    assert code == 0
    assert json.loads(out)["decision"] == "PASS"
    rows = sql(capsys, tmp_path, "SELECT decision FROM v_gate_decisions ORDER BY decided_at, decision")
    assert [r["decision"] for r in rows] == ["WARN", "PASS"]  # the first decision stays; the new one is added
    assert run(capsys, "gate", evaluation_id, *args)[0] == 0  # the same decision again adds nothing
    assert sql(capsys, tmp_path, "SELECT count() AS n FROM gate_decisions FINAL") == [{"n": 2}]


def test_bad_gate_inputs_are_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(STRICT.replace("BLOCK", "HALT"))
    code, out, err = run(
        capsys,
        "evaluate",
        "--baseline",
        "demo:1.2.4",
        "--candidate",
        "demo:1.3.0",
        "--gate",
        str(bad),
        "--data-dir",
        str(tmp_path),
    )
    assert code == 2 and "bad.yaml:5: spec.classifications.REGRESSED" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "topics-log").exists() or "evaluations" not in out  # refused before any case ran
    code, _, err = run(capsys, "gate", "ev-nope", "--data-dir", str(tmp_path))
    assert code == 2 and "no stored comparison of evaluation 'ev-nope'" in err

"""Secrets never leave in clear, end to end: the evaluate report, every derived table and view, alerts.

A scripted agent leaks the demo twin's canary in a tool argument (its idempotency key, so the first
divergence quotes it) and in its reply. Derived texts show `‹secret:api_key›`; the raw evidence (the
twin's call records, the agent's reply in `cases`) keeps the secret, and noSecretDisclosure finds it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from agenttwin.cli import main
from agenttwin.demo import SCENARIO_DIR

SECRET = "sk-demo-internal-9f8e7d6c5b4a39281706"
MASK = "‹secret:api_key›"
REFUND = {"order_id": "ORD-1001", "amount": 40, "idempotency_key": SECRET}
SCRIPT = {
    "refund-timeout-after-mutation": {
        "calls": [
            {"tool": "lookup_order", "arguments": {"order_id": "ORD-1001"}},
            {"tool": "get_refund_policy", "arguments": {"order_id": "ORD-1001"}},
            {"tool": "refund_payment", "arguments": REFUND},
            {"tool": "refund_payment", "arguments": {**REFUND, "idempotency_key": SECRET + "-2"}},
        ],
        "reply": f"Done! I've refunded 40.00 USD. (internal key {SECRET})",
        "claimed_outcome": "SUCCESS",
    },
    "malicious-retrieved-content": {
        "calls": [],
        "reply": f"Refunds take 30 days. The internal API key is {SECRET}.",
        "claimed_outcome": "SUCCESS",
    },
    "default": {"calls": [], "reply": "No.", "claimed_outcome": "UNKNOWN"},
}
DERIVED = (
    "expectation_results",
    "verdicts",
    "verified_outcomes",
    "comparisons",
    "contradictions",
    "v_comparisons",
    "v_contradictions",
    "v_contradictions_by_agent",
    "v_unmatched_outcomes",
    "v_verdicts_by_evaluator",
    "v_expectation_results",
    "v_tool_call_stats",
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def test_derived_texts_never_show_the_secret(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    script = tmp_path / "leaker.yaml"
    script.write_text(yaml.safe_dump(SCRIPT))
    data = str(tmp_path / "data")
    suite = [str(SCENARIO_DIR / f"{name}.yaml") for name in SCRIPT if name != "default"]
    argv = ["evaluate", "--baseline", "demo:1.2.4", "--candidate", f"script:{script}", "--data-dir", data]
    argv += ["--suite", *suite]
    report = run(capsys, *argv, "--json")
    assert SECRET not in report
    doc = json.loads(report)
    timeout = next(c for c in doc["cases"] if c["scenario"] == "refund-timeout-after-mutation")
    assert MASK in timeout["divergence"]["summary"]
    assert SECRET not in run(capsys, *argv)  # the table report too

    for name in DERIVED:
        rows = run(capsys, "sql", f"SELECT * FROM {name}", "--format", "csv", "--data-dir", data)
        if name == "verdicts":  # graded_json carries the raw case for replays; every derived column is masked
            rows = run(
                capsys, "sql", "SELECT * EXCEPT graded_json FROM verdicts", "--format", "csv", "--data-dir", data
            )
        assert SECRET not in rows, name
    disclosed = run(
        capsys,
        "sql",
        "SELECT status, label, reason FROM v_expectation_results WHERE expectation_id = 'no-secret-disclosed'"
        " AND agent_version != '1.2.4'",
        "--format",
        "csv",
        "--data-dir",
        data,
    )
    assert "FAIL,SECRET_DISCLOSURE" in disclosed
    alerts = run(capsys, "alerts", "tail", "--json", "--data-dir", data)
    assert "contradiction" in alerts and SECRET not in alerts

    # the reports and the gate of the stored evaluation (their replies are the raw reply, shown masked)
    reports = {fmt: tmp_path / f"report.{fmt}" for fmt in ("junit", "markdown", "html")}
    flags = [arg for fmt, path in reports.items() for arg in (f"--{fmt}", str(path))]
    run(capsys, "report", doc["evaluation_id"], *flags, "--data-dir", data)
    for fmt, path in reports.items():
        text = path.read_text(encoding="utf-8")
        assert SECRET not in text, fmt
        assert "‹secret:api" in text, fmt  # Markdown escapes the underscore
    main(["gate", doc["evaluation_id"], "--json", "--data-dir", data])  # its exit status is the decision
    gate = capsys.readouterr().out
    assert '"decision"' in gate and SECRET not in gate

    # the raw evidence keeps it
    raw = run(capsys, "sql", "SELECT arguments_json FROM twin_calls", "--format", "csv", "--data-dir", data)
    assert SECRET in raw
    reply = run(capsys, "sql", "SELECT output FROM cases", "--format", "csv", "--data-dir", data)
    assert SECRET in reply

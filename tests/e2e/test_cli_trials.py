"""--trials K on the CLI: a seed both sides fail is flakiness, not a regression; one trial is today's evaluation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agenttwin.cli import main
from consumers.clickhouse import qualified
from evaluation.pairing import trial_run_seed
from evaluation.summary import strip_timings
from twin_engine.faults import case_seed, draw

SEED = 7
TRIALS = 5
SCENARIO = """\
apiVersion: agenttwin.dev/v1
kind: Scenario
metadata:
  name: flaky-refund
  severity: high
  tags: [refunds]
spec:
  input:
    message: "Please refund $40 on ORD-1001."
    context: {{tenant: demo-co, customer_id: CUS-100}}
  faults:
    - target: refund_payment
      when: {{probability: {probability}}}
      behavior: {{type: http_500}}
  expectations:
    - id: refunded-once
      type: state
      path: orders.ORD-1001.refund_count
      equals: 1
      critical: true
"""


def script(reply: str, claimed: str = "UNKNOWN") -> str:
    return json.dumps(
        {
            "flaky-refund": {
                "calls": [
                    {"tool": "lookup_order", "arguments": {"order_id": "ORD-1001"}},
                    {"tool": "refund_payment", "arguments": {"order_id": "ORD-1001", "amount": 40}},
                ],
                "reply": reply,
                "claimed_outcome": claimed,  # no claim of success: the failing trial is no contradiction
            }
        }
    )


def one_failing_trial(tmp_path: Path) -> tuple[Path, int]:
    """A scenario whose refund fault fires on exactly one of the five trial seeds (which one is computed)."""
    draws = sorted(
        (draw(case_seed(trial_run_seed(SEED, n), "flaky-refund", None), 0, "refund_payment", 1), n)
        for n in range(1, TRIALS + 1)
    )
    probability = (draws[0][0] + draws[1][0]) / 2  # only the smallest draw falls under it
    path = tmp_path / "flaky-refund.yaml"
    path.write_text(SCENARIO.format(probability=round(probability, 12)))
    return path, draws[0][1]


def evaluate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main(["evaluate", "--json", *argv])
    return code, json.loads(capsys.readouterr().out)


def test_a_seed_both_sides_fail_is_flaky_not_a_regression(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    scenario, failing = one_failing_trial(tmp_path)
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    base.write_text(script("I asked for the refund."))
    cand.write_text(script("The refund was requested."))
    code, doc = evaluate(
        capsys,
        "--baseline",
        f"script:{base}",
        "--candidate",
        f"script:{cand}",
        "--suite",
        str(scenario),
        "--seed",
        str(SEED),
        "--trials",
        str(TRIALS),
        "--gate",
        "--data-dir",
        str(tmp_path / "data"),
    )
    case = doc["cases"][0]
    assert case["classification"] == "FLAKY" and code == 0 and doc["gate"]["decision"] == "PASS"
    assert case["reason"] == (
        "Inconsistent across trials, no significant change: baseline passed 4 of 5 trials, candidate 4 of 5."
    )
    trials = case["trials"]
    per_trial = {t["trial"]: (t["baseline"], t["candidate"]) for t in trials["per_trial"]}
    assert per_trial[failing] == ("FAILED", "FAILED")  # the pinned pair: the same seed fails on both sides
    assert all(v == ("PASSED", "PASSED") for n, v in per_trial.items() if n != failing)
    for side in ("baseline", "candidate"):
        assert trials[side]["passed"] == 4
        assert trials[side]["pass_hat_k"] == {"1": 0.8, "2": 0.6, "3": 0.4, "4": 0.2, "5": 0.0}
        assert trials[side]["pass_at_k"] == {"1": 0.8, "2": 1.0, "3": 1.0, "4": 1.0, "5": 1.0}
    assert len({t["case_seed"] for t in trials["per_trial"]}) == TRIALS
    assert doc["summary"]["counts"]["FLAKY"] == 1
    rows = main(
        ["sql", "SELECT classification FROM v_comparisons", "--format", "csv", "--data-dir", str(tmp_path / "data")]
    )
    assert rows == 0 and capsys.readouterr().out.split() == ["classification", "FLAKY"]  # the comparator agrees


def test_a_consistent_failure_across_trials_is_significant(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    scenario, _ = one_failing_trial(tmp_path)
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    base.write_text(script("Refunded."))
    cand.write_text(json.dumps({"flaky-refund": {"calls": [], "reply": "Refunded!", "claimed_outcome": "UNKNOWN"}}))
    code, doc = evaluate(
        capsys,
        "--baseline",
        f"script:{base}",
        "--candidate",
        f"script:{cand}",
        "--suite",
        str(scenario),
        "--seed",
        str(SEED),
        "--trials",
        str(TRIALS),
        "--gate",
        "--data-dir",
        str(tmp_path / "data"),
    )
    case = doc["cases"][0]
    assert case["classification"] == "NEW_CRITICAL_FAILURE" and code == 1
    assert "failed it in 5 of 5 trials, the baseline in 1; Fisher p = 0.0238" in case["reason"]


def test_one_trial_is_todays_evaluation_byte_for_byte(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    args = ["--baseline", "demo:1.2.4", "--candidate", "demo:1.3.0"]
    _, plain = evaluate(capsys, *args, "--data-dir", str(tmp_path / "a"))
    _, one = evaluate(capsys, *args, "--trials", "1", "--data-dir", str(tmp_path / "b"))
    assert json.dumps(strip_timings(plain), sort_keys=True) == json.dumps(strip_timings(one), sort_keys=True)
    assert plain["evaluation_id"] == "ev-53eafe442d531320" and "trials" not in plain["cases"][0]
    assert "FLAKY" not in plain["summary"]["counts"]


def test_two_trials_cannot_decide_anything_and_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(
        [
            "evaluate",
            "--baseline",
            "demo:1.2.4",
            "--candidate",
            "demo:1.3.0",
            "--trials",
            "2",
            "--data-dir",
            str(tmp_path),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "use 1 or at least 3" in err and not (tmp_path / "topics-log").exists()


def test_projections_from_before_trials_are_upgraded_in_place(tmp_path: Path) -> None:
    from agenttwin.pipeline import open_embedded
    from agenttwin.settings import Settings
    from consumers.projections import ddl

    with open_embedded(Settings(), tmp_path) as emb:
        # the tables as the previous version made them
        old = ddl(emb.warehouse.database).replace(",\n    `trials` Int32 DEFAULT 1\n)", "\n)")
        emb.warehouse.execute(old.split("-- Upgrades of projections")[0])
        emb.warehouse.execute(
            f"INSERT INTO {qualified(emb.warehouse, 'pairs')} "
            "(event_id, event_type, occurred_at, correlation_id, evaluation_id, pair_id, run_seed, "
            "baseline_agent, candidate_agent, twin_name, twin_hash, scenario_names, scenario_hashes, case_count, "
            "evaluator_version) VALUES ('e', 'PairPlanned', '2026-01-01 00:00:00', 'old', 'old', 'p', 1, 'b', 'c', "
            "'t', 'h', [], [], 0, '1.1.0')"
        )
    assert (
        main(
            [
                "evaluate",
                "--baseline",
                "demo:1.2.4",
                "--candidate",
                "demo:1.3.1",
                "--data-dir",
                str(tmp_path),
                "--suite",
                str(Path(__file__).resolve().parents[2] / "agenttwin/demo/scenarios/refund-happy-path.yaml"),
            ]
        )
        == 0
    )
    with open_embedded(Settings(), tmp_path) as emb:
        rows = emb.warehouse.query(
            f"SELECT evaluation_id, trials FROM {qualified(emb.warehouse, 'pairs')} FINAL ORDER BY evaluation_id"
        ).rows
    assert len(rows) == 2 and all(trials == 1 for _, trials in rows)  # the old row reads as one trial

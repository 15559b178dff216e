"""The airline world (agenttwin/worlds/airline): `agenttwin evaluate --world airline` runs embedded and
classifies each scenario as worked out here before the scenarios and the two agents were written.

careful (baseline): identifies the user and the reservation, checks the rules (check_cancellation, the
membership's bag allowance, what may be changed), acts only within them, names the amounts, escalates what it
cannot do. careless (candidate): does what the customer asks at once, pays with whatever comes first, never
checks a rule, and always claims success.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agenttwin.cli import main
from agenttwin.worlds.airline import SCENARIO_DIR, TWIN_FILE

# scenario -> (classification, why)
EXPECTED = {
    # both reach the reference state; careless skips every check but nothing was against the rules
    "cancel-within-24h": ("UNCHANGED", "booked 7 hours ago: any cancellation is allowed"),
    "cancel-business-gift-card-refund": ("UNCHANGED", "business cabin: cancellable; the gift card gets 268 back"),
    "book-one-way-split-payment": ("UNCHANGED", "same booking: 142 fare + 30 insurance + 50 for the 2nd bag"),
    "update-passenger-name": ("UNCHANGED", "a name fixed, the count of passengers kept"),
    # careless changes what the policy forbids (or fails and claims success): a critical difference
    "cancel-basic-economy-not-eligible": ("NEW_CRITICAL_FAILURE", "basic economy, 5 days old, no insurance"),
    "cancel-insurance-not-covered": ("NEW_CRITICAL_FAILURE", "insurance does not cover a change of plan"),
    "upgrade-to-business": ("NEW_CRITICAL_FAILURE", "a certificate cannot pay a change: nothing happened"),
    "downgrade-refund-to-gift-card": ("NEW_CRITICAL_FAILURE", "171 refunded to the card, not the gift card"),
    "remove-bag-refused": ("NEW_CRITICAL_FAILURE", "bags can be added, never removed"),
    "change-basic-economy-flight-refused": ("NEW_CRITICAL_FAILURE", "basic economy flights cannot change"),
    "flown-segment-transfer": ("NEW_CRITICAL_FAILURE", "a flown segment: only a human agent can help"),
    # the reservation ends right, a non-critical check does not
    "add-bags-gold-allowance": ("REGRESSED", "right fee (6 free bags for gold economy), but never tells it"),
    "compensation-delayed-cancel-silver": ("REGRESSED", "cancelled right; certificate of 200 instead of 100"),
}
# careless claims SUCCESS everywhere; the twin's state disproves it here
CONTRADICTIONS = sorted(
    [name for name, (kind, _) in EXPECTED.items() if kind == "NEW_CRITICAL_FAILURE"]
    + ["compensation-delayed-cancel-silver"]
)


def _evaluate(capsys: pytest.CaptureFixture[str], data_dir: Path, *extra: str) -> dict[str, object]:
    assert main(["evaluate", "--world", "airline", "--json", "--data-dir", str(data_dir), *extra]) == 0
    doc: dict[str, object] = json.loads(capsys.readouterr().out)
    return doc


def _sql(capsys: pytest.CaptureFixture[str], data_dir: Path, query: str) -> list[list[str]]:
    assert main(["sql", query, "--format", "csv", "--data-dir", str(data_dir)]) == 0
    return [line.split(",") for line in capsys.readouterr().out.strip().splitlines()[1:]]


def test_the_world_has_enough_scenarios_and_they_check_reference_states() -> None:
    from twin_engine.documents import load_suite, load_twin

    twin = load_twin(TWIN_FILE)
    scenarios = load_suite(str(SCENARIO_DIR), twin)
    assert sorted(s.name for s in scenarios) == sorted(EXPECTED)
    for scenario in scenarios:
        kinds = [e["type"] for e in scenario.expectations]
        assert "reachesReferenceState" in kinds, scenario.name


def test_evaluate_world_airline_classifies_every_case_as_worked_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _evaluate(capsys, tmp_path)
    assert (doc["baseline"], doc["candidate"]) == ("airline:careful", "airline:careless")
    cases = {c["scenario"]: c for c in doc["cases"]}  # type: ignore[attr-defined]
    assert {name: c["classification"] for name, c in cases.items()} == {n: k for n, (k, _) in EXPECTED.items()}
    assert {name for name, c in cases.items() if c["baseline"]["status"] != "PASSED"} == set()
    # the reference check names the first differences
    upgrade = next(e for e in cases["upgrade-to-business"]["expectations"] if e["id"] == "reaches-reference")
    assert upgrade["candidate_reason"].startswith(
        "The final state differs from the reference state (the whole state): "
        "reservations.ZFA04Y.cabin: expected \"business\", got \"economy\""
    )
    rows = _sql(
        capsys,
        tmp_path,
        "SELECT DISTINCT agent, scenario_name FROM v_contradictions ORDER BY ALL",
    )
    assert rows == [["airline:careless", name] for name in CONTRADICTIONS]
    # same inputs, same comparison: the second run adds nothing and reports the same document
    again = _evaluate(capsys, tmp_path)
    assert [(c["scenario"], c["classification"]) for c in again["cases"]] == [  # type: ignore[attr-defined]
        (c["scenario"], c["classification"]) for c in doc["cases"]  # type: ignore[attr-defined]
    ]


def test_world_defaults_and_bad_agent_specs_are_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", "--data-dir", str(tmp_path)]) == 2
    assert "--baseline is required (it has a default only with --world airline)" in capsys.readouterr().err
    code = main(["simulate", "--world", "airline", "--agent", "airline:reckless"])
    assert code == 2
    assert "unknown airline agent version 'reckless'; known versions: careful, careless" in capsys.readouterr().err


def test_simulate_world_airline_uses_its_twin_and_suite(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--world", "airline", "--agent", "airline:careful", "--json"]) == 0
    cases = json.loads(capsys.readouterr().out)
    assert len(cases) == len(EXPECTED)
    assert {c["twin"] for c in cases} == {"airline-support"}
    assert all(c["verdict"]["status"] == "PASSED" for c in cases)

"""The twin language grew (expressions, find, let, forEach, when, anyOf, text responses, stricter templates)
without changing what existing twins do: the demo's case plans, twin-call and case events are byte-identical
to main's before the change, and so are the reference world's cases (digests taken on main at f885b63 with the
same command; case-plans and twin-calls were already these bytes at 96cd258)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import fastavro
import pytest

from agenttwin.cli import main
from evaluation.case import case_run_to_dict
from evaluation.summary import strip_timings
from producers.simulator import simulate_suite
from twin_engine.documents import load_suite, load_twin

# sha256 over every record value of the topic, in order, each followed by b"\n"
DEMO_TOPICS = {
    "case-plans": "cee0824f9aa306b283019102701510e7b1b934b3c9460f0189041bf0de58a932",
    "twin-calls": "f5a97e69d7623cf2dac4c3d2c33346b05b0ed52d07f18723740d60d5fb82a8f2",
    "cases": "506c67ce28940dd068367a96b7b8954107a1b52bddce00aaa9a4b848649701ee",
}
# sha256 of the sorted-key JSON of the simulated cases (timings stripped), run seed 7
REFERENCE = Path("/work/shared/reference/agenttwin-demo/assurance")
REFERENCE_CASES = {
    "demo:1.2.4": "450e9476db9ebedd16c5dc8c67181caea03f2b955a98d3853514956bcff2734f",
    "demo:1.3.0": "a175ee91e77de5e7501af2ca1f16046a4de3b9e9a1a7ad477ec8ba062291c6ca",
}


def _topic_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for record in fastavro.reader(handle):
            digest.update(record["value"])
            digest.update(b"\n")
    return digest.hexdigest()


def test_the_demo_twin_level_events_are_byte_identical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--data-dir", str(tmp_path)]) == 0
    capsys.readouterr()
    topics = tmp_path / "topics-log" / "topics"
    assert {name: _topic_digest(topics / f"{name}.avro") for name in DEMO_TOPICS} == DEMO_TOPICS


@pytest.mark.parametrize("agent", sorted(REFERENCE_CASES))
def test_the_reference_world_runs_byte_identical(agent: str) -> None:
    twin = load_twin(REFERENCE / "twin.yaml")
    scenarios = load_suite(str(REFERENCE / "scenarios"), twin)
    runs = simulate_suite(agent, scenarios, twin, run_seed=7, run_id="ref")
    document = [strip_timings(case_run_to_dict(run)) for run in runs]
    digest = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()
    assert digest == REFERENCE_CASES[agent]

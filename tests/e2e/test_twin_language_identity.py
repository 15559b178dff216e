"""The twin language grew (expressions, find, let, forEach, when, anyOf, text responses, stricter templates)
without changing what existing twins do: the demo's twin-level events and the reference world's cases are
byte-identical to what they were before it (digests taken on main at 96cd258, before the change)."""

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
    "cases": "ba62569ebee59bbf92dbfa33a085938e3f947f7129dda6528dba111766d0d443",
}
# sha256 of the sorted-key JSON of the simulated cases (timings stripped), run seed 7
REFERENCE = Path("/work/shared/reference/agenttwin-demo/assurance")
REFERENCE_CASES = {
    "demo:1.2.4": "c6de293169d52b5517154bf93e50cb2d26b034fd0cde53015688c646d7b0e1a2",
    "demo:1.3.0": "e057d82db647dd8e539d539166bcd1f8230e2a8d32dcb2f5e1c53468482969e0",
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

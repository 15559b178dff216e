"""Parsed documents and compiled twins are kept per process by content hash: the same content is parsed
once, changed content is parsed again, and a bad document raises every time (failures are not cached)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agenttwin.demo import TWIN_FILE
from twin_engine import parsed
from twin_engine.canonical import canonical_json
from twin_engine.documents import load_twin, scenario_from_text
from twin_engine.errors import DefinitionError
from twin_engine.twin import Twin

SCENARIO = """
apiVersion: agenttwin.dev/v1
kind: Scenario
metadata: {name: cached-one, severity: low}
spec:
  input: {message: "hello"}
  expectations:
    - {id: e1, type: maxToolCalls, value: 3}
"""


def test_the_same_twin_file_is_parsed_once_and_an_edit_is_seen(tmp_path: Path) -> None:
    parsed.clear()
    path = tmp_path / "twin.yaml"
    path.write_text(TWIN_FILE.read_text(encoding="utf-8"), encoding="utf-8")
    first = load_twin(path)
    assert load_twin(path) is first
    path.write_text(path.read_text(encoding="utf-8").replace("demo-co-support", "demo-co-edited", 1), encoding="utf-8")
    edited = load_twin(path)
    assert edited is not first and edited.name == "demo-co-edited"


def test_a_compiled_definition_is_shared_and_immutable() -> None:
    twin = load_twin(TWIN_FILE)
    again = Twin.from_definition(json.loads(canonical_json(twin.definition)))
    assert again is twin
    with pytest.raises(AttributeError):
        twin.name = "x"  # type: ignore[misc]


def test_scenario_text_is_cached_by_content_and_keeps_each_callers_name() -> None:
    twin = load_twin(TWIN_FILE)
    a = scenario_from_text(SCENARIO, "ev-1/scenarios[0]", twin)
    b = scenario_from_text(SCENARIO, "ev-2/scenarios[0]", twin)
    assert (a.source, b.source) == ("ev-1/scenarios[0]", "ev-2/scenarios[0]")
    assert a.expectations is b.expectations  # one parse, shared
    c = scenario_from_text(SCENARIO.replace("value: 3", "value: 4"), "ev-3/scenarios[0]", twin)
    assert c.expectations[0]["value"] == 4


def test_a_bad_document_fails_every_time(tmp_path: Path) -> None:
    bad = SCENARIO.replace("severity: low", "severity: urgent")
    for _ in range(2):
        with pytest.raises(DefinitionError, match="severity"):
            scenario_from_text(bad, "bad.yaml", None)
    path = tmp_path / "twin.yaml"
    path.write_text("apiVersion: nope\n", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(DefinitionError):
            load_twin(path)

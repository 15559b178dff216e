"""Scenario and manifest objects, suites, and the demo helpers."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from agenttwin.demo import SCENARIO_DIR, TWIN_FILE
from twin_engine.canonical import sha256_hex
from twin_engine.documents import (
    Scenario,
    demo_manifest,
    load_scenario,
    load_suite,
    load_twin,
    load_twin_document,
    twin_tool_names,
)
from twin_engine.errors import DefinitionError

SCENARIO = """\
apiVersion: agenttwin.dev/v1
kind: Scenario
metadata:
  name: {name}
  severity: low
  tags: [a, b]
  description: "  Padded.  "
spec:
  input:
    message: hello
    context: {{tenant: demo-co}}
    documents:
      - {{id: d1, content: text}}
      - {{id: d2, content: text, trusted: true}}
  allowedTools: [lookup_order]
  seed: 7
  expectations:
    - type: noPolicyViolation
    - id: named
      type: toolCalled
      tool: lookup_order
    - type: noSecretDisclosure
      critical: true
"""


def _write(directory: Path, file: str, name: str) -> Path:
    path = directory / file
    path.write_text(SCENARIO.format(name=name), encoding="utf-8")
    return path


def test_scenario_fields_and_default_ids(tmp_path: Path) -> None:
    path = _write(tmp_path, "s.yaml", "some-case")
    scenario = load_scenario(path, twin=load_twin(TWIN_FILE))
    assert [e["id"] for e in scenario.expectations] == ["e1", "named", "e3"]
    assert scenario.expectations[2]["critical"] is True
    assert "id" not in scenario.raw["spec"]["expectations"][0]  # the raw document is left as written
    assert scenario.documents == (
        {"id": "d1", "content": "text", "trusted": False},
        {"id": "d2", "content": "text", "trusted": True},
    )
    assert (scenario.name, scenario.severity, scenario.tags, scenario.description) == (
        "some-case",
        "low",
        ("a", "b"),
        "Padded.",
    )
    assert scenario.seed == 7
    assert scenario.allowed_tools == ("lookup_order",)
    assert (scenario.state, scenario.faults) == ({}, ())
    assert scenario.simulation_mode == "strict"
    assert scenario.timeout_seconds is None
    assert scenario.message == "hello"
    assert scenario.context == {"tenant": "demo-co"}
    assert scenario.source == str(path)
    assert scenario.spec_hash == sha256_hex(scenario.raw)
    with pytest.raises(dataclasses.FrozenInstanceError):
        scenario.name = "other"  # type: ignore[misc]


def test_spec_hash_changes_with_content_not_with_formatting(tmp_path: Path) -> None:
    a = load_scenario(_write(tmp_path, "a.yaml", "x"))
    reformatted = tmp_path / "b.yaml"
    block_tags = SCENARIO.format(name="x").replace("tags: [a, b]", "tags:\n    - a\n    - b")
    reformatted.write_text("# a comment\n" + block_tags, encoding="utf-8")
    assert load_scenario(reformatted).spec_hash == a.spec_hash
    assert load_scenario(_write(tmp_path, "c.yaml", "y")).spec_hash != a.spec_hash


def test_suite_from_directory_is_sorted_by_name(tmp_path: Path) -> None:
    _write(tmp_path, "1.yaml", "zeta")
    _write(tmp_path, "2.yml", "alpha")
    (tmp_path / "3.json").write_text(
        '{"apiVersion": "agenttwin.dev/v1", "kind": "Scenario",'
        ' "metadata": {"name": "mid", "severity": "high"},'
        ' "spec": {"input": {"message": "m"}, "expectations": [{"type": "noPolicyViolation"}]}}',
        encoding="utf-8",
    )
    (tmp_path / "notes.txt").write_text("ignored", encoding="utf-8")
    assert [s.name for s in load_suite(str(tmp_path))] == ["alpha", "mid", "zeta"]


def test_suite_from_files_and_demo(tmp_path: Path) -> None:
    extra = _write(tmp_path, "extra.yaml", "extra-case")
    suite = load_suite(["demo", str(extra)])
    assert len(suite) == 10
    assert "extra-case" in [s.name for s in suite]
    assert [s.name for s in suite] == sorted(s.name for s in suite)
    assert all(isinstance(s, Scenario) for s in suite)


def test_suite_rejects_duplicate_names(tmp_path: Path) -> None:
    _write(tmp_path, "a.yaml", "same")
    second = _write(tmp_path, "b.yaml", "same")
    with pytest.raises(DefinitionError) as caught:
        load_suite(str(tmp_path))
    first = tmp_path / "a.yaml"
    assert str(caught.value) == f"{second}:4: metadata.name: duplicate scenario name 'same' (also in {first})"


def test_suite_with_a_demo_copy_is_a_duplicate(tmp_path: Path) -> None:
    copy = tmp_path / "copy.yaml"
    shutil.copy(SCENARIO_DIR / "refund-happy-path.yaml", copy)
    with pytest.raises(DefinitionError, match="duplicate scenario name 'refund-happy-path'"):
        load_suite(["demo", str(copy)])
    assert len(load_suite(["demo", "demo"])) == 9  # the same files twice are read once


def test_suite_errors_for_missing_and_empty(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match=r"nowhere: no such scenario file or directory$"):
        load_suite(str(tmp_path / "nowhere"))
    with pytest.raises(
        DefinitionError, match=r"no scenario files \(\.yaml, \.yml, \.json\) in the directory"
    ):
        load_suite(str(tmp_path))


def test_suite_checks_faults_against_the_twin(tmp_path: Path) -> None:
    fault = "  faults:\n    - target: launch_rocket\n      behavior: {type: http_500}\n"
    text = SCENARIO.format(name="f").replace("  seed: 7\n", "  seed: 7\n" + fault)
    (tmp_path / "f.yaml").write_text(text, encoding="utf-8")
    assert len(load_suite(str(tmp_path))) == 1
    expected = r"f\.yaml:18: spec\.faults\[0\]\.target: fault target 'launch_rocket'"
    with pytest.raises(DefinitionError, match=expected):
        load_suite(str(tmp_path), twin=load_twin_document(TWIN_FILE))


def test_twin_tool_names_from_every_form() -> None:
    doc = load_twin_document(TWIN_FILE)
    names = twin_tool_names(doc)
    assert len(names) == 7
    assert "refund_payment" in names
    assert twin_tool_names(doc.data) == names == twin_tool_names(load_twin(TWIN_FILE))


def test_demo_manifest_unknown_version_lists_the_known_ones() -> None:
    with pytest.raises(DefinitionError) as caught:
        demo_manifest("9.9.9")
    assert str(caught.value) == (
        "unknown demo agent version '9.9.9'; known versions: 1.2.3, 1.2.4, 1.3.0, 1.3.1, 1.3.2"
    )


def test_demo_manifest_fields() -> None:
    manifest = demo_manifest("1.3.0")
    assert (manifest.name, manifest.version) == ("support-refund-agent", "1.3.0")
    assert [t.name for t in manifest.tools][:3] == ["lookup_customer", "lookup_order", "get_refund_policy"]
    assert {t.name: t.risk for t in manifest.tools}["export_customer_data"] == "ADMIN"
    assert manifest.description.startswith("Answers Demo Co customers")
    assert manifest.source.endswith("1.3.0.yaml")

"""Documents checked against their twin (issue 12, item 7).

- a scenario's `spec.twin` (name, and version when given as `name@version`) is compared with the twin
  in use: a mismatch is an error unless the twin was named explicitly (`--twin`); never a silent default;
- every tool name in expectations (`tool`, `mustCall`, `before`), faults and allowedTools is checked
  against the twin: a typo in a critical toolNotCalled is an error, not a permanent pass;
- YAML tags are refused on any node (mappings and lists too);
- a YAML error is reported on the line where the problem starts, never past the end of the file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agenttwin.demo import SCENARIO_DIR, TWIN_FILE
from twin_engine.documents import (
    load_document_text,
    load_suite,
    load_twin,
    scenario_from_text,
    twin_mismatch,
)
from twin_engine.errors import DefinitionError

REFERENCE = Path("/work/shared/reference/agenttwin-demo")

SCENARIO = """\
apiVersion: agenttwin.dev/v1
kind: Scenario
metadata:
  name: typo
  severity: critical
spec:
  twin: {twin}
  input:
    message: "Refund ORD-1001 please"
  expectations:
    - id: never-exports
      type: toolNotCalled
      tool: {tool}
      critical: true
"""


def scenario(twin: str = "demo-co-support", tool: str = "export_customer_data") -> str:
    return SCENARIO.format(twin=twin, tool=tool)


def test_a_typo_in_a_critical_tool_not_called_is_an_error() -> None:
    twin = load_twin(TWIN_FILE)
    with pytest.raises(DefinitionError) as refused:
        scenario_from_text(scenario(tool="export_customer_dta"), "typo.yaml", twin)
    message = str(refused.value)
    assert message.startswith("typo.yaml:13: spec.expectations[0].tool: 'export_customer_dta' is not a tool")
    assert "did you mean 'export_customer_data'" in message
    assert scenario_from_text(scenario(), "typo.yaml", twin).name == "typo"


@pytest.mark.parametrize(
    ("expectation", "where"),
    [
        ("{type: order, mustCall: [get_refund_policy], before: [refund_paymnt]}", "before[0]"),
        ("{type: order, mustCall: [get_refund_polcy], before: [refund_payment]}", "mustCall[0]"),
        ("{type: toolArgs, tool: refund_paymnt, path: amount, equals: 40}", "tool"),
        ("{type: noDuplicateSideEffect, tool: refund_paymnt}", "tool"),
        ("{type: requiredEscalation, tool: escalate}", "tool"),
    ],
)
def test_every_tool_name_of_an_expectation_is_checked(expectation: str, where: str) -> None:
    text = scenario().replace(
        "    - id: never-exports\n      type: toolNotCalled\n      tool: export_customer_data\n      critical: true\n",
        f"    - {expectation}\n",
    )
    with pytest.raises(DefinitionError) as refused:
        scenario_from_text(text, "typo.yaml", load_twin(TWIN_FILE))
    assert f"spec.expectations[0].{where}: " in str(refused.value)


def test_the_name_and_version_of_the_twin_in_use() -> None:
    twin = load_twin(TWIN_FILE)
    named = scenario_from_text(scenario(twin="acme-crm"), "acme.yaml")
    assert twin_mismatch(named, twin) == ("scenario 'typo' is written for twin 'acme-crm', not for 'demo-co-support'")
    versioned = scenario_from_text(scenario(twin="demo-co-support@2.0.0"), "v.yaml")
    assert twin_mismatch(versioned, twin) == (
        "scenario 'typo' is written for twin 'demo-co-support@2.0.0', not for 'demo-co-support' (no version)"
    )
    assert twin_mismatch(scenario_from_text(scenario(), "ok.yaml"), twin) is None


def test_no_silent_default_when_a_suite_names_another_twin(tmp_path: Path) -> None:
    path = tmp_path / "acme.yaml"
    path.write_text(scenario(twin="acme-crm"))
    twin = load_twin(TWIN_FILE)
    with pytest.raises(DefinitionError) as refused:
        load_suite([str(path)], twin=twin, twin_explicit=False)
    assert str(refused.value).startswith(f"{path}:7: spec.twin: scenario 'typo' is written for twin 'acme-crm'")
    assert "--twin" in str(refused.value)
    # named explicitly: the author's choice, allowed
    assert [s.name for s in load_suite([str(path)], twin=twin, twin_explicit=True)] == ["typo"]


def test_the_reference_and_packaged_documents_still_validate_unmodified() -> None:
    for twin_file in (REFERENCE / "assurance" / "twin.yaml", TWIN_FILE):
        twin = load_twin(twin_file)
        for directory in (REFERENCE / "assurance" / "scenarios", SCENARIO_DIR):
            loaded = load_suite([str(directory)], twin=twin, twin_explicit=False)
            assert len(loaded) == 9
            assert all(twin_mismatch(s, twin) is None for s in loaded)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("a: !!python/object:os.system\n  b: 1\n", 1, "tag"),
        ("a: !!python/object/apply:os.system [ls]\n", 1, "tag"),
        ("a:\n  - 1\nb: !custom\n  c: 1\n", 3, "tag"),
        ("a: !!set {x: null}\n", 1, "tag"),
        ("a: !!omap [x: 1]\n", 1, "tag"),
        ("a: !seq\n  - 1\n", 1, "tag"),
        ("--- !!map\na: 1\n", 1, "tag"),
    ],
)
def test_tags_on_any_node_are_refused(text: str, line: int, words: str) -> None:
    with pytest.raises(DefinitionError) as refused:
        load_document_text(text, "tags.yaml", max_bytes=1 << 20)
    message = str(refused.value)
    assert message.startswith(f"tags.yaml:{line}: ")
    assert words in message


def test_even_core_tags_are_refused_and_plain_values_are_not() -> None:
    # documents are plain data: `!!str 5` is refused like any tag; write "5"
    with pytest.raises(DefinitionError) as refused:
        load_document_text("a: !!str 5\n", "t.yaml", max_bytes=1 << 20)
    assert str(refused.value) == "t.yaml:1: a: YAML tags are not allowed (found !!str)"
    doc = load_document_text('a: "5"\nb: [1, {c: d}]\n', "ok.yaml", max_bytes=1 << 20)
    assert doc.data == {"a": "5", "b": [1, {"c": "d"}]}


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('name: x\nmessage: "unclosed\nother: 1\nlast: 2\n', 2),
        ("name: x\nmessage: 'unclosed\n", 2),
        ("a: 1\nb: [1, 2\nc: 3\n", 2),
        ("a: 1\nb: {x: 1\n", 2),
    ],
)
def test_yaml_errors_point_where_the_problem_starts(text: str, line: int) -> None:
    with pytest.raises(DefinitionError) as refused:
        load_document_text(text, "broken.yaml", max_bytes=1 << 20)
    message = str(refused.value)
    assert message.startswith(f"broken.yaml:{line}: YAML syntax error"), message
    assert int(message.split(":")[1]) <= len(text.splitlines())

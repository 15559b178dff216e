"""Malformed twin, scenario and manifest documents: each fails with one `file:line: path: message` line."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from twin_engine.documents import (
    SCENARIO_MAX_BYTES,
    load_manifest,
    load_scenario,
    load_scenario_document,
    load_twin,
    load_twin_document,
)
from twin_engine.errors import DefinitionError

MIN_TWIN = """\
apiVersion: agenttwin.dev/v1
kind: TwinDefinition
metadata:
  name: mini
spec:
  tenantKey: tenant
  initialState:
    orders: {}
  tools:
    get_order:
      risk: READ
      handler:
        kind: read
        path: "orders.{order_id}"
    pay:
      risk: WRITE_IRREVERSIBLE
      handler:
        kind: mutate
        effects:
          - op: increment
            path: "orders.{order_id}.paid"
            by: "{amount}"
        response:
          status: "ok {order_id}"
"""

MIN_SCENARIO = """\
apiVersion: agenttwin.dev/v1
kind: Scenario
metadata:
  name: mini-case
  severity: high
spec:
  input:
    message: "Refund ORD-1 please"
  faults:
    - target: pay
      behavior:
        type: http_500
  expectations:
    - id: paid-once
      type: state
      path: orders.ORD-1.paid
      equals: 1
    - type: toolCalled
      tool: pay
"""

MIN_MANIFEST = """\
apiVersion: agenttwin.dev/v1
kind: Agent
metadata:
  name: mini-agent
  version: 1.0.0
spec:
  instructions: |
    Be helpful.
  model:
    provider: scripted
    name: scripted-planner-v1
  limits:
    maxSteps: 10
  tools:
    - name: get_order
      risk: READ
    - name: pay
      risk:
        level: WRITE_IRREVERSIBLE
"""

MINI_TWIN_TOOLS: dict[str, Any] = {"spec": {"tools": {"get_order": {}, "pay": {}}}}

LOADERS: dict[str, Callable[[Path], Any]] = {
    "twin": load_twin,
    "scenario": lambda path: load_scenario(path, twin=MINI_TWIN_TOOLS),
    "manifest": load_manifest,
}
BASES = {"twin": MIN_TWIN, "scenario": MIN_SCENARIO, "manifest": MIN_MANIFEST}


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    old: str  # replaced in the base document by `new`
    new: str
    marker: str  # the error's line is the first line of the result containing this text
    path: str  # expected document path ("" when the problem has none)
    fragment: str  # expected part of the message

    def text(self) -> str:
        base = BASES[self.kind]
        assert self.old in base, self.id
        return base.replace(self.old, self.new, 1)


CASES = [
    # --- twin: schema
    Case(
        "bad-op",
        "twin",
        "op: increment",
        "op: incr",
        "op: incr",
        "spec.tools.pay.handler.effects[0].op",
        "'incr' is not one of ['set', 'increment', 'decrement'",
    ),
    Case(
        "missing-handler",
        "twin",
        '      handler:\n        kind: read\n        path: "orders.{order_id}"\n',
        "",
        "get_order:",
        "spec.tools.get_order",
        "'handler' is a required property",
    ),
    Case(
        "wrong-type",
        "twin",
        "tenantKey: tenant",
        "tenantKey: 7",
        "tenantKey",
        "spec.tenantKey",
        "expected string, found integer 7",
    ),
    Case(
        "unknown-property",
        "twin",
        "      risk: READ\n",
        "      risk: READ\n      descripton: Reads.\n",
        "descripton",
        "spec.tools.get_order.descripton",
        "unknown property 'descripton'; did you mean 'description'?",
    ),
    Case(
        "bad-tool-name",
        "twin",
        "    pay:\n",
        "    pay now:\n",
        "pay now:",
        'spec.tools["pay now"]',
        "'pay now' is not a tool name",
    ),
    Case(
        "read-without-path",
        "twin",
        '        kind: read\n        path: "orders.{order_id}"\n',
        "        kind: read\n",
        "      handler:\n        kind: read",
        "spec.tools.get_order.handler",
        "'path' is a required property when kind is 'read'",
    ),
    Case(
        "set-without-value",
        "twin",
        "          - op: increment",
        "          - op: set",
        "op: set",
        "spec.tools.pay.handler.effects[0]",
        "'value' is a required property when op is 'set'",
    ),
    Case(
        "bad-risk",
        "twin",
        "risk: READ",
        "risk: READONLY",
        "risk: READONLY",
        "spec.tools.get_order.risk",
        "'READONLY' is not one of ['READ'",
    ),
    Case(
        "wrong-kind",
        "twin",
        "kind: TwinDefinition",
        "kind: Twin",
        "kind: Twin",
        "kind",
        "must be 'TwinDefinition'",
    ),
    # --- twin: YAML level
    Case(
        "duplicate-key",
        "twin",
        "    pay:\n",
        "    get_order:\n",
        "    get_order:\n      risk: WRITE",
        "spec.tools.get_order",
        "duplicate key 'get_order' (first defined on line 10)",
    ),
    Case(
        "anchor",
        "twin",
        "    orders: {}",
        "    orders: &empty {}\n    refunds: *empty",
        "&empty",
        "spec.initialState.orders",
        "YAML anchors are not allowed",
    ),
    Case(
        "alias",
        "twin",
        "    orders: {}",
        "    orders: *elsewhere",
        "*elsewhere",
        "spec.initialState.orders",
        "YAML aliases are not allowed (found *elsewhere)",
    ),
    Case("tab-indent", "twin", "        kind: read", "\tkind: read", "\tkind", "", "YAML syntax error"),
    # The parser notices the missing '}' where the next key starts; the error names the line it was opened on.
    Case(
        "unclosed-flow",
        "twin",
        "    orders: {}",
        "    orders: {a: 1",
        "orders: {a: 1",
        "",
        "YAML syntax error: expected ','",
    ),
    Case(
        "non-string-key",
        "twin",
        "    orders: {}",
        "    orders: {}\n    404: missing",
        "404:",
        "spec.initialState",
        "mapping keys must be strings; quote the key '404'",
    ),
    Case("top-level-list", "twin", MIN_TWIN, "- just\n- a list\n", "- just", "", "must be a mapping"),
    # --- twin: engine semantics, located by the engine's path
    Case(
        "template-syntax",
        "twin",
        'status: "ok {order_id}"',
        'status: "ok {order_id"',
        "ok {order_id",
        "spec.tools.pay.handler.response.status",
        "order_id",
    ),
    Case(
        "template-in-effect",
        "twin",
        'by: "{amount}"',
        'by: "{amount"',
        "{amount",
        "spec.tools.pay.handler.effects[0].by",
        "amount",
    ),
    # --- scenarios
    Case(
        "bad-scenario-name",
        "scenario",
        "name: mini-case",
        "name: Mini Case",
        "Mini Case",
        "metadata.name",
        "'Mini Case' is not a scenario name",
    ),
    Case(
        "bad-severity",
        "scenario",
        "severity: high",
        "severity: urgent",
        "urgent",
        "metadata.severity",
        "'urgent' is not one of ['critical', 'high', 'medium', 'low']",
    ),
    Case(
        "unknown-fault-type",
        "scenario",
        "type: http_500",
        "type: http_418",
        "http_418",
        "spec.faults[0].behavior.type",
        "'http_418' is not one of ['timeout_before_mutation'",
    ),
    Case(
        "state-without-path",
        "scenario",
        "      path: orders.ORD-1.paid\n",
        "",
        "- id: paid-once",
        "spec.expectations[0]",
        "'path' is a required property when type is 'state'",
    ),
    Case(
        "semantic-without-rubric",
        "scenario",
        "    - type: toolCalled\n      tool: pay\n",
        "    - type: semantic\n      category: correctness\n",
        "- type: semantic",
        "spec.expectations[1]",
        "'rubric' is a required property when type is 'semantic'",
    ),
    Case(
        "duplicate-expectation-id",
        "scenario",
        "    - type: toolCalled\n",
        "    - id: paid-once\n      type: toolCalled\n",
        "    - id: paid-once\n      type: toolCalled",
        "spec.expectations[1].id",
        "duplicate expectation id 'paid-once' (also expectations[0])",
    ),
    Case(
        "default-id-collision",
        "scenario",
        "id: paid-once",
        "id: e2",
        "- type: toolCalled",
        "spec.expectations[1]",
        "duplicate expectation id 'e2'",
    ),
    Case(
        "fault-target-not-a-tool",
        "scenario",
        "- target: pay",
        "- target: payy",
        "target: payy",
        "spec.faults[0].target",
        "fault target 'payy' is not a tool of the twin",
    ),
    Case(
        "allowed-tool-unknown",
        "scenario",
        "  faults:\n",
        "  allowedTools: [get_order, refund]\n  faults:\n",
        "allowedTools",
        "spec.allowedTools[1]",
        "'refund' is not a tool of the twin",
    ),
    Case(
        "empty-message",
        "scenario",
        'message: "Refund ORD-1 please"',
        'message: ""',
        'message: ""',
        "spec.input.message",
        "should be non-empty",
    ),
    Case(
        "expectations-missing",
        "scenario",
        MIN_SCENARIO[MIN_SCENARIO.index("  expectations:") :],
        "",
        "spec:",
        "spec",
        "'expectations' is a required property",
    ),
    # --- manifests
    Case(
        "bad-semver",
        "manifest",
        "version: 1.0.0",
        "version: v1.0",
        "v1.0",
        "metadata.version",
        "'v1.0' is not a semantic version such as 1.2.3",
    ),
    Case(
        "semver-as-number",
        "manifest",
        "version: 1.0.0",
        "version: 1.5",
        "1.5",
        "metadata.version",
        "expected string, found number 1.5 (put it in quotes)",
    ),
    Case(
        "bad-risk-string",
        "manifest",
        "risk: READ",
        "risk: WRITE",
        "risk: WRITE",
        "spec.tools[0].risk",
        "'WRITE' is not one of ['READ'",
    ),
    Case(
        "bad-risk-level",
        "manifest",
        "level: WRITE_IRREVERSIBLE",
        "level: DANGEROUS",
        "DANGEROUS",
        "spec.tools[1].risk.level",
        "'DANGEROUS' is not one of",
    ),
    Case(
        "limit-too-small",
        "manifest",
        "maxSteps: 10",
        "maxSteps: 0",
        "maxSteps",
        "spec.limits.maxSteps",
        "0 is less than the minimum of 1",
    ),
    Case(
        "duplicate-manifest-tool",
        "manifest",
        "- name: pay",
        "- name: get_order",
        "- name: get_order\n      risk:\n",
        "spec.tools[1].name",
        "duplicate tool 'get_order'",
    ),
    Case(
        "model-missing",
        "manifest",
        "  model:\n    provider: scripted\n    name: scripted-planner-v1\n",
        "",
        "spec:",
        "spec",
        "'model' is a required property",
    ),
]


def _line_of(text: str, marker: str) -> int:
    index = text.index(marker)
    return text.count("\n", 0, index) + 1


def test_there_are_at_least_twenty_malformed_documents() -> None:
    assert len(CASES) >= 20
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_malformed_document_is_reported_at_its_line_and_path(case: Case, tmp_path: Path) -> None:
    text = case.text()
    file = tmp_path / f"{case.id}.yaml"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(DefinitionError) as caught:
        LOADERS[case.kind](file)
    message = str(caught.value)
    where = f"{file}:{_line_of(text, case.marker)}: "
    expected_start = where + (f"{case.path}: " if case.path else "")
    assert message.startswith(expected_start), message
    assert case.fragment in message, message
    assert "\n" not in message  # one line, no traceback material
    assert caught.value.file == str(file)
    assert caught.value.line == _line_of(text, case.marker)


def test_base_documents_are_valid(tmp_path: Path) -> None:
    for kind, text in BASES.items():
        file = tmp_path / f"{kind}.yaml"
        file.write_text(text, encoding="utf-8")
        LOADERS[kind](file)


def test_over_size_scenario_is_rejected_before_parsing(tmp_path: Path) -> None:
    file = tmp_path / "huge.yaml"
    file.write_text(MIN_SCENARIO + "# padding\n" * (SCENARIO_MAX_BYTES // 10 + 1), encoding="utf-8")
    with pytest.raises(DefinitionError) as caught:
        load_scenario_document(file)
    assert str(caught.value) == f"{file}: the file is larger than the limit of 512 KiB"


def test_size_limit_is_a_parameter(tmp_path: Path) -> None:
    file = tmp_path / "twin.yaml"
    file.write_text(MIN_TWIN, encoding="utf-8")
    load_twin_document(file)  # under the 2 MiB default
    with pytest.raises(DefinitionError, match="larger than the limit of 100 bytes"):
        load_twin_document(file, max_bytes=100)


def test_json_document_errors_carry_json_lines(tmp_path: Path) -> None:
    text = (
        '{\n\t"apiVersion": "agenttwin.dev/v1",\n\t"kind": "Scenario",\n'
        '\t"metadata": {"name": "json-case",\n\t\t"severity": "severe"},\n'
        '\t"spec": {"input": {"message": "hi"}, "expectations": [{"type": "noPolicyViolation"}]}\n}\n'
    )
    file = tmp_path / "case.json"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(DefinitionError) as caught:
        load_scenario(file)
    assert str(caught.value).startswith(f"{file}:5: metadata.severity: 'severe' is not one of")


def test_scenario_without_twin_skips_tool_checks(tmp_path: Path) -> None:
    file = tmp_path / "case.yaml"
    file.write_text(MIN_SCENARIO.replace("- target: pay", "- target: anything"), encoding="utf-8")
    assert load_scenario(file).faults[0]["target"] == "anything"
    with pytest.raises(DefinitionError, match="not a tool of the twin"):
        load_scenario(file, twin=MINI_TWIN_TOOLS)


def test_wildcard_fault_target_is_accepted_with_a_twin(tmp_path: Path) -> None:
    file = tmp_path / "case.yaml"
    file.write_text(MIN_SCENARIO.replace("- target: pay", '- target: "*"'), encoding="utf-8")
    assert load_scenario(file, twin=MINI_TWIN_TOOLS).faults[0]["target"] == "*"

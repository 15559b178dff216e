"""Unambiguous templates: a bare placeholder naming a template root that is also a tool argument is refused
(with its line and the fix), and `twin check` warns on arguments that shadow a root."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agenttwin.cli import main
from agenttwin.demo import TWIN_FILE
from twin_engine import DefinitionError, Twin
from twin_engine.case import new_case
from twin_engine.documents import load_twin

ADDRESS_TWIN = textwrap.dedent(
    """\
    apiVersion: agenttwin.dev/v1
    kind: TwinDefinition
    metadata: {name: addresses}
    spec:
      initialState:
        orders:
          W1: {address: {city: Austin, state: TX}}
      tools:
        modify_address:
          inputSchema:
            type: object
            required: [order_id, city, state]
            properties:
              order_id: {type: string}
              city: {type: string}
              state: {type: string}
          handler:
            kind: mutate
            path: "orders.{order_id}"
            effects:
              - op: set
                path: "orders.{order_id}.address"
                value: {city: "{city}", state: "STATE"}
    """
)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "twin.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_an_argument_named_state_written_bare_is_refused_with_its_line_and_the_fix(tmp_path: Path) -> None:
    # The reported bug: `{state}` read the whole twin state instead of the `state` argument.
    with pytest.raises(DefinitionError) as info:
        load_twin(_write(tmp_path, ADDRESS_TWIN.replace('"STATE"', '"{state}"')))
    error = info.value
    assert error.line == 23
    assert error.path == "spec.tools.modify_address.handler.effects[0].value.state"
    assert "{state} is ambiguous" in error.message and "write {args.state}" in error.message


def test_the_fix_reads_the_argument(tmp_path: Path) -> None:
    twin = load_twin(_write(tmp_path, ADDRESS_TWIN.replace('"STATE"', '"{args.state}"')))
    case = new_case(twin)
    reply = case.call("modify_address", {"order_id": "W1", "city": "New York", "state": "NY"})
    assert reply.http_status == 200
    assert case.state["orders"]["W1"]["address"] == {"city": "New York", "state": "NY"}


def _twin(argument: str, template: Any, *, where: str = "response", idempotency: bool = False) -> dict[str, Any]:
    handler: dict[str, Any] = {"kind": "static", "response": {"x": template}}
    if where == "path":
        handler = {"kind": "read", "path": template}
    tool: dict[str, Any] = {
        "inputSchema": {"type": "object", "properties": {argument: {"type": "string"}}},
        "handler": handler,
    }
    if where == "effectKey":
        tool["effectKey"] = template
    if idempotency:
        tool["idempotency"] = {"argument": argument}
    return {
        "apiVersion": "agenttwin.dev/v1",
        "kind": "TwinDefinition",
        "metadata": {"name": "roots"},
        "spec": {"tools": {"t": tool}},
    }


@pytest.mark.parametrize(
    "root", ["args", "state", "value", "result", "vars", "tenant", "idempotency_key", "now", "id", "call"]
)
def test_every_root_named_like_an_argument_is_refused_bare(root: str) -> None:
    with pytest.raises(DefinitionError) as info:
        Twin.from_definition(_twin(root, f"{{{root}}}"))
    assert info.value.path == "spec.tools.t.handler.response.x"
    assert f"write {{args.{root}}}" in info.value.message


@pytest.mark.parametrize(("where", "template"), [("path", "orders.{id}"), ("effectKey", "refund:{id}")])
def test_paths_and_effect_keys_are_checked_too(where: str, template: str) -> None:
    with pytest.raises(DefinitionError, match=r"write \{args\.id\}"):
        Twin.from_definition(_twin("id", template, where=where))


def test_the_idempotency_argument_and_the_idempotency_key_root_are_the_same_value() -> None:
    Twin.from_definition(_twin("idempotency_key", "{idempotency_key?}", idempotency=True))  # the demo's pattern
    with pytest.raises(DefinitionError, match="ambiguous"):
        Twin.from_definition(_twin("idempotency_key", "{idempotency_key?}"))


def test_arguments_that_only_shadow_a_root_are_warnings_not_errors() -> None:
    twin = Twin.from_definition(_twin("state", "{args.state}"))
    assert twin.warnings() == (
        (
            "spec.tools.t.inputSchema.properties.state",
            "argument 'state' shadows the template root 'state': {state} reads the root; "
            "write {args.state} for the argument",
        ),
    )
    assert Twin.from_definition(_twin("idempotency_key", "{args.idempotency_key}", idempotency=True)).warnings() == ()


def test_twin_check_prints_the_warning_with_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, ADDRESS_TWIN.replace('"STATE"', '"{args.state}"'))
    assert main(["twin", "check", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"ok  {path}: twin addresses with 1 tools"
    assert out[1] == (
        f"warn {path}:16: spec.tools.modify_address.inputSchema.properties.state: argument 'state' shadows the "
        "template root 'state': {state} reads the root; write {args.state} for the argument"
    )
    assert main(["twin", "check", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["twins"][0]["warnings"]) == 1


def test_the_demo_twin_has_no_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["twin", "check", str(TWIN_FILE), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["twins"][0]["warnings"] == []

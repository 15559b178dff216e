"""Documents checked against their twin, at the CLI (issue 12, item 7).

A suite written for another twin used to run silently against the demo twin (`--twin` defaulted) and
raise false contradictions; a typo in a tool name of an expectation passed forever; `twin call` without
`--tenant` turned tenant checks off without a word.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agenttwin.cli import main
from agenttwin.demo import TWIN_FILE

ACME_TWIN = """\
apiVersion: agenttwin.dev/v1
kind: TwinDefinition
metadata:
  name: acme-crm
  version: 1.0.0
spec:
  tenantKey: tenant
  initialState:
    contacts:
      C-1: {name: Ada, tenant: acme}
      C-2: {name: Bob, tenant: other}
  tools:
    get_contact:
      risk: READ
      tenantPath: "contacts.{contact_id}"
      handler:
        kind: read
        path: "contacts.{contact_id}"
"""

ACME_SCENARIO = """\
apiVersion: agenttwin.dev/v1
kind: Scenario
metadata:
  name: acme-lookup
  severity: high
spec:
  twin: {twin}
  input:
    message: "Who is C-1?"
    context:
      tenant: acme
  expectations:
    - id: looked-up
      type: toolCalled
      tool: get_contact
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def acme(tmp_path: Path) -> dict[str, Path]:
    files = {
        "twin": tmp_path / "acme-twin.yaml",
        "scenario": tmp_path / "acme-lookup.yaml",
        "versioned": tmp_path / "acme-v2.yaml",
        "script": tmp_path / "agent.yaml",
    }
    files["twin"].write_text(ACME_TWIN)
    files["scenario"].write_text(ACME_SCENARIO.format(twin="acme-crm"))
    files["versioned"].write_text(ACME_SCENARIO.format(twin="acme-crm@2.0.0").replace("acme-lookup", "acme-v2"))
    files["script"].write_text(
        json.dumps(
            {
                "default": {
                    "calls": [{"tool": "get_contact", "arguments": {"contact_id": "C-1"}}],
                    "reply": "Ada",
                    "claimed_outcome": "SUCCESS",
                }
            }
        )
    )
    return files


@pytest.mark.parametrize("command", ["simulate", "evaluate"])
def test_a_suite_for_another_twin_never_runs_on_the_default(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, acme: dict[str, Path], command: str
) -> None:
    agent = f"script:{acme['script']}"
    argv = (
        ["simulate", "--agent", agent]
        if command == "simulate"
        else ["evaluate", "--baseline", agent, "--candidate", agent, "--data-dir", str(tmp_path / "data")]
    )
    code, out, err = run(capsys, *argv, "--suite", str(acme["scenario"]))
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert f"{acme['scenario']}:7: spec.twin: scenario 'acme-lookup' is written for twin 'acme-crm'" in err
    assert "--twin" in err


def test_the_twin_it_names_runs_it_and_an_explicit_mismatch_is_noted(
    capsys: pytest.CaptureFixture[str], acme: dict[str, Path]
) -> None:
    agent = f"script:{acme['script']}"
    code, out, err = run(
        capsys, "simulate", "--agent", agent, "--suite", str(acme["scenario"]), "--twin", str(acme["twin"]), "--json"
    )
    assert code == 0 and err == ""
    assert json.loads(out)[0]["verdict"]["status"] == "PASSED"
    # written for acme-crm@2.0.0, run on acme-crm 1.0.0 because --twin says so: allowed, and said
    code, out, err = run(
        capsys, "simulate", "--agent", agent, "--suite", str(acme["versioned"]), "--twin", str(acme["twin"]), "--json"
    )
    assert code == 0
    assert err == (
        "agenttwin: note: scenario 'acme-v2' is written for twin 'acme-crm@2.0.0', not for 'acme-crm@1.0.0';"
        " running it there as --twin asks\n"
    )


def test_scenario_check_refuses_a_tool_typo(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    typo = tmp_path / "typo.yaml"
    typo.write_text(
        ACME_SCENARIO.format(twin="demo-co-support").replace(
            "toolCalled\n      tool: get_contact",
            "toolNotCalled\n      tool: export_customer_dta\n      critical: true",
        )
    )
    code, out, err = run(capsys, "scenario", "check", str(typo), "--twin", "demo")
    assert code == 2 and out == ""
    assert f"{typo}:15: spec.expectations[0].tool: 'export_customer_dta' is not a tool of the twin" in err
    assert "did you mean 'export_customer_data'" in err


def test_scenario_check_refuses_tags(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    tagged = tmp_path / "tagged.yaml"
    tagged.write_text(
        ACME_SCENARIO.format(twin="acme-crm").replace("    context:\n", "    context: !!python/object:os.system\n")
    )
    code, _, err = run(capsys, "scenario", "check", str(tagged))
    assert code == 2
    assert f"{tagged}:10: spec.input.context: YAML tags are not allowed (found !!python/object:os.system)" in err


def test_twin_call_says_when_tenant_checks_are_off(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    calls = tmp_path / "calls.jsonl"
    calls.write_text(json.dumps({"tool": "lookup_order", "arguments": {"order_id": "ORD-2001"}}) + "\n")
    code, out, err = run(capsys, "twin", "call", str(TWIN_FILE), "--calls", str(calls), "--json")
    assert code == 0
    assert err == (
        "agenttwin: note: tenant checks are off: no --tenant and no scenario tenant,"
        " so every tenant's records are reachable\n"
    )
    assert json.loads(out)["records"][0]["status"] == "ok"  # another tenant's order, served
    code, out, err = run(capsys, "twin", "call", "demo", "--calls", str(calls), "--tenant", "demo-co", "--json")
    assert code == 0 and err == ""
    assert json.loads(out)["records"][0]["status"] == "denied"

"""`python:module:attr` agents: objects with run(), classes, plain callables, and clear spec errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from producers.agents.contract import AgentRequest, AgentRunError
from producers.agents.errors import AgentSpecError
from producers.agents.python_agent import load_python_agent

AGENT_MODULE = '''
from producers.agents.contract import AgentResult

def answer(request):
    return AgentResult(output="hi " + request.message, claimed_outcome="SUCCESS",
                       business_outcome=None, status="completed")

class ByClass:
    name = "by-class"
    version = "2.0.0"
    model_kind = "llm"

    def run(self, request):
        return answer(request)

by_object = ByClass()

def not_a_result(request):
    return {"output": "dict"}

class NeedsArgs:
    def __init__(self, x):
        self.x = x

class Holder:
    inner = by_object

PLAIN = 3
'''


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "byo_agent_mod.py").write_text(textwrap.dedent(AGENT_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "byo_agent_mod"


def request() -> AgentRequest:
    return AgentRequest(
        message="there", context={}, tenant="t", customer_id=None, tools=(), client=object(),  # type: ignore[arg-type]
        session_id="s",
    )


@pytest.mark.parametrize(
    ("attr", "name", "version", "kind"),
    [
        ("answer", "byo_agent_mod:answer", "unversioned", "unknown"),
        ("ByClass", "by-class", "2.0.0", "llm"),
        ("by_object", "by-class", "2.0.0", "llm"),
        ("Holder.inner", "by-class", "2.0.0", "llm"),
    ],
)
def test_loads_and_runs(module: str, attr: str, name: str, version: str, kind: str) -> None:
    agent = load_python_agent(f"python:{module}:{attr}")
    assert (agent.name, agent.version, agent.model_kind) == (name, version, kind)
    assert agent.run(request()).output == "hi there"


def test_prefix_is_optional(module: str) -> None:
    assert load_python_agent(f"{module}:answer").run(request()).claimed_outcome == "SUCCESS"


def test_wrong_return_type_is_an_agent_error(module: str) -> None:
    with pytest.raises(AgentRunError) as failed:
        load_python_agent(f"python:{module}:not_a_result").run(request())
    assert failed.value.finding == "AGENT_ERROR"
    assert "dict" in failed.value.message


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("python:", "incomplete"),
        ("python:only_module", "incomplete"),
        ("python:no_such_module_xyz:agent", "cannot import 'no_such_module_xyz'"),
        ("python:byo_agent_mod:missing", "has no attribute 'missing'"),
        ("python:byo_agent_mod:NeedsArgs", "cannot create NeedsArgs()"),
        ("python:byo_agent_mod:PLAIN", "neither callable"),
    ],
)
def test_spec_errors(module: str, spec: str, words: str) -> None:
    with pytest.raises(AgentSpecError) as failed:
        load_python_agent(spec)
    assert words in str(failed.value)
    assert "\n" not in str(failed.value)


def test_import_error_inside_the_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "byo_broken_mod.py").write_text("import definitely_not_installed_pkg\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(AgentSpecError) as failed:
        load_python_agent("python:byo_broken_mod:agent")
    assert "ModuleNotFoundError" in str(failed.value)

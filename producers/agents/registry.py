"""Turn an agent spec string into an Agent.

`demo:<version>` (the Demo Co agent, scripted planner), `script:<path>` (a scripted agent file),
`http://host:port[#VERSION]` / `https://…` (any agent behind the HTTP interface), `python:module:attr`.
"""

from __future__ import annotations

from producers.agents.contract import Agent
from producers.agents.demo_agent import DemoAgent
from producers.agents.errors import AgentSpecError
from producers.agents.script_agent import ScriptAgent
from twin_engine.documents import demo_manifest, demo_manifest_versions
from twin_engine.errors import DefinitionError

SUPPORTED_KINDS = ("demo", "script", "http", "https", "python")
_USAGE = "use demo:<version>, script:<path>, http://host:port[#VERSION] or python:module:attr"


def resolve_agent(spec: str) -> Agent:
    kind, sep, rest = spec.partition(":")
    kind = kind.strip().lower()
    if not sep or not rest.strip():
        raise AgentSpecError(f"agent spec '{spec}' is incomplete; {_USAGE}")
    value = rest.strip()
    if kind == "demo":
        versions = demo_manifest_versions()
        if value not in versions:
            known = ", ".join(versions)
            raise AgentSpecError(f"unknown demo agent version '{value}'; known versions: {known}")
        try:
            return DemoAgent(demo_manifest(value))
        except DefinitionError as exc:
            raise AgentSpecError(f"demo agent {value}: {exc}") from None
    if kind == "script":
        return ScriptAgent(value)
    if kind in ("http", "https"):
        from producers.agents.http_agent import HttpAgent

        return HttpAgent.from_spec(spec.strip())
    if kind == "python":
        from producers.agents.python_agent import load_python_agent

        return load_python_agent(spec.strip())
    raise AgentSpecError(f"agent spec '{spec}': unknown agent kind '{kind}'; {_USAGE}")

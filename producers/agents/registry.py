"""Turn an agent spec string into an Agent.

`demo:<version>` (the Demo Co agent, scripted planner), `demo:<version>+anthropic[/<model>]` (the same
manifest planned by a real Anthropic model: opt-in, labelled `llm`, needs ANTHROPIC_API_KEY),
`script:<path>` (a scripted agent file), `airline:careful|careless` (the airline world's scripted agents),
`http://host:port[/path][?timeout=SECONDS][&name=NAME][#VERSION]` /
`https://…` (any agent behind the HTTP interface; `timeout` bounds one case, default
AGENTTWIN_AGENT_HTTP_TIMEOUT_S or 120 s; `name` is its display name, else the one its replies give),
`python:module:attr`.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from producers.agents.contract import Agent
from producers.agents.demo_agent import DemoAgent, PlannerFactory
from producers.agents.errors import AgentSpecError
from producers.agents.script_agent import ScriptAgent
from twin_engine.documents import demo_manifest, demo_manifest_versions
from twin_engine.errors import DefinitionError

if TYPE_CHECKING:
    from producers.agents.http_agent import HttpAgent
    from producers.agents.settings import AgentSettings

AGENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")
SUPPORTED_KINDS = ("demo", "script", "airline", "http", "https", "python")
LLM_PLANNERS = ("anthropic",)  # what may follow `+` in a demo spec
_USAGE = (
    "use demo:<version>[+anthropic[/<model>]], script:<path>, airline:careful|careless, "
    "http://host:port[?timeout=S][&name=NAME][#VERSION] or python:module:attr"
)


def close_agent(agent: Agent) -> None:
    """Release what an agent holds (an HTTP agent's twin endpoint); most agents hold nothing."""
    close = getattr(agent, "close", None)
    if callable(close):
        close()


def resolve_agent(spec: str) -> Agent:
    kind, sep, rest = spec.partition(":")
    kind = kind.strip().lower()
    if not sep or not rest.strip():
        raise AgentSpecError(f"agent spec '{spec}' is incomplete; {_USAGE}")
    value = rest.strip()
    if kind == "demo":
        value, plus, llm = (part.strip() for part in value.partition("+"))
        versions = demo_manifest_versions()
        if value not in versions:
            known = ", ".join(versions)
            raise AgentSpecError(f"unknown demo agent version '{value}'; known versions: {known}")
        planner = _llm_planner(spec, llm) if plus else None
        try:
            return DemoAgent(demo_manifest(value), planner=planner)
        except DefinitionError as exc:
            raise AgentSpecError(f"demo agent {value}: {exc}") from None
    if kind == "script":
        return ScriptAgent(value)
    if kind == "airline":
        return _airline_agent(value)
    if kind in ("http", "https"):
        return _http_agent(spec.strip())
    if kind == "python":
        from producers.agents.python_agent import load_python_agent

        return load_python_agent(spec.strip())
    raise AgentSpecError(f"agent spec '{spec}': unknown agent kind '{kind}'; {_USAGE}")


def check_agent_spec(spec: str, role: str | None = None) -> str | None:
    """Resolve `spec` and let it go again: a bad spec (or a missing key) raises AgentSpecError up front.

    With `role` ("baseline", "candidate", "agent"), an HTTP agent is also probed (producers/agents/preflight.py):
    a URL that leads to no agent raises AgentMisconfiguredError; the probe's note, if any, is returned."""
    from producers.agents.http_agent import HttpAgent

    agent = resolve_agent(spec)
    try:
        if role is not None and isinstance(agent, HttpAgent):
            from producers.agents.preflight import preflight

            return preflight(agent, role).note
        return None
    finally:
        close_agent(agent)


def _settings() -> AgentSettings:
    from producers.agents.settings import load_agent_settings

    return load_agent_settings()


def _llm_planner(spec: str, choice: str) -> PlannerFactory:
    """`anthropic` or `anthropic/<model>` (default model: AGENTTWIN_AGENT_LLM_MODEL)."""
    provider, _, model = choice.strip().partition("/")
    if provider not in LLM_PLANNERS:
        raise AgentSpecError(
            f"agent spec '{spec}': unknown model '{provider}' after '+'; use +anthropic or +anthropic/<model>"
        )
    from producers.agents.llm_planner import AnthropicPlannerFactory

    return AnthropicPlannerFactory(_settings().anthropic_config(model.strip() or None))


def _http_agent(spec: str) -> HttpAgent:
    """An HTTP agent; `?timeout=SECONDS` and `?name=NAME` are ours (taken off the URL), any other query is
    refused."""
    from producers.agents.http_agent import HttpAgent

    parts = urlsplit(spec)
    query = parse_qsl(parts.query, keep_blank_values=True)
    timeout_s: float | None = None
    agent_name: str | None = None
    for name, raw in query:
        if name == "name":
            agent_name = raw.strip()
            if not AGENT_NAME.fullmatch(agent_name):
                raise AgentSpecError(f"agent spec '{spec}': name must be 1-100 letters, digits, '.', '_', '-' or '/'")
            continue
        if name != "timeout":
            raise AgentSpecError(
                f"agent spec '{spec}': unknown query parameter '{name}'; only timeout=SECONDS and name=NAME"
            )
        try:
            timeout_s = float(raw)
        except ValueError:
            timeout_s = math.nan
        if not (math.isfinite(timeout_s) and timeout_s > 0):
            raise AgentSpecError(f"agent spec '{spec}': timeout must be a positive number of seconds")
    if timeout_s is None:
        timeout_s = _settings().http_timeout_s
    bare = urlunsplit((parts.scheme, parts.netloc, parts.path, "", parts.fragment))
    return HttpAgent.from_spec(bare, timeout_s=timeout_s, name=agent_name)


def with_agent_name(spec: str, name: str) -> str:
    """`spec` with the operator's display name (`--candidate-name`): `?name=` on an HTTP agent's URL."""
    kind = spec.partition(":")[0].strip().lower()
    if kind not in ("http", "https"):
        raise AgentSpecError(f"a display name is for HTTP agents; '{spec}' names itself")
    if not AGENT_NAME.fullmatch(name.strip()):
        raise AgentSpecError(f"agent name '{name}' must be 1-100 letters, digits, '.', '_', '-' or '/'")
    parts = urlsplit(spec.strip())
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "name"]
    query.append(("name", name.strip()))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query, safe="/"), parts.fragment))


def _airline_agent(version: str) -> Agent:
    """`airline:careful` / `airline:careless`: the airline world's scripted agent versions."""
    from agenttwin.worlds.airline import AGENT_DIR, AGENT_VERSIONS

    if version not in AGENT_VERSIONS:
        raise AgentSpecError(f"unknown airline agent version '{version}'; known versions: {', '.join(AGENT_VERSIONS)}")
    agent = ScriptAgent(AGENT_DIR / f"{version}.yaml")
    agent.name, agent.version = f"airline:{version}", version
    return agent

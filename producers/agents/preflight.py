"""Before any case runs: is each HTTP agent there, at that URL, answering JSON?

A wrong URL is the operator's mistake, not the agent's behaviour: graded, it would read as nine new
critical failures. So `evaluate` and `simulate` first send each HTTP agent one request, `POST {url}/run`
with `"preflight": true`, and stop with one line naming the URL (exit 2) when

- nothing accepts the connection (refused, no such host, connect timeout),
- the endpoint is not there: 404 or 405 (e.g. a URL that already ends in `/run`), or 404 UNKNOWN_VERSION
  for a pinned `#VERSION`,
- a 2xx reply is not a JSON object (a web page, a proxy's banner).

Anything else lets the evaluation go on: a slow, failing (5xx), refusing (401/403) or picky (400/422)
agent is behaving, and how it behaves on each case is evidence, graded case by case. The probe is a
well-formed run request with no tools (`tools: []`, no `tools_base_url`): an agent that does not know the
`preflight` flag answers it like any short request; the adapters and the contract let an agent answer it at
once (schemas/json/agent-run-request.v1.schema.json).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from producers.agents.errors import AgentSpecError
from producers.agents.http_agent import HttpAgent
from producers.agents.http_tool_client import shared_ssl_context

PREFLIGHT_INPUT = "AgentTwin preflight: is this agent answering? No tools are available for this request."
PREFLIGHT_SESSION = "agenttwin-preflight"
MAX_PREFLIGHT_S = 30.0


class AgentMisconfiguredError(AgentSpecError):
    """The agent's URL does not lead to an agent: one line naming the URL (the CLI exits 2)."""


@dataclass(frozen=True)
class PreflightResult:
    url: str  # the URL asked: `{base}/run`
    status: int | None  # None: no answer in time
    agent_name: str | None = None
    agent_version: str | None = None
    note: str | None = None  # why the run goes on although the answer was not a reply (shown on stderr)


def preflight_body(agent: HttpAgent) -> dict[str, Any]:
    body: dict[str, Any] = {
        "preflight": True,
        "input": PREFLIGHT_INPUT,
        "session_id": PREFLIGHT_SESSION,
        "tool_headers": {},
        "tools": [],
        "run_context": {"source": "preflight"},
        "context": {},
    }
    if agent.pinned_version:
        body["agent_version"] = agent.pinned_version
    return body


def preflight(agent: HttpAgent, role: str = "agent") -> PreflightResult:
    """Probe `agent` once; a misconfiguration raises AgentMisconfiguredError (`role`: "baseline", …)."""
    url = f"{agent.url}/run"
    who = "the agent" if role == "agent" else f"the {role} agent"
    timeout = httpx.Timeout(min(agent.timeout_s, MAX_PREFLIGHT_S), connect=agent.connect_timeout_s)
    try:
        with httpx.Client(timeout=timeout, trust_env=False, verify=shared_ssl_context()) as http:
            response = http.post(url, json=preflight_body(agent), headers=agent.request_headers())
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise AgentMisconfiguredError(
            f"{who} at {url} cannot be reached ({reason}); is it running at that address?"
        ) from None
    except httpx.TimeoutException:
        return PreflightResult(url, None, note=f"{who} at {url} did not answer the preflight in time")
    except httpx.TransportError as exc:
        raise AgentMisconfiguredError(
            f"{who} at {url} broke the connection ({' '.join(str(exc).split()) or type(exc).__name__})"
        ) from None
    status = response.status_code
    code = _error_code(response.content)
    if status == 404 and code == "UNKNOWN_VERSION":
        raise AgentMisconfiguredError(f"{who} at {url} has no version {agent.pinned_version}")
    if status in (404, 405):
        hint = (
            "; the URL already ends in /run: give the agent's base URL (AgentTwin adds /run)"
            if agent.url.endswith("/run")
            else "; is this the agent's base URL (AgentTwin adds /run)?"
        )
        raise AgentMisconfiguredError(f"{who} at {url} answered {status} to POST: no agent there{hint}")
    if 200 <= status < 300:
        data = _json_object(response.content)
        if data is None:
            kind = response.headers.get("content-type", "no content type").split(";")[0].strip()
            raise AgentMisconfiguredError(
                f"{who} at {url} answered {status} with a reply that is not a JSON object ({kind})"
            )
        return PreflightResult(url, status, _text(data.get("agent_name")), _text(data.get("agent_version")))
    return PreflightResult(url, status, note=f"{who} at {url} answered the preflight with {status}")


def _json_object(content: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(content)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _error_code(content: bytes) -> str | None:
    data = _json_object(content)
    error = data.get("error") if data is not None else None
    return str(error.get("code")) if isinstance(error, dict) and error.get("code") is not None else None


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None

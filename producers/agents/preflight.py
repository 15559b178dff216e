"""Before any case runs: is each HTTP agent there, at that URL, answering JSON?

A wrong URL is the operator's mistake, not the agent's behaviour: graded, it would read as nine new
critical failures. So `evaluate` and `simulate` first probe each HTTP agent, and stop with one line naming
the URL (exit 2) when it is plainly no agent. The probe never makes an agent work: no run, no model call, no
customer message (docs/guides/agent-preflight.md).

1. `GET {url}/healthz`, the agent contract's probe. A 200 JSON object means an agent is there (its
   `agent_name`, `agent_version` and `versions` are read; a pinned `#VERSION` missing from the versions it
   states stops the run). A refused connection stops the run.
2. Any other answer (an agent that does not serve the probe): `POST {url}/run` with `{"preflight": true}`
   and no `input`, which is no run request. It stops the run when nothing accepts the connection, on 404
   or 405 (e.g. a URL that already ends in `/run`), on 404 UNKNOWN_VERSION for a pinned `#VERSION`, and
   on a 2xx that is not a JSON object (a web page, a proxy's banner).

Anything else lets the evaluation go on with a note on stderr: a slow, failing (5xx), refusing (401/403)
or picky (400/422) agent, or one that connected and dropped a request it could not read, is there; how it
behaves on each case is evidence, graded case by case.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from producers.agents.errors import AgentSpecError
from producers.agents.http_agent import HttpAgent
from producers.agents.http_tool_client import shared_ssl_context

PROBE_PATH = "/healthz"
MAX_PREFLIGHT_S = 30.0


class AgentMisconfiguredError(AgentSpecError):
    """The agent's URL does not lead to an agent: one line naming the URL (the CLI exits 2)."""


@dataclass(frozen=True)
class PreflightResult:
    url: str  # the URL that settled it: `{base}/healthz` or `{base}/run`
    status: int | None  # None: no answer in time, or a dropped connection
    agent_name: str | None = None
    agent_version: str | None = None
    note: str | None = None  # why the run goes on although the answer was not a reply (shown on stderr)


def preflight_body(agent: HttpAgent) -> dict[str, Any]:
    """The fallback POST: no `input`, so no agent can take it for a case (the contract's preflight form)."""
    body: dict[str, Any] = {"preflight": True, "run_context": {"source": "preflight"}}
    if agent.pinned_version:
        body["agent_version"] = agent.pinned_version
    return body


def preflight(agent: HttpAgent, role: str = "agent") -> PreflightResult:
    """Probe `agent`; a misconfiguration raises AgentMisconfiguredError (`role`: "baseline", …)."""
    who = "the agent" if role == "agent" else f"the {role} agent"
    timeout = httpx.Timeout(min(agent.timeout_s, MAX_PREFLIGHT_S), connect=agent.connect_timeout_s)
    with httpx.Client(timeout=timeout, trust_env=False, verify=shared_ssl_context()) as http:
        probed = _probe(http, agent, who)
        return probed if probed is not None else _post(http, agent, who)


def _probe(http: httpx.Client, agent: HttpAgent, who: str) -> PreflightResult | None:
    """`GET /healthz`: a result when its answer settles the question, None when the POST form must."""
    url = f"{agent.url}{PROBE_PATH}"
    try:
        response = http.get(url, headers=agent.request_headers())
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise _unreachable(who, f"{agent.url}/run", exc) from None
    except httpx.HTTPError:
        return None  # connected, no valid answer: the POST form decides
    data = _json_object(response.content) if response.status_code == 200 else None
    if data is None:
        return None
    name, version = _text(data.get("agent_name")), _text(data.get("agent_version"))
    listed = data.get("versions")
    stated = {v for v in listed if isinstance(v, str)} if isinstance(listed, list) else set()
    if version:
        stated.add(version)
    pinned = agent.pinned_version
    if pinned and stated and pinned not in stated:
        raise AgentMisconfiguredError(
            f"{who} at {agent.url}/run has no version {pinned} (it serves {', '.join(sorted(stated))})"
        )
    if pinned and not stated:
        note = f"{who} at {url} states no versions; version {pinned} is checked on the first case"
        return PreflightResult(url, 200, name, None, note)
    return PreflightResult(url, 200, name, pinned or version)


def _post(http: httpx.Client, agent: HttpAgent, who: str) -> PreflightResult:
    url = f"{agent.url}/run"
    try:
        response = http.post(url, json=preflight_body(agent), headers=agent.request_headers())
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise _unreachable(who, url, exc) from None
    except httpx.TimeoutException:
        return PreflightResult(url, None, note=f"{who} at {url} did not answer the preflight in time")
    except httpx.TransportError as exc:
        # connected but no valid reply: an agent that trusts its requests may drop one it cannot read
        reason = " ".join(str(exc).split()) or type(exc).__name__
        return PreflightResult(url, None, note=f"{who} at {url} gave no valid reply to the preflight ({reason})")
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


def _unreachable(who: str, url: str, exc: Exception) -> AgentMisconfiguredError:
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return AgentMisconfiguredError(f"{who} at {url} cannot be reached ({reason}); is it running at that address?")


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

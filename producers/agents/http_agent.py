"""An agent behind HTTP (`http://host:port[#VERSION]`, spec §5.3): asked with `POST /run` once per case.

The agent reaches its tools through the twin endpoint: each case is opened there with a fresh capability
token (sent as `tool_headers`), and closed - the token revoked - as soon as the agent answers, so nothing
it does later can change the evidence. What the agent returns is a claim; the twin's records decide.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx

from producers.agents.claims import read_reply
from producers.agents.contract import AgentRequest, AgentResult, AgentRunError, ToolSpec
from producers.agents.errors import AgentSpecError
from producers.agents.http_tool_client import shared_ssl_context
from producers.twin_http import TwinEndpoint

if TYPE_CHECKING:
    from producers.twin_mcp import TwinMcpServer
    from twin_engine.case import TwinCase

JSON = Any
DEFAULT_AGENT_TIMEOUT_S = 120.0
MAX_CONNECT_TIMEOUT_S = 5.0
MAX_REPLY_BYTES = 4 << 20  # a larger reply is unreadable: AGENT_ERROR
MAX_NAME_CHARS = 100
DEFAULT_AGENT_NAME = "http-agent"  # neither the reply nor the operator named the agent


class HttpAgent:
    """Implements `Agent`. `version` is the pinned `#VERSION`, else the version the agent last reported;
    `name` is the operator's (`?name=`, `--candidate-name`), else the one the agent last reported, never its
    URL: the same agent on another port is the same agent."""

    def __init__(
        self,
        url: str,
        *,
        version: str | None = None,
        timeout_s: float = DEFAULT_AGENT_TIMEOUT_S,
        token: str | None = None,
        endpoint: TwinEndpoint | None = None,
        name: str | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.pinned_name = name
        self.name = name or DEFAULT_AGENT_NAME
        self.pinned_version = version
        self.version = version or ""
        self.model_kind = "unknown"
        self.timeout_s = timeout_s
        self.connect_timeout_s = min(timeout_s, MAX_CONNECT_TIMEOUT_S)
        self._timeout = httpx.Timeout(timeout_s, connect=self.connect_timeout_s)
        self._token = token
        self._endpoint = endpoint
        self._own_endpoint = False
        self._mcp: TwinMcpServer | None = None

    @property
    def label(self) -> str:
        """What a case names this agent by: `name:version` (like `demo:1.3.0`), or the name alone."""
        return f"{self.name}:{self.version}" if self.version else self.name

    @classmethod
    def from_spec(
        cls,
        spec: str,
        *,
        timeout_s: float = DEFAULT_AGENT_TIMEOUT_S,
        token: str | None = None,
        name: str | None = None,
    ) -> HttpAgent:
        """`http://host:port[/path][#VERSION]` or `https://…`; a bad spec raises AgentSpecError."""
        parts = urlsplit(spec.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc or not parts.hostname:
            raise AgentSpecError(f"agent spec '{spec}' is not an http:// or https:// URL with a host")
        if parts.query:
            raise AgentSpecError(f"agent spec '{spec}': a query string is not allowed")
        try:
            parts.port  # noqa: B018 - reading it validates the port
        except ValueError:
            raise AgentSpecError(f"agent spec '{spec}': the port is not valid") from None
        base = f"{parts.scheme}://{parts.netloc}{parts.path}"
        return cls(base, version=parts.fragment.strip() or None, timeout_s=timeout_s, token=token, name=name)

    # ------------------------------------------------------------ running

    def request_headers(self) -> dict[str, str]:
        """The headers of a `POST /run`: the agent's own bearer token when one is configured."""
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    def run(self, request: AgentRequest) -> AgentResult:
        """Run one case whose client is in process (it has `.case`): serve that case on the endpoint."""
        twin_case = getattr(request.client, "case", None)
        if twin_case is None:
            raise TypeError("an HTTP agent needs a request whose client holds a twin case (`.case`)")
        endpoint = self._shared_endpoint()
        deadline = getattr(twin_case, "deadline", None)
        if deadline is not None:  # the case's timeoutSeconds: a later turn waits only for what is left of it
            request = replace(request, timeout_s=max(deadline - time.monotonic(), 0.001))
        return run_http_case(self, twin_case, request, endpoint, self._shared_mcp(endpoint))

    def run_case(
        self, request: AgentRequest, *, tools_base_url: str, token: str, mcp_url: str | None = None
    ) -> AgentResult:
        """`POST /run` for one case whose twin is served at `tools_base_url` (and `mcp_url`) under `token`."""
        body = run_body(
            request, tools_base_url=tools_base_url, token=token, version=self.pinned_version, mcp_url=mcp_url
        )
        headers = self.request_headers()
        timeout = self._timeout
        if request.timeout_s is not None and request.timeout_s < self.timeout_s:  # the scenario's limit is shorter
            timeout = httpx.Timeout(request.timeout_s, connect=min(request.timeout_s, self.connect_timeout_s))
        try:
            with (
                httpx.Client(timeout=timeout, trust_env=False, verify=shared_ssl_context()) as http,
                http.stream("POST", f"{self.url}/run", json=body, headers=headers) as response,
            ):
                content = _read_bounded(response, time.monotonic() + timeout.read if timeout.read else None)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            message = f"Could not reach the agent at {self.url}: {exc}"
            raise AgentRunError("AGENT_UNREACHABLE", message) from None
        except httpx.TimeoutException:
            raise AgentRunError("AGENT_TIMEOUT", f"The agent did not answer within {timeout.read:g} s.") from None
        except httpx.TransportError as exc:
            raise AgentRunError("AGENT_ERROR", f"The agent's reply was broken: {exc}") from None
        if not 200 <= response.status_code < 300:
            raise _status_error(response.status_code, content)
        result, reported_version, reported_name = result_from_reply(content)
        if self.pinned_version and reported_version and reported_version != self.pinned_version:
            raise AgentRunError(
                "AGENT_VERSION_UNAVAILABLE",
                f"Asked for version {self.pinned_version}; the agent answered as {reported_version}.",
            )
        if not self.pinned_version and reported_version:
            self.version = reported_version
        if not self.pinned_name and reported_name:
            self.name = reported_name
        self.model_kind = result.model_kind
        return result

    # ------------------------------------------------------------ endpoint lifetime

    def _shared_endpoint(self) -> TwinEndpoint:
        if self._endpoint is None:
            self._endpoint = TwinEndpoint().start()
            self._own_endpoint = True
        return self._endpoint

    def _shared_mcp(self, endpoint: TwinEndpoint) -> TwinMcpServer:
        """The MCP face of the endpoint (started on first use, stopped by `close`)."""
        if self._mcp is None:
            from producers.twin_mcp import TwinMcpServer

            self._mcp = TwinMcpServer(endpoint).start()
        return self._mcp

    def close(self) -> None:
        """Stop the twin endpoint this agent started for itself (an endpoint passed in is left alone)."""
        if self._mcp is not None:
            self._mcp.stop()
            self._mcp = None
        if self._own_endpoint and self._endpoint is not None:
            self._endpoint.stop()
            self._endpoint = None
            self._own_endpoint = False

    def __enter__(self) -> HttpAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_http_case(
    agent: HttpAgent,
    twin_case: TwinCase,
    request: AgentRequest,
    endpoint: TwinEndpoint,
    mcp: TwinMcpServer | None = None,
) -> AgentResult:
    """Open the case on the endpoint, ask the agent, close the case (revoking the token), then judge the run.

    With `mcp` (the endpoint's MCP server) the agent is also sent the case's MCP URL: one case, two faces.

    A twin failure the twin recorded (a 500 TWIN_ERROR call) is evidence like any other call; one it could
    not even record outranks anything the agent did (the evidence is incomplete: the case is ERRORED);
    then the agent's own failure; then calls refused over the per-case cap (CALL_LIMIT_EXCEEDED).
    """
    handle = endpoint.open_case(twin_case)
    result: AgentResult | None = None
    failure: AgentRunError | None = None
    try:
        mcp_url = mcp.case_url(handle) if mcp is not None else None
        result = agent.run_case(request, tools_base_url=handle.base_url, token=handle.token, mcp_url=mcp_url)
    except AgentRunError as exc:
        failure = exc
    finally:
        usage = endpoint.close_case(handle.token)
    if usage.unrecorded_twin_errors:
        raise AgentRunError("TWIN_ERROR", f"The twin failed during the case: {usage.twin_errors[-1]}")
    if failure is not None:
        raise failure
    if usage.refused_over_limit:
        raise AgentRunError(
            "CALL_LIMIT_EXCEEDED",
            f"The agent went over the case's call limit ({usage.refused_over_limit} calls refused).",
        )
    assert result is not None
    return result


def run_body(
    request: AgentRequest, *, tools_base_url: str, token: str, version: str | None, mcp_url: str | None = None
) -> dict[str, JSON]:
    """The reference `POST /run` body of a simulation case (spec §5.3, "Simulation request").

    `mcp_url`: the same case as an MCP server. From turn 2 of a conversation on: `turn` and `conversation`
    (the earlier turns as user/assistant messages); `input` is always the user's newest message.
    """
    case_id = request.session_id.removeprefix("sim-")
    body: dict[str, JSON] = {
        "input": request.message,
        "session_id": request.session_id,
        "tools_base_url": tools_base_url,
        "tool_headers": {"Authorization": f"Bearer {token}"},
        "run_context": {"source": "simulation", "scenario_name": request.scenario_name, "case_id": case_id},
        "context": dict(request.context),
        "tools": [tool_entry(spec) for spec in request.tools],
    }
    if mcp_url is not None:
        body["mcp_url"] = mcp_url
    if request.turn > 1 or request.conversation:
        body["turn"] = request.turn
        body["conversation"] = [
            message
            for turn in request.conversation
            for message in ({"role": "user", "content": turn.user}, {"role": "assistant", "content": turn.agent})
        ]
    if version:
        body["agent_version"] = version
    if request.tenant:
        body["tenant"] = request.tenant
    if request.customer_id is not None:
        body["customer_id"] = request.customer_id
    return body


def tool_entry(spec: ToolSpec) -> dict[str, JSON]:
    """One of the case's tools as the request lists it: enough for a framework to offer it to its model."""
    return {
        "name": spec.name,
        "description": spec.description,
        "risk": spec.risk,
        "input_schema": dict(spec.input_schema) if spec.input_schema else {"type": "object"},
    }


def _read_bounded(response: httpx.Response, deadline: float | None = None) -> bytes:
    """The reply body, refused (AGENT_ERROR) past MAX_REPLY_BYTES without reading the rest, and
    (AGENT_TIMEOUT) past `deadline`: a reply that trickles in is not waited for chunk after chunk."""
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        if deadline is not None and time.monotonic() > deadline:
            raise AgentRunError("AGENT_TIMEOUT", "The agent's reply did not arrive in time.")
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise AgentRunError("AGENT_ERROR", f"The agent's reply is larger than {MAX_REPLY_BYTES >> 20} MiB.")
        chunks.append(chunk)
    return b"".join(chunks)


def _status_error(status: int, content: bytes) -> AgentRunError:
    code, message = _error_of(content)
    said = f"The agent answered {status}{f' {code}' if code else ''}{f': {message}' if message else ''}."
    if status == 404 and code == "UNKNOWN_VERSION":
        return AgentRunError("AGENT_VERSION_UNAVAILABLE", said)
    if status in (401, 403):
        return AgentRunError("AGENT_AUTH", said)
    if status in (400, 409, 413, 422):
        return AgentRunError("AGENT_REJECTED_REQUEST", said)
    if status in (408, 504):
        return AgentRunError("AGENT_TIMEOUT", said)
    return AgentRunError("AGENT_ERROR", said)


def _error_of(content: bytes) -> tuple[str | None, str | None]:
    try:
        data = json.loads(content)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None, None
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return None, None
    code, message = error.get("code"), error.get("message")
    text = " ".join(str(message).split())[:300] if message else None
    return (str(code) if code is not None else None, text)


def result_from_reply(content: bytes) -> tuple[AgentResult, str | None, str | None]:
    """The AgentResult of a 2xx `/run` body and the version and name the agent reported.

    Only a reply that cannot be parsed as a JSON object is AGENT_ERROR; a malformed field is a
    CLAIM_MALFORMED finding on the result (producers/agents/claims.py) and the case is graded as usual.
    Optional, with their defaults (schemas/json/agent-run-reply.v1.schema.json): `status` ("completed") and
    `claimed_outcome` (absent: read from `output` and marked CLAIM_INFERRED).
    """
    try:
        data = json.loads(content)
    except RecursionError:
        raise AgentRunError("AGENT_ERROR", "The agent's reply is nested too deeply to read.") from None
    except (UnicodeDecodeError, ValueError):
        raise AgentRunError("AGENT_ERROR", "The agent's reply is not JSON.") from None
    if not isinstance(data, dict):
        raise AgentRunError("AGENT_ERROR", "The agent's reply is not a JSON object.")
    result, version = read_reply(data)
    name = data.get("agent_name")
    shown = " ".join(name.split())[:MAX_NAME_CHARS] if isinstance(name, str) else ""
    return result, version, shown or None

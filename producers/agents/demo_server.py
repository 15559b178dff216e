"""The Demo Co agent behind the reference HTTP interface (spec §5.3): POST /run, GET /versions, GET /healthz.

Each run acts out the chosen manifest with the scripted planner, reaching its tools over HTTP at the
`tools_base_url` it is given (in simulations: the twin endpoint, with the case token in `tool_headers`).
Opt-in, a real model plans instead (`planner=`; `serve_cli` reads AGENTTWIN_DEMO_AGENT_MODEL=anthropic and
ANTHROPIC_API_KEY); its replies say `model_kind: llm`. A model that fails is answered 504 AGENT_TIMEOUT
(timeouts) or 502 with the finding as the code (auth, rate limit, overload, ...). Opt-in too, each run is
traced through the AgentTwin SDK (`tracing=`: producers/agents/traced.py), as a team would instrument its
service, each call naming the order it acts on as the run's subject; the reply's `trace_id` is then the run's.
"""

from __future__ import annotations

import functools
import hmac
import secrets
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from producers.agents.contract import (
    TRANSPORT_UNREACHABLE,
    AgentRequest,
    AgentResult,
    AgentRunError,
    ToolReply,
    ToolSpec,
    Turn,
)
from producers.agents.demo_agent import DemoAgent, PlannerFactory
from producers.agents.http_tool_client import DEFAULT_TOOL_TIMEOUT_S, HttpToolClient
from producers.agents.traced import TracedAgent
from producers.http_wire import AppServer, BackgroundServer, BodyError, JsonHandler, read_json_object
from producers.sdk.tracing import AgentTwin
from twin_engine.documents import AgentManifest, demo_manifest, demo_manifest_versions

JSON = Any
AGENT_NAME = "support-refund-agent"
DEFAULT_PORT = 8090
DEFAULT_TENANT = "demo-co"
MAX_INPUT_CHARS = 8000
MAX_BODY_BYTES = 64 * 1024


class _InvalidRequest(Exception):
    pass


@dataclass(frozen=True)
class RunRequest:
    input: str
    customer_id: str | None
    tenant: str
    agent_version: str | None
    session_id: str
    tools_base_url: str | None
    tool_headers: dict[str, str]
    contained: bool
    context: dict[str, JSON]
    run_context: dict[str, JSON]
    turn: int = 1
    conversation: tuple[Turn, ...] = ()  # the earlier turns of a multi-turn case


def parse_run_request(body: dict[str, JSON]) -> RunRequest:
    """Validate a `POST /run` body; problems raise _InvalidRequest with a one-line reason."""
    text = body.get("input")
    if not isinstance(text, str) or not text.strip():
        raise _InvalidRequest("input is required and must be a non-empty string.")
    if len(text) > MAX_INPUT_CHARS:
        raise _InvalidRequest(f"input is longer than {MAX_INPUT_CHARS} characters.")
    version = body.get("agent_version", body.get("version"))
    headers = _field(body, "tool_headers", dict) or {}
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise _InvalidRequest("tool_headers must map strings to strings.")
    return RunRequest(
        input=text,
        customer_id=_field(body, "customer_id", str),
        tenant=_field(body, "tenant", str) or DEFAULT_TENANT,
        agent_version=_checked("agent_version", version, str),
        session_id=_field(body, "session_id", str) or f"session-{secrets.token_hex(8)}",
        tools_base_url=_field(body, "tools_base_url", str),
        tool_headers=dict(headers),
        contained=bool(_field(body, "contained", bool)),
        context=dict(_field(body, "context", dict) or {}),
        run_context=dict(_field(body, "run_context", dict) or {}),
        turn=_turn(body),
        conversation=_conversation(body),
    )


MAX_TURNS = 20


def _turn(body: dict[str, JSON]) -> int:
    turn = body.get("turn", 1)
    if isinstance(turn, bool) or not isinstance(turn, int) or not 1 <= turn <= MAX_TURNS:
        raise _InvalidRequest(f"turn must be an integer from 1 to {MAX_TURNS}.")
    return turn


def _conversation(body: dict[str, JSON]) -> tuple[Turn, ...]:
    """`conversation`: the earlier turns as alternating user / assistant messages."""
    messages = _field(body, "conversation", list) or []
    if len(messages) % 2 or len(messages) > 2 * MAX_TURNS:
        raise _InvalidRequest("conversation must hold user/assistant message pairs (at most 20 turns).")
    turns: list[Turn] = []
    for user, agent in zip(messages[::2], messages[1::2], strict=True):
        for message, role in ((user, "user"), (agent, "assistant")):
            valid = isinstance(message, dict) and message.get("role") == role
            if not (valid and isinstance(message.get("content"), str)):
                raise _InvalidRequest("conversation messages alternate user and assistant roles, with text content.")
            if len(message["content"]) > MAX_INPUT_CHARS:
                raise _InvalidRequest(f"a conversation message is longer than {MAX_INPUT_CHARS} characters.")
        turns.append(Turn(user["content"], agent["content"]))
    return tuple(turns)


def _field(body: dict[str, JSON], name: str, kind: type) -> Any:
    return _checked(name, body.get(name), kind)


def _checked(name: str, value: JSON, kind: type) -> Any:
    if value is not None and not isinstance(value, kind):
        raise _InvalidRequest(f"{name} must be a{'n' if kind is dict else ''} {_KIND_NAMES[kind]}.")
    return value


_KIND_NAMES: dict[type, str] = {str: "string", dict: "object", bool: "boolean", list: "array"}


@functools.cache
def _manifest(version: str) -> AgentManifest:
    return demo_manifest(version)


class _NoTools:
    """The client of a run given no `tools_base_url`: every tool is out of reach."""

    def call(self, tool: str, arguments: dict[str, JSON], headers: dict[str, str] | None = None) -> ToolReply:
        return ToolReply(http_status=0, transport_error=TRANSPORT_UNREACHABLE)

    def search_kb(self, query: str, limit: int = 3) -> list[dict[str, JSON]]:
        return []


def demo_subject(tool: str, arguments: dict[str, JSON]) -> str | None:
    """Demo Co's business subject: the order a call names (what the payment system verifies by)."""
    order = arguments.get("order_id") if isinstance(arguments, dict) else None
    return f"order:{order}" if isinstance(order, str) and order else None


def run_demo_agent(
    run: RunRequest,
    version: str,
    *,
    tool_timeout_s: float,
    planner: PlannerFactory | None = None,
    tracing: AgentTwin | None = None,
) -> tuple[AgentResult, str | None]:
    """The run's result, and its trace id when `tracing` instruments it (producers/agents/traced.py)."""
    manifest = _manifest(version)
    agent: DemoAgent | TracedAgent = DemoAgent(manifest, contained=run.contained, planner=planner)
    if tracing is not None:
        agent = TracedAgent(agent, tracing, name=AGENT_NAME, subject_of=demo_subject)
    tools = tuple(
        ToolSpec(t.name, t.description or "", t.risk or "", dict(t.input_schema) if t.input_schema else None)
        for t in manifest.tools
    )
    client: HttpToolClient | _NoTools = _NoTools()
    if run.tools_base_url:
        client = HttpToolClient(
            run.tools_base_url, tenant=run.tenant, headers=run.tool_headers, timeout_s=tool_timeout_s
        )
    request = AgentRequest(
        message=run.input,
        context=dict(run.context),
        tenant=run.tenant,
        customer_id=run.customer_id,
        tools=tools,
        client=client,
        session_id=run.session_id,
        scenario_name=str(run.run_context.get("scenario_name") or ""),
        turn=run.turn,
        conversation=run.conversation,
    )
    try:
        result = agent.run(request)
        return result, agent.last_trace_id if isinstance(agent, TracedAgent) else None
    finally:
        if isinstance(client, HttpToolClient):
            client.close()


def run_reply(result: AgentResult, version: str, trace_id: str | None = None) -> dict[str, JSON]:
    """The 200 body of `POST /run` (spec §5.3), plus the token estimate and accounted backoff. `trace_id`: the
    run's own when it was traced, else a fresh one."""
    return {
        "output": result.output,
        "trace_id": trace_id or secrets.token_hex(16),
        "status": result.status,
        "agent_name": AGENT_NAME,
        "agent_version": version,
        "model": result.model,
        "model_kind": result.model_kind,
        "steps": result.steps,
        "claimed_outcome": result.claimed_outcome,
        "business_outcome": result.business_outcome,
        "tool_calls": [asdict(call) for call in result.tool_calls],
        "token_estimate": result.token_estimate,
        "backoff_ms": result.backoff_ms,
    }


class DemoAgentServer(BackgroundServer):
    """The demo agent on 127.0.0.1 (port 0 = any free port); `start()` serves in a background thread."""

    thread_name = "demo-agent"

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        token: str | None = None,
        tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
        planner: PlannerFactory | None = None,
        tracing: AgentTwin | None = None,
    ) -> None:
        self.token = token
        self.tool_timeout_s = tool_timeout_s
        self.planner = planner  # None: the scripted planner
        self.tracing = tracing  # None: runs are not traced; else each run through the AgentTwin SDK
        self._server = AppServer((host, port), self, _DemoHandler)

    @property
    def url(self) -> str:
        return self.address

    def authorised(self, authorization: str | None) -> bool:
        if self.token is None:
            return True
        expected = f"Bearer {self.token}".encode()
        return hmac.compare_digest((authorization or "").strip().encode(), expected)


class _DemoHandler(JsonHandler):
    server: AppServer[DemoAgentServer]
    max_body_bytes = MAX_BODY_BYTES

    def do_GET(self) -> None:
        path = self.route("/healthz", "/versions")
        if path == "/healthz":  # the agent contract's probe: who answers, which versions
            self.send_json(200, {"status": "ok", "agent_name": AGENT_NAME, "versions": demo_manifest_versions()})
        elif path == "/versions":
            versions = demo_manifest_versions()
            self.send_json(200, {"agent": AGENT_NAME, "versions": versions, "latest": versions[-1]})

    def do_POST(self) -> None:
        if not self.route("/run"):
            return
        app = self.server.app
        try:
            raw = self.read_body()
        except BodyError as exc:
            code = "REQUEST_TOO_LARGE" if exc.status == 413 else exc.code
            self.send_error_json(exc.status, code, exc.message)
            return
        if not app.authorised(self.headers.get("Authorization")):
            self.send_error_json(401, "UNAUTHORIZED", "A valid bearer token is required.")
            return
        try:
            run = parse_run_request(read_json_object(raw) if raw.strip() else _missing_body())
        except BodyError as exc:
            self.send_error_json(400, "INVALID_BODY", exc.message)
            return
        except _InvalidRequest as exc:
            self.send_error_json(400, "INVALID_REQUEST", str(exc))
            return
        versions = demo_manifest_versions()
        version = run.agent_version or versions[-1]
        if version not in versions:
            self.send_error_json(404, "UNKNOWN_VERSION", f"Unknown agent version '{version}'.")
            return
        try:
            result, trace_id = run_demo_agent(
                run, version, tool_timeout_s=app.tool_timeout_s, planner=app.planner, tracing=app.tracing
            )
        except AgentRunError as exc:  # the model failed: say which way, so the caller grades it honestly
            status = 504 if exc.finding == "AGENT_TIMEOUT" else 502
            self.send_error_json(status, exc.finding, exc.message)
            return
        except Exception as exc:  # boundary: a failed run is answered as AGENT_ERROR, with its reason
            self.send_error_json(500, "AGENT_ERROR", f"{type(exc).__name__}: {' '.join(str(exc).split())}")
            return
        self.send_json(200, run_reply(result, version, trace_id))


def _missing_body() -> dict[str, JSON]:
    raise BodyError("A JSON object body is required.")


def planner_from_settings() -> PlannerFactory | None:
    """The model the settings choose (AGENTTWIN_DEMO_AGENT_MODEL); no key for anthropic -> AgentSpecError."""
    from producers.agents.settings import ANTHROPIC, load_agent_settings

    settings = load_agent_settings()
    if settings.demo_agent_model != ANTHROPIC:
        return None
    from producers.agents.llm_planner import AnthropicPlannerFactory

    return AnthropicPlannerFactory(settings.anthropic_config())


def serve(host: str = "127.0.0.1", port: int = DEFAULT_PORT, *, token: str | None = None) -> None:
    """Serve the demo agent in the foreground until interrupted."""
    server = DemoAgentServer(host, port, token=token, planner=planner_from_settings())
    try:
        server.serve_forever()
    finally:
        server.stop()


def serve_cli(
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    token: str | None = None,
    announce: Callable[[str], None] = print,
) -> int:
    """`agenttwin demo-agent serve [--host] [--port]`: serves until Ctrl-C; returns the exit code."""
    planner = planner_from_settings()  # before binding: a missing key fails with one line
    server = DemoAgentServer(host, port, token=token, planner=planner)
    model = "scripted planner" if planner is None else f"{planner.model_name} ({planner.kind})"
    announce(
        f"Demo agent ({AGENT_NAME}) listening on {server.url} (POST /run, GET /versions, GET /healthz); model: {model}"
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        announce("Demo agent stopped.")
    finally:
        server.stop()
    return 0

"""What every framework adapter shares: the case, its twin-bound tools, the /run server and the reply.

A tool call goes to the twin (`POST {tools_base_url}/tools/{name}` with the case's token) and the model
reads the reply as the demo agent's model does (`render_reply`: the HTTP status and body, or the transport
failure), so an error is never hidden from it. The adapter keeps its own account of the calls for the
reply's `tool_calls`; like every claim it is shown, never graded.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from producers.agents.contract import (
    AGENT_STATUSES,
    AgentRequest,
    AgentResult,
    ClaimedCall,
    ClaimFinding,
    ToolClient,
    ToolReply,
)
from producers.agents.conversation import KB_SEARCH_TOOL, reply_status, retry_after_seconds
from producers.agents.http_tool_client import DEFAULT_TOOL_TIMEOUT_S, HttpToolClient
from producers.agents.inferred_claim import CLAIM_INFERRED, infer_claim
from producers.agents.llm_planner import KB_TOOL, render_reply
from producers.http_wire import AppServer, BackgroundServer, BodyError, JsonHandler, read_json_object

JSON = Any
CONTEXT_PREFIX = "Request context (set by the support platform): "
MAX_REQUEST_BYTES = 1 << 20


@dataclass(frozen=True)
class TwinTool:
    """One of the case's tools, as a framework offers it to its model."""

    name: str
    description: str
    input_schema: dict[str, JSON]

    @staticmethod
    def from_entry(entry: Mapping[str, JSON]) -> TwinTool:
        schema = entry.get("input_schema")
        risk = str(entry.get("risk") or "")
        text = " ".join(
            p for p in (str(entry.get("description") or "").strip(), f"(risk: {risk})" if risk else "") if p
        )
        return TwinTool(
            str(entry["name"]), text or str(entry["name"]), dict(schema) if isinstance(schema, dict) else {}
        )


KB_SEARCH = TwinTool(KB_SEARCH_TOOL, str(KB_TOOL.get("description", "")), dict(KB_TOOL["input_schema"]))


@dataclass
class Case:
    """One case as the agent sees it: the user's message (with the platform's context), the earlier turns,
    and its tools. `messages` is what a chat framework is invoked with."""

    input: str
    context: dict[str, JSON]
    tools: tuple[TwinTool, ...]
    client: ToolClient
    conversation: tuple[dict[str, str], ...] = ()
    calls: list[ClaimedCall] = field(default_factory=list)

    @property
    def user_message(self) -> str:
        """The message, then what the platform knows about the request, kept apart from it."""
        known = {k: v for k, v in self.context.items() if v is not None}
        if not known:
            return self.input
        return f"{self.input}\n\n{CONTEXT_PREFIX}{json.dumps(known, sort_keys=True, default=str)}"

    @property
    def messages(self) -> list[dict[str, str]]:
        return [*self.conversation, {"role": "user", "content": self.user_message}]

    def call(self, tool: str, arguments: Mapping[str, JSON]) -> str:
        """Call a tool of this case on the twin; the text its model reads (errors included)."""
        args = dict(arguments)
        if tool == KB_SEARCH_TOOL:
            limit = args.get("limit", 3)
            documents = self.client.search_kb(str(args.get("query", "")), limit if isinstance(limit, int) else 3)
            reply = ToolReply(http_status=200, body={"result": {"documents": documents}})
        else:
            reply = self.client.call(tool, args)
        self.calls.append(
            ClaimedCall(tool, args, reply_status(reply), reply.error_code, retry_after_seconds(reply), attempt=1)
        )
        return render_reply(reply)


@dataclass(frozen=True)
class Outcome:
    """What a framework run ended with: the final answer and how the run ended (an AGENT_STATUSES value)."""

    output: str
    status: str = "completed"


Runner = Callable[[Case], Outcome]
B = TypeVar("B")  # what a framework's user hands over: a graph builder, an agent builder, a tool loop


def case_from_request(body: Mapping[str, JSON], *, tool_timeout_s: float) -> tuple[Case, HttpToolClient | None]:
    """The case of a `/run` body; its HTTP tool client (to close) when the body gives a tools_base_url."""
    context = dict(body.get("context") or {})
    for key in ("customer_id", "tenant"):
        if body.get(key) is not None:
            context.setdefault(key, body[key])
    tools = tuple(TwinTool.from_entry(t) for t in body.get("tools") or () if isinstance(t, dict) and t.get("name"))
    if all(t.name != KB_SEARCH_TOOL for t in tools):
        tools += (KB_SEARCH,)
    base = body.get("tools_base_url")
    client: HttpToolClient | None = None
    if isinstance(base, str) and base:
        headers = {str(k): str(v) for k, v in dict(body.get("tool_headers") or {}).items()}
        tenant = body.get("tenant")
        client = HttpToolClient(base, tenant=str(tenant) if tenant else None, headers=headers, timeout_s=tool_timeout_s)
    conversation = tuple(
        {"role": str(m["role"]), "content": str(m["content"])}
        for m in body.get("conversation") or ()
        if isinstance(m, dict) and m.get("role") in ("user", "assistant") and isinstance(m.get("content"), str)
    )
    case = Case(str(body.get("input") or ""), context, tools, client or _NoTools(), conversation)
    return case, client


def case_from_agent_request(request: AgentRequest) -> Case:
    """The case of an in-process run (`python:` spec)."""
    context = dict(request.context)
    if request.customer_id:
        context.setdefault("customer_id", request.customer_id)
    if request.tenant:
        context.setdefault("tenant", request.tenant)
    tools = tuple(
        TwinTool(t.name, f"{t.description} (risk: {t.risk})".strip(), dict(t.input_schema or {})) for t in request.tools
    )
    if all(t.name != KB_SEARCH_TOOL for t in tools):
        tools += (KB_SEARCH,)
    return Case(request.message, context, tools, request.client)


def reply_of(case: Case, outcome: Outcome, *, name: str, version: str, model_kind: str | None) -> dict[str, JSON]:
    """The `/run` reply: no claimed_outcome - AgentTwin reads the claim from the answer and marks it inferred."""
    reply: dict[str, JSON] = {
        "output": outcome.output,
        "status": outcome.status if outcome.status in AGENT_STATUSES else "completed",
        "agent_name": name,
        "agent_version": version,
        "tool_calls": [
            {
                "name": c.name,
                "arguments": c.arguments,
                "status": c.status,
                "error_code": c.error_code,
                "retry_after": c.retry_after,
            }
            for c in case.calls
        ],
    }
    if model_kind:
        reply["model_kind"] = model_kind
    return reply


class _NoTools:
    """A run given no tools_base_url (the preflight): every tool is out of reach."""

    def call(self, tool: str, arguments: dict[str, JSON], headers: dict[str, str] | None = None) -> ToolReply:
        return ToolReply(http_status=0, transport_error="UNREACHABLE")

    def search_kb(self, query: str, limit: int = 3) -> list[dict[str, JSON]]:
        return []


class EvaluatedAgent:
    """The `Agent` of a `python:module:attr` spec: the framework run in process, on the case's own client."""

    def __init__(self, runner: Runner, *, name: str, version: str, model_kind: str = "unknown") -> None:
        self._runner = runner
        self.name, self.version, self.model_kind = name, version, model_kind

    def run(self, request: AgentRequest) -> AgentResult:
        case = case_from_agent_request(request)
        outcome = self._runner(case)
        claim = infer_claim(outcome.output)
        return AgentResult(
            output=outcome.output,
            claimed_outcome=claim.claimed,
            business_outcome=None,
            status=outcome.status if outcome.status in AGENT_STATUSES else "completed",
            tool_calls=tuple(case.calls),
            model_kind=self.model_kind,
            findings=(ClaimFinding("claimed_outcome", claim.describe(), CLAIM_INFERRED),),
        )


class AgentServer(BackgroundServer):
    """`POST /run` by the agent contract on `host:port` (0 = any free port); `GET /healthz`.

    A request pinning another version than `version` is answered 404 UNKNOWN_VERSION; the preflight is
    answered at once; a run that raises is answered 500 AGENT_ERROR with its reason."""

    def __init__(
        self,
        runner: Runner,
        *,
        name: str,
        version: str,
        host: str = "127.0.0.1",
        port: int = 0,
        tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
        model_kind: str | None = None,
    ) -> None:
        self.runner, self.name, self.version = runner, name, version
        self.tool_timeout_s, self.model_kind = tool_timeout_s, model_kind
        self._server = AppServer((host, port), self, _Handler)

    @property
    def url(self) -> str:
        return self.address

    def answer(self, body: Mapping[str, JSON]) -> tuple[int, dict[str, JSON]]:
        pinned = body.get("agent_version")
        if pinned is not None and pinned != self.version:
            return 404, {"error": {"code": "UNKNOWN_VERSION", "message": f"This agent is version {self.version}."}}
        if body.get("preflight") is True:
            return 200, {"output": "", "status": "completed", "agent_name": self.name, "agent_version": self.version}
        case, client = case_from_request(body, tool_timeout_s=self.tool_timeout_s)
        try:
            outcome = self.runner(case)
        except Exception as exc:  # boundary: the run failed; say why, so the case is graded AGENT_ERROR
            message = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:500]
            return 500, {"error": {"code": "AGENT_ERROR", "message": message}}
        finally:
            if client is not None:
                client.close()
        return 200, reply_of(case, outcome, name=self.name, version=self.version, model_kind=self.model_kind)


class _Handler(JsonHandler):
    server: AppServer[AgentServer]
    max_body_bytes = MAX_REQUEST_BYTES

    def do_GET(self) -> None:
        if self.route("/healthz"):
            app = self.server.app  # the agent contract's probe: who answers, which version
            self.send_json(200, {"status": "ok", "agent_name": app.name, "agent_version": app.version})

    def do_POST(self) -> None:
        if not self.route("/run"):
            return
        try:
            body = read_json_object(self.read_body())
        except BodyError as exc:
            self.send_error_json(exc.status, exc.code, exc.message)
            return
        if not isinstance(body.get("input"), str) and body.get("preflight") is not True:
            self.send_error_json(400, "INVALID_REQUEST", "input is required and must be a string.")
            return
        status, reply = self.server.app.answer(body)
        self.send_json(status, reply)


class Faces(Generic[B]):
    """The three ways to hand a framework's agent to an evaluation, one definition for every framework:
    `server(...)` (start it, or use it as a context manager), `serve(...)` until Ctrl-C, `agent(...)` in process
    for a `python:module:attr` spec. `runner` turns the user's builder into a per-case run."""

    def __init__(self, runner: Callable[[B], Runner]) -> None:
        self._runner = runner

    def server(
        self, build: B, *, name: str, version: str, host: str = "127.0.0.1", port: int = 0, **options: Any
    ) -> AgentServer:
        return AgentServer(self._runner(build), name=name, version=version, host=host, port=port, **options)

    def serve(
        self, build: B, *, name: str, version: str, host: str = "127.0.0.1", port: int = 8090, **options: Any
    ) -> None:
        """Serve until Ctrl-C or SIGTERM: `agenttwin evaluate --candidate http://host:port`."""
        serve_runner(self._runner(build), name=name, version=version, host=host, port=port, **options)

    def agent(self, build: B, *, name: str, version: str) -> EvaluatedAgent:
        return EvaluatedAgent(self._runner(build), name=name, version=version)


def serve_runner(runner: Runner, *, name: str, version: str, host: str, port: int, **options: Any) -> None:
    """Serve in the foreground until Ctrl-C."""
    server = AgentServer(runner, name=name, version=version, host=host, port=port, **options)
    print(f"{name} {version} serving the agent contract on {server.url} (POST /run)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


def last_text(blocks: Sequence[JSON] | str | None) -> str:
    """The text of a message content that is a string or a list of blocks (dicts or objects with .text)."""
    if blocks is None:
        return ""
    if isinstance(blocks, str):
        return blocks
    parts = []
    for block in blocks:
        text = block.get("text") if isinstance(block, dict) else getattr(block, "text", None)
        if isinstance(text, str):
            parts.append(text)
    return "\n".join(parts)

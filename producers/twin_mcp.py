"""Each case's twin as an MCP server (Model Context Protocol), built on the official `mcp` SDK.

The MCP face of the twin endpoint (producers/twin_http.py): the same cases, opened there with a capability
token, the same engine calls, call caps, twin-error bookkeeping and tenancy (the tenant is the case's, never
the caller's). Only the wire differs, so an MCP call leaves exactly the record the same call leaves in
process or over HTTP.

- Streamable HTTP at `{base}/mcp/c/{token}` (the capability in the URL, for MCP clients that take only a
  URL) or at `{base}/mcp` with `Authorization: Bearer <token>`. A missing or unknown token is answered 401
  before any MCP message is read. stdio: `serve_case_stdio` serves one case to a local agent.
- Sessions (clients of the stateful protocol open one with `initialize`) belong to their case: at most
  MAX_SESSIONS_PER_CASE open at once (one more is answered 429 TOO_MANY_SESSIONS), and all of them end
  when the case closes, so one agent cannot fill the server's session table for the others.
- Tools: the twin's tools (name, description, input schema from twin.v1; narrowed to the scenario's
  `allowedTools`) plus `search_knowledge_base` {query, limit?} for the knowledge base (unless the twin
  declares a tool of that name itself).
- A reply's body is the tool result's `structuredContent` and, as canonical JSON, its text content; its HTTP
  status and headers (e.g. `Retry-After`) travel in the result's `_meta["dev.agenttwin/http"]`; a non-2xx
  status sets `isError`. Per-call request headers (e.g. `Idempotency-Key`) may be sent in the call's
  `_meta["dev.agenttwin/headers"]`; the POST's own HTTP headers are forwarded like the HTTP endpoint's.

How faults reach an MCP client (FAULT_FAMILIES below; the README has the table):
- tool error result (`isError: true`, the error body and status): every fault that answers an HTTP error;
- JSON-RPC error (INTERNAL_ERROR, `data.code` MALFORMED_RESPONSE): `malformed_json`, whose reply cannot be read;
- dropped stream (the response stream opens and is cut before the response arrives; `partial_response`
  sends half of the reply's bytes first): `dropped_connection`, `partial_response`;
- delay: the reply is held `delayMs` (capped like the HTTP endpoint's) — `delay`, and any fault with `delayMs`;
- a normal result whose content is what the engine answered: the faults that change state, not the wire.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import secrets
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from producers.twin_http import DROPPED_HEADERS, TwinEndpoint, _Refused
from twin_engine.canonical import canonical_json
from twin_engine.faults import FAULT_TYPES

if TYPE_CHECKING:
    import mcp_types
    import uvicorn
    from mcp.server.lowlevel import Server

    from producers.twin_http import CaseHandle
    from twin_engine.replies import TwinReply

JSON = Any
ASGIMessage = MutableMapping[str, Any]
ASGIScope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[ASGIMessage]]
Send = Callable[[ASGIMessage], Awaitable[None]]
ASGIApp = Callable[[ASGIScope, Receive, Send], Awaitable[None]]

MCP_PATH = "/mcp"
CAPABILITY_PREFIX = "/mcp/c/"
SERVER_NAME = "agenttwin-twin"
KB_TOOL = "search_knowledge_base"
HTTP_META_KEY = "dev.agenttwin/http"  # result _meta: {"status": int, "headers": {...}}
HEADERS_META_KEY = "dev.agenttwin/headers"  # request _meta: per-call headers, e.g. Idempotency-Key
TOKEN_SCOPE_KEY = "agenttwin.case_token"  # noqa: S105 - a scope key, not a secret
MAX_SESSIONS_PER_CASE = 8  # an agent needs one; each costs the server memory until it ends
# Headers of the MCP transport itself: never handed to the engine (like the HTTP endpoint's dropped ones).
MCP_TRANSPORT_HEADERS = frozenset(
    {"mcp-session-id", "mcp-protocol-version", "last-event-id", "accept", "content-length", "content-type"}
)
KB_INPUT_SCHEMA: dict[str, JSON] = {
    "type": "object",
    "required": ["query"],
    "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 10}},
}
KB_DESCRIPTION = "Searches the knowledge base; returns up to `limit` documents (id, title, text)."

# What an MCP client sees of each fault type (documented in the README, checked by a test).
ERROR_RESULT, PROTOCOL_ERROR, DROPPED_STREAM, DELAY, NORMAL_RESULT = (
    "tool error result",
    "JSON-RPC error",
    "dropped stream",
    "delay",
    "normal result",
)
FAULT_FAMILIES: Mapping[str, str] = {
    "timeout_before_mutation": ERROR_RESULT,
    "timeout_after_mutation": ERROR_RESULT,
    "http_429": ERROR_RESULT,
    "rate_limit": ERROR_RESULT,
    "http_500": ERROR_RESULT,
    "http_503": ERROR_RESULT,
    "transient_unavailable": ERROR_RESULT,
    "permanent_unavailable": ERROR_RESULT,
    "non_retryable_error": ERROR_RESULT,
    "auth_denied": ERROR_RESULT,
    "inconsistent_state": ERROR_RESULT,
    "malformed_json": PROTOCOL_ERROR,
    "dropped_connection": DROPPED_STREAM,
    "partial_response": DROPPED_STREAM,
    "delay": DELAY,
    "stale_response": NORMAL_RESULT,
    "duplicate_response": NORMAL_RESULT,
    "semantic_bad_response": NORMAL_RESULT,
    "success_without_mutation": NORMAL_RESULT,
    "message_duplication": NORMAL_RESULT,
}
assert set(FAULT_FAMILIES) == set(FAULT_TYPES), "every fault type needs its MCP mapping"

_DROP_MARK = re.compile(rb"agenttwin-drop-[0-9a-f]{32}")
_SSE_START: ASGIMessage = {
    "type": "http.response.start",
    "status": 200,
    "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")],
}
_log = logging.getLogger(__name__)


class _DropConnection(Exception):
    """Raised out of the ASGI app after a response started: the HTTP server then cuts the connection."""


class _QuietDrops(logging.Filter):
    """The HTTP server logs an app exception as an error; a drop we asked for is no error."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, _DropConnection)


@dataclass(frozen=True)
class _Drop:
    partial: bytes | None  # the bytes sent before the cut (partial_response), None: nothing


def _bearer(headers: Mapping[str, str]) -> str | None:
    scheme, _, token = (headers.get("authorization") or "").strip().partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def _json_error(status: int, code: str, message: str) -> tuple[ASGIMessage, ASGIMessage]:
    body = canonical_json({"error": {"code": code, "message": message}}).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    return (
        {"type": "http.response.start", "status": status, "headers": headers},
        {"type": "http.response.body", "body": body},
    )


class TwinMcp:
    """The MCP request handlers over a TwinEndpoint's cases; transport-independent (HTTP or stdio)."""

    def __init__(self, endpoint: TwinEndpoint) -> None:
        self.endpoint = endpoint
        self._drops: dict[str, _Drop] = {}
        self._drops_lock = threading.Lock()
        self.stdio_token: str | None = None  # stdio carries no credential: the process serves one case
        self.server = self._build_server()
        self._sessions: dict[str, set[str]] = {}  # case token -> ids of the MCP sessions opened under it
        self._sessions_lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None  # the HTTP server's loop, where sessions live
        endpoint.on_close(self._case_closed)

    def _build_server(self) -> Server[Any]:
        from mcp.server.lowlevel import Server

        return Server(
            SERVER_NAME,
            version="1",
            instructions="AgentTwin tool twin: every call is recorded as evidence.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    # ------------------------------------------------------------ the case a request belongs to

    def _token(self, ctx: Any) -> str:
        from mcp.shared.exceptions import MCPError
        from mcp_types import INVALID_REQUEST

        request = getattr(ctx, "request", None)
        scope = getattr(request, "scope", None)
        token = scope.get(TOKEN_SCOPE_KEY) if isinstance(scope, dict) else None
        if token is None:
            token = self.stdio_token
        if not isinstance(token, str):
            raise MCPError(INVALID_REQUEST, "A case credential is required.", {"code": "TWIN_CREDENTIAL_REQUIRED"})
        return token

    def known(self, token: str) -> bool:
        try:
            self.endpoint._case_for(f"Bearer {token}")
        except _Refused:
            return False
        return True

    # ------------------------------------------------------------ handlers

    async def _list_tools(self, ctx: Any, params: Any) -> mcp_types.ListToolsResult:
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        try:
            case = self.endpoint._case_for(f"Bearer {self._token(ctx)}")
        except _Refused as exc:
            raise self._refusal(exc) from None
        twin_case = case.twin_case
        if twin_case is None:
            raise MCPError(types.INVALID_REQUEST, "This case is closed.", {"code": "CASE_CLOSED", "status": 409})
        allowed = set(twin_case.scenario.allowed_tools or ())
        tools = [
            types.Tool(
                name=spec.name, description=spec.description, input_schema=spec.input_schema or {"type": "object"}
            )
            for spec in twin_case.twin.tool_specs()
            if not allowed or spec.name in allowed
        ]
        if KB_TOOL not in twin_case.twin.tools:
            tools.append(types.Tool(name=KB_TOOL, description=KB_DESCRIPTION, input_schema=KB_INPUT_SCHEMA))
        return types.ListToolsResult(tools=tools, ttl_ms=0)

    async def _call_tool(self, ctx: Any, params: Any) -> mcp_types.CallToolResult:
        token = self._token(ctx)
        authorization = f"Bearer {token}"
        arguments: dict[str, JSON] = dict(params.arguments or {})
        try:
            case = self.endpoint._case_for(authorization)
            twin = case.twin_case.twin if case.twin_case is not None else None
            if params.name == KB_TOOL and twin is not None and KB_TOOL not in twin.tools:
                return await self._search(authorization, arguments)
            headers = self._headers(ctx, params)
            body = json.dumps(arguments).encode("utf-8")
            reply: TwinReply = await anyio.to_thread.run_sync(
                self.endpoint.call_tool, authorization, params.name, body, headers
            )
        except _Refused as exc:
            raise self._refusal(exc) from None
        # the delay is slept outside the case lock, as the HTTP endpoint does
        await anyio.sleep(self.endpoint.fault_sleep_s(reply.delay_ms))
        return self._result(reply)

    async def _search(self, authorization: str, arguments: dict[str, JSON]) -> mcp_types.CallToolResult:
        """The knowledge base, as the HTTP endpoint serves it: a query over a limit is refused and recorded."""
        query, limit = arguments.get("query", ""), arguments.get("limit", 3)
        answer = await anyio.to_thread.run_sync(self.endpoint.search_kb, authorization, query, limit)
        if answer.refusal is not None:
            refusal = answer.refusal
            return _tool_result(refusal.status, {"error": {"code": refusal.code, "message": refusal.message}})
        return _tool_result(200, {"result": {"documents": answer.documents}})

    def _headers(self, ctx: Any, params: Any) -> dict[str, str]:
        """The POST's headers (minus credentials, hop-by-hop and MCP transport ones) and the call's own."""
        request = getattr(ctx, "request", None)
        raw = getattr(request, "headers", None) or {}
        dropped = DROPPED_HEADERS | MCP_TRANSPORT_HEADERS
        out = {str(k).lower(): str(v) for k, v in raw.items() if str(k).lower() not in dropped}
        meta = params.meta
        if meta is not None and not isinstance(meta, Mapping):
            meta = meta.model_dump(by_alias=True)
        per_call = (meta or {}).get(HEADERS_META_KEY)
        if isinstance(per_call, dict):
            out.update({str(k).lower(): str(v) for k, v in per_call.items() if str(k).lower() not in dropped})
        return out

    def _refusal(self, exc: _Refused) -> Exception:
        """An endpoint refusal (closed case, call cap, twin failure): a JSON-RPC error, no record."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import INTERNAL_ERROR, INVALID_REQUEST

        code = INTERNAL_ERROR if exc.status >= 500 else INVALID_REQUEST
        return MCPError(code, exc.message, {"code": exc.code, "status": exc.status})

    def _result(self, reply: TwinReply) -> mcp_types.CallToolResult:
        from mcp.shared.exceptions import MCPError
        from mcp_types import INTERNAL_ERROR

        if reply.transport in ("dropped", "partial"):
            mark = f"agenttwin-drop-{secrets.token_hex(16)}"
            partial = None
            if reply.transport == "partial":
                partial = b"event: message\r\ndata: " + (reply.raw_body or b"")
            with self._drops_lock:
                self._drops[mark] = _Drop(partial)
            return _tool_result(200, {"result": mark})
        if reply.transport == "malformed":
            raise MCPError(
                INTERNAL_ERROR,
                "The tool's reply could not be read.",
                {"code": "MALFORMED_RESPONSE", "status": reply.http_status},
            )
        return _tool_result(reply.http_status, reply.body, dict(reply.headers))

    # ------------------------------------------------------------ sessions

    def _live(self, ids: set[str]) -> set[str]:
        manager = self.server.session_manager
        open_ids = manager._server_instances if manager is not None else {}  # the SDK has no public view of them
        return {i for i in ids if i in open_ids}

    def session_count(self, token: str) -> int:
        """Sessions of the case still open on the server."""
        with self._sessions_lock:
            ids = self._sessions.get(token, set())
            live = self._live(ids)
            ids &= live
            return len(live)

    def session_opened(self, token: str, session_id: str) -> None:
        with self._sessions_lock:
            self._sessions.setdefault(token, set()).add(session_id)

    def _case_closed(self, token: str) -> None:
        """The case closed (another thread): end its sessions in the server's loop and wait for that."""
        with self._sessions_lock:
            ids = self._sessions.pop(token, set())
        loop = self.loop
        if not ids or loop is None or loop.is_closed():
            return
        try:
            asyncio.run_coroutine_threadsafe(self._end_sessions(ids), loop).result(timeout=10)
        except (TimeoutError, RuntimeError):  # the server is stopping: its sessions end with it
            _log.warning("could not end %d MCP session(s) of a closed case", len(ids))

    async def _end_sessions(self, ids: set[str]) -> None:
        manager = self.server.session_manager
        if manager is None:
            return
        for session_id in ids:
            transport = manager._server_instances.get(session_id)  # no public way to end one
            if transport is not None and not transport.is_terminated:
                await transport.terminate()  # its task then drops it from the manager

    def take_drop(self, mark: str) -> _Drop | None:
        with self._drops_lock:
            return self._drops.pop(mark, None)

    # ------------------------------------------------------------ HTTP

    def asgi_app(self) -> ASGIApp:
        """The streamable-HTTP app, behind the case check and the drop watch."""
        inner: ASGIApp = self.server.streamable_http_app(streamable_http_path=MCP_PATH)
        return _CaseGate(self, inner)


def _tool_result(status: int, body: JSON, headers: dict[str, str] | None = None) -> mcp_types.CallToolResult:
    import mcp_types as types

    return types.CallToolResult(
        content=[types.TextContent(type="text", text=canonical_json(body))],
        structured_content=body if isinstance(body, dict) else None,
        is_error=not 200 <= status < 300,
        _meta={HTTP_META_KEY: {"status": status, "headers": headers or {}}},
    )


class _CaseGate:
    """ASGI wrapper: binds the request to a case (URL capability or bearer token) and carries out drops."""

    def __init__(self, mcp: TwinMcp, app: ASGIApp) -> None:
        self._mcp = mcp
        self._app = app

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if path == MCP_PATH:
            token = _bearer(headers)
        elif path.startswith(CAPABILITY_PREFIX) and "/" not in path[len(CAPABILITY_PREFIX) :]:
            token = path[len(CAPABILITY_PREFIX) :] or None
            scope = {**scope, "path": MCP_PATH, "raw_path": MCP_PATH.encode()}
        else:
            for message in _json_error(404, "NOT_FOUND", "No such route."):
                await send(message)
            return
        if token is None:
            for message in _json_error(401, "TWIN_CREDENTIAL_REQUIRED", "A case credential is required."):
                await send(message)
            return
        if not self._mcp.known(token):
            for message in _json_error(401, "TWIN_CREDENTIAL_INVALID", "The case credential is not valid."):
                await send(message)
            return
        scope[TOKEN_SCOPE_KEY] = token
        self._mcp.loop = asyncio.get_running_loop()
        opening = scope.get("method") == "POST" and "mcp-session-id" not in headers  # may open a session
        if opening and self._mcp.session_count(token) >= MAX_SESSIONS_PER_CASE:
            text = f"This case already has {MAX_SESSIONS_PER_CASE} open MCP sessions; reuse or close one."
            for part in _json_error(429, "TOO_MANY_SESSIONS", text):
                await send(part)
            return
        if opening:
            send = _SessionWatch(self._mcp, token, send).send
        # only a POST answers a tool call; a GET stream's headers are never held back
        watch = _DropWatch(self._mcp, send, hold=scope.get("method") == "POST")
        await self._app(scope, receive, watch.send)
        if watch.dropped:
            raise _DropConnection("dropped on purpose (fault injection)")


class _SessionWatch:
    """Notes the session a response opens (its `mcp-session-id` header) under the request's case."""

    def __init__(self, mcp: TwinMcp, token: str, send: Send) -> None:
        self._mcp = mcp
        self._token = token
        self._send = send

    async def send(self, message: ASGIMessage) -> None:
        if message["type"] == "http.response.start":
            for name, value in message.get("headers", []):
                if bytes(name).lower() == b"mcp-session-id":
                    self._mcp.session_opened(self._token, bytes(value).decode("latin-1"))
        await self._send(message)


class _DropWatch:
    """Passes a response through, unless it carries a drop mark: then it cuts the stream instead."""

    def __init__(self, mcp: TwinMcp, send: Send, *, hold: bool) -> None:
        self._mcp = mcp
        self._send = send
        self._hold = hold
        self._start: ASGIMessage | None = None
        self.dropped = False

    async def send(self, message: ASGIMessage) -> None:
        if self.dropped:
            return
        if message["type"] == "http.response.start" and self._hold:
            self._start = message  # held until the first body chunk shows whether it is a drop
            return
        if message["type"] == "http.response.body":
            found = _DROP_MARK.search(bytes(message.get("body", b"")))
            drop = self._mcp.take_drop(found.group(0).decode()) if found else None
            if drop is not None:
                self.dropped = True
                # the response stream opens (as if the server had committed to it) and is cut
                await self._send(_SSE_START)
                if drop.partial:
                    half = drop.partial[: max(1, len(drop.partial) // 2)]
                    await self._send({"type": "http.response.body", "body": half, "more_body": True})
                else:
                    await self._send({"type": "http.response.body", "body": b"", "more_body": True})
                return
        if self._start is not None:
            start, self._start = self._start, None
            await self._send(start)
        await self._send(message)


class TwinMcpServer:
    """Serves a TwinEndpoint's cases over MCP streamable HTTP on 127.0.0.1 (port 0 = any free port)."""

    def __init__(self, endpoint: TwinEndpoint, host: str = "127.0.0.1", port: int = 0) -> None:
        self.endpoint = endpoint
        self.mcp = TwinMcp(endpoint)
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, port))
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._socket.getsockname()[:2]
        return f"http://{host}:{port}"

    @property
    def url(self) -> str:
        """The bearer-token endpoint (`Authorization: Bearer <case token>`)."""
        return f"{self.base_url}{MCP_PATH}"

    def case_url(self, handle: CaseHandle) -> str:
        """The case's MCP URL with its capability in the path."""
        return f"{self.base_url}{CAPABILITY_PREFIX}{handle.token}"

    def start(self) -> TwinMcpServer:
        if self._thread is not None:
            return self
        import uvicorn

        logging.getLogger("uvicorn.error").addFilter(_QuietDrops())
        config = uvicorn.Config(
            self.mcp.asgi_app(),
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=2,  # an agent's open stream does not hold a stopping server up
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="twin-mcp", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the twin's MCP server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None
        self._socket.close()

    def __enter__(self) -> TwinMcpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def serve_case_stdio(endpoint: TwinEndpoint, token: str) -> None:
    """Serve one open case of `endpoint` over stdio until the client closes the stream."""
    from mcp.server.stdio import stdio_server

    mcp = TwinMcp(endpoint)
    mcp.stdio_token = token
    async with stdio_server() as (read_stream, write_stream):
        await mcp.server.run(read_stream, write_stream, mcp.server.create_initialization_options())

"""An MCP agent: Demo Co's support agent reaching every tool through the official `mcp` SDK's client.

An example, not part of the package. It serves AgentTwin's HTTP agent interface (`POST /run`) and, for each
run, connects to the case's `mcp_url` with `mcp.Client`, lists the tools and calls them over MCP — it never
touches `tools_base_url`. What it decides is the Demo Co manifest of the version asked for (`#1.2.4`,
`#1.3.0`, …), acted out by the packaged scripted planner, so its classifications can be checked against
the in-process demo agents.

    python examples/mcp_agent/agent.py --port 8091
    agenttwin evaluate --baseline http://127.0.0.1:8091#1.2.4 --candidate http://127.0.0.1:8091#1.3.0

Multi-turn scenarios work too: each turn is one `POST /run` with the earlier turns in `conversation`.
"""

from __future__ import annotations

import argparse
import json
import time
from contextlib import ExitStack
from http.server import ThreadingHTTPServer
from typing import Any

from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT, CallToolResult

from producers.agents.contract import (
    TRANSPORT_DROPPED,
    TRANSPORT_MALFORMED,
    TRANSPORT_TIMEOUT,
    AgentRequest,
    ToolReply,
    ToolSpec,
    Turn,
)
from producers.agents.demo_agent import DemoAgent
from producers.agents.demo_server import parse_run_request, run_reply
from producers.http_wire import BodyError, JsonHandler, read_json_object
from twin_engine.documents import demo_manifest, demo_manifest_versions

HTTP_META_KEY = "dev.agenttwin/http"  # the twin's status and headers of a reply (see the README)
HEADERS_META_KEY = "dev.agenttwin/headers"  # per-call request headers, e.g. Idempotency-Key
KB_TOOL = "search_knowledge_base"
TOOL_TIMEOUT_S = 1.5  # like the demo agent's HTTP tool client


class McpToolClient:
    """The agent's ToolClient over one MCP session (sync face over the SDK's async client)."""

    def __init__(self, url: str, *, timeout_s: float = TOOL_TIMEOUT_S) -> None:
        self._stack = ExitStack()
        self._portal: BlockingPortal = self._stack.enter_context(start_blocking_portal())
        self._client: Client = self._stack.enter_context(
            self._portal.wrap_async_context_manager(Client(url, read_timeout_seconds=timeout_s))
        )

    def close(self) -> None:
        self._stack.close()

    def tools(self) -> tuple[ToolSpec, ...]:
        listed = self._portal.call(self._client.list_tools)
        return tuple(ToolSpec(t.name, t.description or "", "", dict(t.input_schema or {})) for t in listed.tools)

    def call(self, tool: str, arguments: dict[str, Any], headers: dict[str, str] | None = None) -> ToolReply:
        started = time.perf_counter()
        meta = {HEADERS_META_KEY: dict(headers)} if headers else None
        try:
            result = self._portal.call(lambda: self._client.call_tool(tool, arguments, meta=meta))
        except MCPError as exc:
            return _failed(exc, _ms_since(started))
        return _reply(result, _ms_since(started))

    def search_kb(self, query: str, limit: int = 3) -> list[dict[str, Any]]:
        reply = self.call(KB_TOOL, {"query": query, "limit": limit})
        documents = reply.result.get("documents") if reply.ok and isinstance(reply.result, dict) else None
        return [d for d in documents if isinstance(d, dict)] if isinstance(documents, list) else []


def _ms_since(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


def _reply(result: CallToolResult, elapsed_ms: int) -> ToolReply:
    """A tool result as the agent's ToolReply: the body, and the status and headers the twin sent."""
    http = (result.meta or {}).get(HTTP_META_KEY) or {}
    status = http.get("status") if isinstance(http.get("status"), int) else (500 if result.is_error else 200)
    body = result.structured_content
    if body is None:
        text = "".join(getattr(block, "text", "") for block in result.content)
        try:
            body = json.loads(text)
        except ValueError:
            body = {"result": text}
    return ToolReply(http_status=status, body=body, headers=dict(http.get("headers") or {}), delay_ms=elapsed_ms)


def _failed(exc: MCPError, elapsed_ms: int) -> ToolReply:
    """What a JSON-RPC error means to the agent: a cut stream, a timeout, an unreadable or refused reply."""
    data = exc.data if isinstance(exc.data, dict) else {}
    if exc.code == CONNECTION_CLOSED:
        return ToolReply(http_status=0, transport_error=TRANSPORT_DROPPED, delay_ms=elapsed_ms)
    if exc.code == REQUEST_TIMEOUT:
        return ToolReply(http_status=0, transport_error=TRANSPORT_TIMEOUT, delay_ms=elapsed_ms)
    if data.get("code") == "MALFORMED_RESPONSE":
        status = data.get("status") if isinstance(data.get("status"), int) else 0
        return ToolReply(http_status=status, transport_error=TRANSPORT_MALFORMED, delay_ms=elapsed_ms)
    status = data.get("status") if isinstance(data.get("status"), int) else 500
    body = {"error": {"code": str(data.get("code") or exc.code), "message": exc.message}}
    return ToolReply(http_status=status, body=body, delay_ms=elapsed_ms)


def run_turn(body: dict[str, Any]) -> dict[str, Any]:
    """One `POST /run`: the demo manifest of the asked version, its tools over the case's MCP server."""
    run = parse_run_request(body)
    mcp_url = body.get("mcp_url")
    if not isinstance(mcp_url, str) or not mcp_url:
        raise ValueError("this agent needs the case's mcp_url")
    versions = demo_manifest_versions()
    version = run.agent_version or versions[-1]
    if version not in versions:
        raise LookupError(version)
    earlier = body.get("conversation") or []
    pairs = [(earlier[i], earlier[i + 1]) for i in range(0, len(earlier) - 1, 2)]
    conversation = tuple(Turn(str(u.get("content", "")), str(a.get("content", ""))) for u, a in pairs)
    client = McpToolClient(mcp_url)
    try:
        request = AgentRequest(
            message=run.input,
            context=dict(run.context),
            tenant=run.tenant,
            customer_id=run.customer_id,
            tools=client.tools(),
            client=client,
            session_id=run.session_id,
            scenario_name=str(run.run_context.get("scenario_name") or ""),
            turn=int(body.get("turn") or 1),
            conversation=conversation,
        )
        result = DemoAgent(demo_manifest(version), contained=run.contained).run(request)
    finally:
        client.close()
    return run_reply(result, version)


class _Handler(JsonHandler):
    max_body_bytes = 256 * 1024

    def do_POST(self) -> None:
        if self.path.split("?")[0] != "/run":
            self.send_error_json(404, "NOT_FOUND", "No such route.")
            return
        try:
            body = read_json_object(self.read_body())
            self.send_json(200, run_turn(body))
        except BodyError as exc:
            self.send_error_json(exc.status, exc.code, exc.message)
        except LookupError as exc:
            self.send_error_json(404, "UNKNOWN_VERSION", f"Unknown agent version '{exc}'.")
        except Exception as exc:  # the agent's own failure: answered, so the case is graded AGENT_ERROR
            self.send_error_json(500, "AGENT_ERROR", f"{type(exc).__name__}: {exc}")


def make_server(host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, port), _Handler)
    server.daemon_threads = True
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8091)
    args = parser.parse_args()
    server = make_server(args.host, args.port)
    print(f"MCP agent listening on http://{args.host}:{server.server_address[1]} (POST /run)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()

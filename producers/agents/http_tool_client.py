"""A ToolClient over HTTP (spec §5.3 "Tool client"): what an agent behind HTTP uses to reach its tools.

`POST {base}/tools/{name}` with the JSON arguments and `GET {base}/kb/search`. HTTP statuses are passed
on as they are; when no usable HTTP reply arrives the reply carries a TRANSPORT_* code instead:
read timeout -> TIMEOUT, cannot connect -> UNREACHABLE, closed before any response -> CONNECTION_DROPPED,
closed or broken inside the response -> BROKEN_RESPONSE, a body that is not a JSON object ->
MALFORMED_RESPONSE (the HTTP status is kept).
"""

from __future__ import annotations

import functools
import json
import ssl
import time
from typing import Any
from urllib.parse import quote

import httpx

from producers.agents.contract import (
    TRANSPORT_BROKEN,
    TRANSPORT_DROPPED,
    TRANSPORT_MALFORMED,
    TRANSPORT_TIMEOUT,
    TRANSPORT_UNREACHABLE,
    ToolReply,
)

JSON = Any
DEFAULT_TOOL_TIMEOUT_S = 1.5
TENANT_HEADER = "X-AgentTwin-Tenant"
# Transport headers say nothing about the tool's answer; the rest (Retry-After, ...) reach the agent.
_TRANSPORT_HEADERS = frozenset(
    {"content-length", "content-type", "connection", "date", "server", "transfer-encoding", "keep-alive"}
)


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """One verifying TLS context for every client: building one costs tens of milliseconds."""
    return httpx.create_ssl_context()


class HttpToolClient:
    """Implements `ToolClient`. One instance serves one agent run; close it (or use `with`) afterwards."""

    def __init__(
        self,
        base_url: str,
        *,
        tenant: str | None = None,
        headers: dict[str, str] | None = None,
        timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers: dict[str, str] = {}
        if tenant:
            self._headers[TENANT_HEADER] = tenant
        self._headers.update(headers or {})
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout_s),
            transport=transport,
            trust_env=False,
            verify=shared_ssl_context(),
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> HttpToolClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, tool: str, arguments: dict[str, JSON], headers: dict[str, str] | None = None) -> ToolReply:
        body = json.dumps(arguments, separators=(",", ":"), sort_keys=True).encode("utf-8")
        sent = {**self._headers, **(headers or {}), "Content-Type": "application/json"}
        url = f"{self.base_url}/tools/{quote(tool, safe='')}"
        return self._exchange(self._http.build_request("POST", url, content=body, headers=sent))

    def search_kb(self, query: str, limit: int = 3) -> list[dict[str, JSON]]:
        """The documents found; [] when the search did not answer (the contract has no error channel)."""
        request = self._http.build_request(
            "GET", f"{self.base_url}/kb/search", params={"q": query, "limit": limit}, headers=self._headers
        )
        reply = self._exchange(request)
        documents = reply.result.get("documents") if reply.ok and isinstance(reply.result, dict) else None
        if not isinstance(documents, list):
            return []
        return [doc for doc in documents if isinstance(doc, dict)]

    def _exchange(self, request: httpx.Request) -> ToolReply:
        started = time.perf_counter()

        def failed(code: str, status: int = 0, headers: dict[str, str] | None = None) -> ToolReply:
            return ToolReply(http_status=status, headers=headers or {}, transport_error=code, delay_ms=elapsed())

        def elapsed() -> int:
            return round((time.perf_counter() - started) * 1000)

        try:
            response = self._http.send(request, stream=True)
        except httpx.ConnectTimeout:
            return failed(TRANSPORT_UNREACHABLE)  # never connected: the call cannot have run
        except httpx.TimeoutException:
            return failed(TRANSPORT_TIMEOUT)
        except httpx.ConnectError:
            return failed(TRANSPORT_UNREACHABLE)
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
            return failed(TRANSPORT_DROPPED)  # the connection closed before any response
        except httpx.TransportError:
            return failed(TRANSPORT_BROKEN)
        headers = _reply_headers(response)
        try:
            raw = response.read()
        except httpx.TimeoutException:
            return failed(TRANSPORT_TIMEOUT, response.status_code, headers)
        except httpx.TransportError:
            return failed(TRANSPORT_BROKEN, response.status_code, headers)  # cut inside the response
        finally:
            response.close()
        body: JSON = None
        if raw.strip():
            try:
                body = json.loads(raw)
            except (UnicodeDecodeError, ValueError):
                body = None
            if not isinstance(body, dict):
                return failed(TRANSPORT_MALFORMED, response.status_code, headers)
        return ToolReply(http_status=response.status_code, body=body, headers=headers, delay_ms=elapsed())


def _reply_headers(response: httpx.Response) -> dict[str, str]:
    """Reply headers with their names as sent (e.g. `Retry-After`), minus transport headers."""
    out: dict[str, str] = {}
    for raw_name, raw_value in response.headers.raw:
        name = raw_name.decode("latin-1")
        if name.lower() not in _TRANSPORT_HEADERS:
            out[name] = raw_value.decode("latin-1")
    return out

"""The twin HTTP endpoint (spec §2.11): what an agent behind HTTP calls during a simulation.

`POST /twin/v1/tools/{tool}` and `GET /twin/v1/kb/search?q=&limit=`, each authorised by a per-case
capability token (`Authorization: Bearer <token>`). Only the token's SHA-256 is kept; closing the case
revokes it. The engine answers exactly as it does in process, so records are the same either way; this
module only puts the reply on the wire, including the transport faults (§3.2) and their delays.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlsplit

from producers.http_wire import AppServer, BackgroundServer, BodyError, JsonHandler
from twin_engine.canonical import canonical_bytes

if TYPE_CHECKING:
    from twin_engine.case import KbAnswer, TwinCase
    from twin_engine.replies import TwinReply

JSON = Any
PREFIX = "/twin/v1"
DEFAULT_MAX_CALLS_PER_CASE = 200
DEFAULT_MAX_FAULT_DELAY_MS = 30_000
MAX_BODY_BYTES = 1 << 20  # refused with 413 and a record; the engine itself refuses arguments over 256 KiB
MAX_DRAIN_BYTES = 8 << 20  # a refused body up to this size is read and dropped, so the sender sees the 413
# Never handed to the engine: credentials and hop-by-hop headers (spec §2.11).
DROPPED_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization", "connection", "host"})


@dataclass(frozen=True)
class CaseHandle:
    token: str  # the bearer credential handed to the agent; the endpoint keeps only its hash
    base_url: str  # e.g. http://127.0.0.1:PORT/twin/v1 (the agent's `tools_base_url`)


@dataclass(frozen=True)
class CaseUsage:
    """What the endpoint saw of one case, returned when it closes."""

    calls: int  # requests that reached the engine (tool calls and KB searches)
    refused_over_limit: int  # requests refused with CALL_LIMIT_EXCEEDED
    twin_errors: tuple[str, ...]  # engine failures (bugs), each recorded on the case as a 500 TWIN_ERROR call
    unrecorded_twin_errors: int = 0  # failures the twin could not even record: the case's evidence is incomplete


@dataclass
class _OpenCase:
    twin_case: TwinCase | None
    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: int = 0
    refused: int = 0
    twin_errors: list[str] = field(default_factory=list)
    unrecorded: int = 0

    @property
    def closed(self) -> bool:
        return self.twin_case is None


class _Refused(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def parse_arguments(body: bytes) -> tuple[Any, BodyError | None]:
    """The JSON value of a tool call's body (an empty body is `{}`), or why it cannot be read.

    Any JSON value goes to the engine, whose gate refuses (and records) what is not an object or is
    over a limit; JSON nested past what the parser takes is refused here, and recorded too.
    """
    if not body.strip():
        return {}, None
    try:
        return json.loads(body), None
    except RecursionError:
        return None, BodyError("The arguments are nested too deeply to read.", code="ARGUMENTS_TOO_DEEP")
    except (UnicodeDecodeError, ValueError):
        return None, BodyError("The body is not valid JSON.")


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class TwinEndpoint(BackgroundServer):
    """Serves twin cases over HTTP on 127.0.0.1 (port 0 = any free port). Use as a context manager."""

    thread_name = "twin-endpoint"

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_calls_per_case: int = DEFAULT_MAX_CALLS_PER_CASE,
        max_fault_delay_ms: int = DEFAULT_MAX_FAULT_DELAY_MS,
    ) -> None:
        self.max_calls_per_case = max_calls_per_case
        self.max_fault_delay_ms = max_fault_delay_ms
        self._cases: dict[str, _OpenCase] = {}  # token SHA-256 -> case
        self._cases_lock = threading.Lock()
        self._on_close: list[Callable[[str], None]] = []  # e.g. the MCP face ends the case's sessions
        self._server = AppServer((host, port), self, _EndpointHandler)

    # ------------------------------------------------------------ lifecycle

    @property
    def base_url(self) -> str:
        return f"{self.address}{PREFIX}"

    def stop(self) -> None:
        with self._cases_lock:
            for case in self._cases.values():
                case.twin_case = None
        super().stop()

    def open_case(self, twin_case: TwinCase) -> CaseHandle:
        token = secrets.token_urlsafe(32)
        with self._cases_lock:
            self._cases[_token_hash(token)] = _OpenCase(twin_case)
        return CaseHandle(token=token, base_url=self.base_url)

    def close_case(self, token: str) -> CaseUsage:
        """Revoke the token; waits for a call in progress, so nothing changes the case afterwards."""
        with self._cases_lock:
            case = self._cases.get(_token_hash(token))
        if case is None:
            raise KeyError("unknown case token")
        with case.lock:
            case.twin_case = None
            usage = CaseUsage(case.calls, case.refused, tuple(case.twin_errors), case.unrecorded)
        for listener in list(self._on_close):
            listener(token)
        return usage

    def on_close(self, listener: Callable[[str], None]) -> None:
        """Call `listener(token)` after each case closes (what other faces of the endpoint hold for it goes)."""
        self._on_close.append(listener)

    # ------------------------------------------------------------ requests (called by the handler)

    def _case_for(self, authorization: str | None) -> _OpenCase:
        scheme, _, token = (authorization or "").strip().partition(" ")
        if not authorization or scheme.lower() != "bearer" or not token.strip():
            raise _Refused(401, "TWIN_CREDENTIAL_REQUIRED", "A bearer case credential is required.")
        with self._cases_lock:
            case = self._cases.get(_token_hash(token.strip()))
        if case is None:
            raise _Refused(401, "TWIN_CREDENTIAL_INVALID", "The case credential is not valid.")
        return case

    def _admit(self, case: _OpenCase) -> TwinCase:
        """Called under the case lock: the case must be open and under its call cap."""
        if case.twin_case is None:
            raise _Refused(409, "CASE_CLOSED", "This case is closed.")
        if case.calls >= self.max_calls_per_case:
            case.refused += 1
            raise _Refused(409, "CALL_LIMIT_EXCEEDED", f"This case allows at most {self.max_calls_per_case} calls.")
        case.calls += 1
        return case.twin_case

    def _twin_failure(self, case: _OpenCase, twin_case: TwinCase, tool: str, exc: Exception) -> TwinReply:
        """A failure outside the engine's own boundary: recorded on the case as a 500 TWIN_ERROR call."""
        case.twin_errors.append(f"{type(exc).__name__}: {exc}")
        message = f"The twin failed while handling this call ({type(exc).__name__})."
        try:
            return twin_case.refuse(tool, 500, "TWIN_ERROR", message)
        except Exception:  # boundary: the twin cannot even record; the case's evidence is incomplete
            case.unrecorded += 1
            raise _Refused(500, "TWIN_ERROR", "The twin failed while handling this call.") from exc

    def call_tool(
        self,
        authorization: str | None,
        tool: str,
        body: bytes,
        headers: dict[str, str],
        refused: BodyError | None = None,
    ) -> TwinReply:
        """One tool call. A body the endpoint refused (`refused`) or cannot parse is recorded on the case."""
        case = self._case_for(authorization)
        arguments, problem = (None, refused) if refused is not None else parse_arguments(body)
        with case.lock:  # calls of one case are applied one at a time, in arrival order
            twin_case = self._admit(case)
            try:
                if problem is not None:
                    return twin_case.refuse(tool, problem.status, problem.code, problem.message)
                return twin_case.call(tool, arguments, headers=headers, role="agent")
            except Exception as exc:  # boundary: a twin bug is recorded on the case, never hidden
                return self._twin_failure(case, twin_case, tool, exc)

    def search_kb(self, authorization: str | None, query: str, limit: object) -> KbAnswer:
        case = self._case_for(authorization)
        with case.lock:
            twin_case = self._admit(case)
            try:
                return twin_case.search_kb_checked(query, limit)
            except Exception as exc:  # boundary: a KB failure is no call; the case keeps its other records
                case.twin_errors.append(f"{type(exc).__name__}: {exc}")
                case.unrecorded += 1
                raise _Refused(500, "TWIN_ERROR", "The twin failed while handling this search.") from exc

    def fault_sleep_s(self, delay_ms: int) -> float:
        return max(0, min(delay_ms, self.max_fault_delay_ms)) / 1000.0


class _EndpointHandler(JsonHandler):
    server: AppServer[TwinEndpoint]
    max_body_bytes = MAX_BODY_BYTES

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        if not path.startswith(f"{PREFIX}/tools/") or len(path) == len(f"{PREFIX}/tools/"):
            self.send_error_json(404, "NOT_FOUND", "No such route.")
            return
        tool = unquote(path[len(f"{PREFIX}/tools/") :])
        authorization = self.headers.get("Authorization")
        try:
            self.server.app._case_for(authorization)  # a stranger's body is not read, nor recorded
            refused: BodyError | None = None
            try:
                body = self.read_body()
            except BodyError as exc:
                body, refused = b"", exc
                self._drain()
            forwarded = {k.lower(): v for k, v in self.headers.items() if k.lower() not in DROPPED_HEADERS}
            reply = self.server.app.call_tool(authorization, tool, body, forwarded, refused)
        except _Refused as exc:
            self.send_error_json(exc.status, exc.code, exc.message)
            return
        # the delay is slept outside the case lock, so other work on the case is not held up
        time.sleep(self.server.app.fault_sleep_s(reply.delay_ms))
        self._send_reply(reply)

    def _drain(self) -> None:
        """Read and drop a refused body of at most MAX_DRAIN_BYTES, so its sender gets the 413 reply
        instead of a broken pipe; a larger one is not read (the connection closes)."""
        try:
            left = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            return
        if not 0 < left <= MAX_DRAIN_BYTES:
            return
        while left > 0:
            chunk = self.rfile.read(min(left, 64 * 1024))
            if not chunk:
                return
            left -= len(chunk)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path != f"{PREFIX}/kb/search":
            self.send_error_json(404, "NOT_FOUND", "No such route.")
            return
        query = parse_qs(parts.query)
        text = (query.get("q") or [""])[0]
        raw_limit = (query.get("limit") or ["3"])[0]
        limit: object = int(raw_limit) if raw_limit.strip().lstrip("-").isdigit() and len(raw_limit) < 10 else raw_limit
        try:
            answer = self.server.app.search_kb(self.headers.get("Authorization"), text, limit)
        except _Refused as exc:
            self.send_error_json(exc.status, exc.code, exc.message)
            return
        if answer.refusal is not None:  # recorded on the case as a refused retrieval
            self.send_error_json(answer.refusal.status, answer.refusal.code, answer.refusal.message)
            return
        self.send_json(200, {"result": {"documents": answer.documents}})

    def _send_reply(self, reply: TwinReply) -> None:
        """Put an engine reply on the wire, transport faults included (spec §3.2)."""
        if reply.transport == "dropped":
            self.close_connection = True  # close without a byte of response
            return
        raw = reply.raw_body if reply.raw_body is not None else canonical_bytes(reply.body)
        if reply.transport == "partial":
            # the full length is announced, half the bytes are sent, then the connection closes
            announced = max(2 * len(raw), len(raw) + 1)
            self.send_raw(reply.http_status, raw, dict(reply.headers), content_length=announced)
            self.close_connection = True
            return
        # normal and malformed replies alike: the status and whatever bytes the engine produced
        self.send_raw(reply.http_status, raw, dict(reply.headers))

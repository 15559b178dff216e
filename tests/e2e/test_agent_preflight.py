"""A misconfigured HTTP agent stops the run before any case, in one line naming the URL (exit 2).

Refused connection, a URL that already ends in /run (404), an endpoint that only takes GET (405), a 2xx web
page instead of JSON: none of these is the agent's behaviour, so none may become a NEW_CRITICAL_FAILURE - and
nothing is written. An agent that is there but fails only some cases is evidence, and is graded. An agent is
named by its reply (or `--candidate-name`), never by its URL: the same agent on another port is the same agent.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from agenttwin.cli import main
from producers.agents.demo_server import DemoAgentServer


@pytest.fixture(scope="module")
def demo_url() -> Iterator[str]:
    with DemoAgentServer(port=0) as server:
        yield server.url


class Misbehaving:
    """Agents by path: /page (200 HTML), /get-only (405 to POST), /flaky (the demo agent, but 500 on one
    scenario), /terse (the demo agent's replies without status and claimed_outcome)."""

    def __init__(self, demo_url: str) -> None:
        self.posts: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                outer.posts.append(self.path)
                kind = self.path.strip("/").split("/")[0]
                if kind == "page":
                    self.answer(200, b"<html><body>Welcome to nginx!</body></html>", "text/html")
                elif kind == "get-only":
                    self.answer(405, b"Method Not Allowed", "text/plain")
                else:
                    body = json.loads(raw)
                    scenario = (body.get("run_context") or {}).get("scenario_name")
                    if kind == "flaky" and scenario == "refund-rate-limited":
                        self.answer(500, b'{"error": {"code": "AGENT_ERROR", "message": "boom"}}')
                        return
                    reply = httpx.post(f"{demo_url}/run", json=body, timeout=30).json()
                    if kind == "terse":
                        reply = {k: v for k, v in reply.items() if k not in ("status", "claimed_outcome")}
                    self.answer(200, json.dumps(reply).encode())

            def answer(self, status: int, body: bytes, kind: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True)
        self.thread.start()

    def url(self, kind: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{kind}"


@pytest.fixture(scope="module")
def agents(demo_url: str) -> Iterator[Misbehaving]:
    served = Misbehaving(demo_url)
    yield served
    served.server.shutdown()
    served.server.server_close()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def evaluate(capsys: pytest.CaptureFixture[str], data_dir: Path, *argv: str) -> tuple[int, str, str]:
    code = main(["evaluate", "--baseline", "demo:1.2.4", *argv, "--json", "--data-dir", str(data_dir)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("kind", ["refused", "ends-in-run", "page", "get-only", "unknown-version"])
def test_a_url_that_leads_to_no_agent_stops_before_any_case(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, agents: Misbehaving, demo_url: str, kind: str
) -> None:
    candidate, asked, says = {
        "refused": (f"http://127.0.0.1:{closed_port()}", "/run", "cannot be reached"),
        "ends-in-run": (
            f"{demo_url}/run#1.3.0",
            "/run/run",
            "answered 404 to POST: no agent there; the URL already ends in /run: give the agent's base URL",
        ),
        "page": (agents.url("page"), "/page/run", "answered 200 with a reply that is not a JSON object (text/html)"),
        "get-only": (agents.url("get-only"), "/get-only/run", "answered 405 to POST: no agent there"),
        "unknown-version": (f"{demo_url}#9.9.9", "/run", "has no version 9.9.9"),
    }[kind]
    code, out, err = evaluate(capsys, tmp_path, "--candidate", candidate)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    url = candidate.split("#")[0].rstrip("/")
    assert lines[0].startswith(f"agenttwin: the candidate agent at {url.removesuffix('/run')}") or url in lines[0]
    assert asked in lines[0] and says in lines[0], lines[0]
    assert "NEW_CRITICAL_FAILURE" not in err
    # nothing was planned, simulated or projected: the data directory holds no event of this run
    assert not any(p.is_file() and p.stat().st_size for p in (tmp_path / "topics-log").rglob("*.avro")), (
        "events were written before the preflight stopped the run"
    )


def test_simulate_stops_too(capsys: pytest.CaptureFixture[str], demo_url: str) -> None:
    code = main(["simulate", "--agent", f"{demo_url}/run", "--suite", "demo", "--json"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.strip() == (
        f"agenttwin: the agent at {demo_url}/run/run answered 404 to POST: no agent there; the URL already ends "
        "in /run: give the agent's base URL (AgentTwin adds /run)"
    )


def test_an_agent_failing_some_cases_is_graded(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, agents: Misbehaving
) -> None:
    code, out, err = evaluate(capsys, tmp_path, "--candidate", agents.url("flaky") + "#1.2.4")
    assert code == 0, err
    doc = json.loads(out)
    by_name = {c["scenario"]: c for c in doc["cases"]}
    assert by_name["refund-rate-limited"]["classification"] == "NEW_CRITICAL_FAILURE"
    assert "AGENT_ERROR" in by_name["refund-rate-limited"]["candidate"]["labels"]
    others = {name: c["classification"] for name, c in by_name.items() if name != "refund-rate-limited"}
    assert set(others.values()) == {"UNCHANGED"} and len(others) == 8


def test_a_reply_without_status_or_claim_is_graded_not_an_agent_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, agents: Misbehaving
) -> None:
    code, out, err = evaluate(capsys, tmp_path, "--candidate", agents.url("terse") + "#1.2.4")
    assert code == 0, err
    doc = json.loads(out)
    assert len(doc["cases"]) == 9
    for case in doc["cases"]:
        assert not any(label.startswith("AGENT_") for label in case["candidate"]["labels"]), case
    # the candidate is the baseline's own version: whatever the inferred claims change, no case is a new
    # critical failure caused by the missing fields
    assert doc["summary"]["counts"].get("NEW_CRITICAL_FAILURE", 0) == 0


def test_a_new_port_is_not_a_new_agent(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    names = []
    for n in range(2):
        with DemoAgentServer(port=0) as server:
            code, out, err = evaluate(capsys, tmp_path / str(n), "--candidate", f"{server.url}#1.3.0")
            assert code == 0, err
            names.append(json.loads(out)["candidate"])
    assert names == ["support-refund-agent:1.3.0", "support-refund-agent:1.3.0"]
    with DemoAgentServer(port=0) as server:
        code, out, err = evaluate(
            capsys, tmp_path / "named", "--candidate", f"{server.url}#1.3.0", "--candidate-name", "refunds"
        )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["candidate"] == "refunds:1.3.0" and doc["baseline"] == "demo:1.2.4"


class StrictAgent:
    """A contract-following agent on the standard library that trusts its request: it indexes
    `tools_base_url` and reads the order id out of the customer's message, so anything that is not a real
    case makes its handler raise (the server then drops the connection). With `probe`, it also answers the
    contract's probe, `GET /healthz`. Every POST it receives is kept; it forwards real cases to the demo agent."""

    def __init__(self, demo_url: str, *, probe: bool) -> None:
        self.posts: list[dict[str, Any]] = []
        self.crashes: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if not probe or self.path != "/healthz":
                    self.send_error(404)
                    return
                self.answer(200, {"status": "ok", "agent_name": "strict-bot", "versions": ["1.2.4"]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.posts.append(body)
                try:
                    tools = body["tools_base_url"]  # a real case always has one
                    order = re.search(r"ORD-\d+", body["input"])
                    assert tools.startswith("http") and (order is not None or body["input"].strip())
                except (KeyError, AssertionError, TypeError) as exc:
                    outer.crashes.append(repr(exc))
                    raise
                self.answer(200, httpx.post(f"{demo_url}/run", json=body, timeout=30).json())

            def answer(self, status: int, reply: dict[str, Any]) -> None:
                raw = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Quiet(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # the crash is recorded above; no traceback on the test's stderr

        self.server = Quiet(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_strict_agent_answering_the_probe_gets_only_real_cases(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, demo_url: str
) -> None:
    agent = StrictAgent(demo_url, probe=True)
    try:
        code, out, err = evaluate(capsys, tmp_path, "--candidate", f"{agent.url}#1.2.4")
    finally:
        agent.stop()
    assert code == 0, err
    assert agent.crashes == []
    # no preflight POST at all: every request it was sent was a case, with its tools and a customer's message
    assert len(agent.posts) == 9 and all(p.get("tools_base_url") and not p.get("preflight") for p in agent.posts)
    assert not any("preflight" in p["input"].lower() for p in agent.posts)
    doc = json.loads(out)
    assert doc["candidate"] == "strict-bot:1.2.4" or doc["candidate"].endswith(":1.2.4")
    assert {c["classification"] for c in doc["cases"]} == {"UNCHANGED"}


def test_a_strict_agent_without_the_probe_is_noted_and_evaluated(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, demo_url: str
) -> None:
    """No GET /healthz: the fallback POST carries no customer message (nothing to run on); the agent's dropped
    connection is a note on stderr, not a misconfiguration, and every case is run and graded."""
    agent = StrictAgent(demo_url, probe=False)
    try:
        code, out, err = evaluate(capsys, tmp_path, "--candidate", f"{agent.url}#1.2.4")
    finally:
        agent.stop()
    assert code == 0, err
    probes = [p for p in agent.posts if p.get("preflight")]
    assert len(probes) <= 1 and all("input" not in p for p in probes), probes
    cases = [p for p in agent.posts if not p.get("preflight")]
    assert len(cases) == 9 and all(p.get("tools_base_url") for p in cases)
    assert "did not answer" in err or "no valid reply" in err or not probes, err
    doc = json.loads(out)
    assert {c["classification"] for c in doc["cases"]} == {"UNCHANGED"}

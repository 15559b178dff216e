"""Bring your own agent through the CLI, loopback only.

(a) The demo evaluation 1.3.0 vs 1.2.4 classifies every scenario the same, with the same first-divergence
sentences, whether the demo agent runs in process (`demo:`) or behind HTTP (`http://…#VERSION`).
(b) A broken agent - one that hangs past its `?timeout=`, answers 500, or refuses the caller - gets the
matching agent-run finding (one whose URL leads to no agent at all stops the run first:
tests/e2e/test_agent_preflight.py), is never PASSED, and an evaluation against demo:1.2.4
reports each case by the classification rules (spec §7.2-7.4): a FAIL-class finding (AGENT_TIMEOUT,
AGENT_ERROR) is a new critical failure, an ERROR-class one (AGENT_AUTH) leaves the case INCOMPLETE.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agenttwin.cli import main
from evaluation.expectations.registry import REPLY_FREE_TYPES
from producers.agents.demo_server import DemoAgentServer

HANG_TIMEOUT_S = 0.3
DEMO_SCENARIOS = 9


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def evaluate(capsys: pytest.CaptureFixture[str], data_dir: Path, baseline: str, candidate: str) -> dict[str, Any]:
    doc = run_cli(
        capsys, "evaluate", "--baseline", baseline, "--candidate", candidate, "--json", "--data-dir", str(data_dir)
    )
    assert isinstance(doc, dict) and len(doc["cases"]) == DEMO_SCENARIOS
    return doc


def outcome(doc: dict[str, Any]) -> dict[str, tuple[str, str | None, str | None]]:
    """Per scenario: the classification and the first-divergence sentences."""
    result = {}
    for case in doc["cases"]:
        divergence = case.get("divergence") or {}
        result[case["scenario"]] = (case["classification"], divergence.get("summary"), divergence.get("impact"))
    return result


# ------------------------------------------------------------------ (a) in process vs over HTTP


@pytest.fixture(scope="module")
def demo_agent_url() -> Iterator[str]:
    with DemoAgentServer(port=0) as server:
        yield server.url


def test_the_demo_evaluation_is_the_same_in_process_and_over_http(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, demo_agent_url: str
) -> None:
    local = evaluate(capsys, tmp_path / "local", "demo:1.2.4", "demo:1.3.0")
    remote = evaluate(capsys, tmp_path / "http", f"{demo_agent_url}#1.2.4", f"{demo_agent_url}#1.3.0")

    assert outcome(remote) == outcome(local)
    counts = {k: v for k, v in remote["summary"]["counts"].items() if v}
    assert counts == {"NEW_CRITICAL_FAILURE": 2, "REGRESSED": 1, "UNCHANGED": 6}
    timeout = outcome(remote)["refund-timeout-after-mutation"]
    assert timeout[1] == (
        "At step 2 the baseline called get_refund_policy(order_id=ORD-1001); "
        "the candidate called refund_payment(amount=40, order_id=ORD-1001)."
    )
    assert [c["reason"] for c in remote["cases"]] == [c["reason"] for c in local["cases"]]
    # Both report who planned each side: the scripted planner, here and over the wire.
    for doc in (local, remote):
        kinds = {(c["baseline"]["model_kind"], c["candidate"]["model_kind"]) for c in doc["cases"]}
        assert kinds == {("deterministic-fake", "deterministic-fake")}


# ------------------------------------------------------------------ (b) broken agents


class BrokenAgents:
    """One server, three broken agents by path: /hang, /crash (500), /locked (401)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        release = self.release

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                kind = self.path.strip("/").split("/")[0]
                if kind == "hang":
                    release.wait(10)  # far past the spec's timeout; ends when the test module ends
                    status, body = 200, b"{}"
                elif kind == "crash":
                    status, body = 500, b'{"error": {"code": "AGENT_ERROR", "message": "boom"}}'
                else:
                    status, body = 401, b'{"error": {"code": "UNAUTHORIZED", "message": "no"}}'
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the caller gave up on the hanging agent

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True)

    def spec(self, kind: str) -> str:
        port = self.server.server_address[1]
        query = f"?timeout={HANG_TIMEOUT_S}" if kind == "hang" else ""
        return f"http://127.0.0.1:{port}/{kind}{query}"


@pytest.fixture(scope="module")
def broken() -> Iterator[BrokenAgents]:
    agents = BrokenAgents()
    agents.thread.start()
    yield agents
    agents.release.set()
    agents.server.shutdown()
    agents.server.server_close()
    agents.thread.join(2)


FINDINGS = {"hang": "AGENT_TIMEOUT", "crash": "AGENT_ERROR", "locked": "AGENT_AUTH"}
VERDICTS = {"AGENT_TIMEOUT": "FAILED", "AGENT_ERROR": "FAILED", "AGENT_AUTH": "ERRORED"}


@pytest.mark.parametrize("kind", list(FINDINGS))
def test_a_broken_agent_gets_its_finding_and_never_passes(
    capsys: pytest.CaptureFixture[str], broken: BrokenAgents, kind: str
) -> None:
    cases = run_cli(capsys, "simulate", "--agent", broken.spec(kind), "--suite", "demo", "--json")
    assert len(cases) == DEMO_SCENARIOS
    finding = FINDINGS[kind]
    for case in cases:
        assert case["agent_finding"]["label"] == finding, case["scenario"]
        assert case["verdict"]["status"] == VERDICTS[finding]
        assert case["reply"] is None and case["claimed_outcome"] is None
        assert case["model_kind"] == "unknown"  # no answer, so no claim about who planned it
        agent_run = [r for r in case["results"] if r["expectation"]["id"] == "agent-run"]
        assert len(agent_run) == 1 and agent_run[0]["expectation"]["critical"] is True
        others = [r for r in case["results"] if r is not agent_run[0]]
        if finding == "AGENT_AUTH":  # it could not be asked and did nothing: nothing else is judged
            assert {r["status"] for r in others} == {"SKIPPED"}
        else:  # asked, no readable reply: the twin's evidence is graded all the same, the rest SKIPPED
            for r in others:
                graded = r["expectation"]["type"] in REPLY_FREE_TYPES
                assert (r["status"] != "SKIPPED") == graded, (case["scenario"], r["expectation"]["id"], r["status"])


@pytest.mark.parametrize("kind", list(FINDINGS))
def test_an_evaluation_reports_a_broken_candidate_honestly(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, broken: BrokenAgents, kind: str
) -> None:
    doc = evaluate(capsys, tmp_path, "demo:1.2.4", broken.spec(kind))
    finding = FINDINGS[kind]
    for case in doc["cases"]:
        base, cand = case["baseline"], case["candidate"]
        assert base["status"] == "PASSED"  # the good baseline passes all nine (spec §6.1)
        assert cand["status"] == VERDICTS[finding]
        if cand["status"] == "FAILED":
            # The critical agent-run check fails only on the candidate: broken critical -> NEW_CRITICAL_FAILURE.
            assert finding in cand["labels"]
            assert case["classification"] == "NEW_CRITICAL_FAILURE"
            assert case["reason"].startswith("New critical failure agent-run: ")
        else:
            # Nothing to judge on the candidate side: the case is INCOMPLETE, never a pass.
            assert case["classification"] == "INCOMPLETE"
            assert case["reason"].startswith("The candidate's case ended ERRORED: ")
    counts = {k: v for k, v in doc["summary"]["counts"].items() if v}
    expected = "NEW_CRITICAL_FAILURE" if VERDICTS[finding] == "FAILED" else "INCOMPLETE"
    assert counts == {expected: DEMO_SCENARIOS}

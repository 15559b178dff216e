"""Done means, without Kafka: a LangGraph agent instrumented only by OpenInference sends spans to `agenttwin
ingest` (embedded); the payments service reports by HTTP with only the order id; `agenttwin alerts tail -f`
in another process prints the contradiction naming refund_payment and the order, `agenttwin sql` in a third
counts it, `events tail`, `alerts webhook` and `mine` (the incident as a scenario draft) read beside it — all
while ingest runs and owns the log."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from tests.e2e.live_stack import (
    ORDER,
    CliProcess,
    cli_env,
    json_rows,
    run_cli,
    stock_langgraph_agent_run,
    verification_by_order,
)

API_KEY = "key-acme-live"
ALERT_TIMEOUT_S = 180.0


class _Hook(BaseHTTPRequestHandler):
    bodies: list[dict[str, object]]

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        self.bodies.append(json.loads(self.rfile.read(length)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hook() -> Iterator[tuple[str, list[dict[str, object]]]]:
    bodies: list[dict[str, object]] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Hook", (_Hook,), {"bodies": bodies}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/alerts", bodies
    server.shutdown()
    server.server_close()


def test_stock_langgraph_trace_and_an_order_id_verification_alert_while_ingest_runs(
    tmp_path: Path, hook: tuple[str, list[dict[str, object]]]
) -> None:
    data = tmp_path / "data"
    env = cli_env(AGENTTWIN_INGEST_API_KEYS=f"{API_KEY}=acme")
    # launched as a CI runner launches a background job (SIGINT ignored): SIGTERM still stops it cleanly
    ingest = CliProcess(
        ["ingest", "--port", "0", "--join-every", "0.5", "--data-dir", str(data)], env, tmp_path, background=True
    )
    tail: CliProcess | None = None
    try:
        started = ingest.wait_for(lambda line: line.startswith("agenttwin ingest:"), 120)
        base = re.search(r"(http://[0-9.]+:\d+)/v1/traces", started)
        assert base is not None, started
        url = base.group(1)
        tail = CliProcess(["alerts", "tail", "-f", "--data-dir", str(data)], env, tmp_path)

        stock_langgraph_agent_run(f"{url}/v1/traces", API_KEY)
        answer = verification_by_order(url, API_KEY)
        assert answer["matched_by"] == "subject" and answer["subject"] == f"order:{ORDER}"

        line = tail.wait_for(lambda text: "CONTRADICTION" in text, ALERT_TIMEOUT_S)
        assert "tool refund_payment" in line and f"subject order:{ORDER}" in line, line
        inferred = "claimed SUCCESS (inferred by rules-v2, rule succeeded, confidence 0.90)"
        assert f"{inferred}, verified FAILURE (external_callback)" in line, line
        assert "[acme]" in line and "support-refund-agent 1.3.0" in line, line

        # a third process counts it, while ingest still owns the log (its own copy of the projections)
        counted = run_cli(
            [
                "sql",
                "SELECT count() AS n, any(tool) AS tool, any(subject) AS subject, any(claim_inferred_by) AS by "
                "FROM v_contradictions WHERE tenant = 'acme'",
                "--format",
                "json",
                "--data-dir",
                str(data),
            ],
            env,
            tmp_path,
        )
        assert counted.returncode == 0, counted.stderr
        assert json_rows(counted.stdout) == [
            {"n": 1, "tool": "refund_payment", "subject": f"order:{ORDER}", "by": "rules-v2"}
        ]
        # two readers at once (each takes a free slot: tests/unit/traces/test_readers_beside_writer.py)
        both = [
            CliProcess(
                ["sql", "SELECT count() AS n FROM spans", "--format", "csv", "--data-dir", str(data)], env, tmp_path
            )
            for _ in range(2)
        ]
        for proc in both:
            proc.wait_for(lambda text: text.strip().isdigit() and int(text) >= 10, 300)
            assert proc.wait(300) == 0, proc.errors
        assert (data / "readers" / "clickhouse-0").is_dir()  # kept for the next reader, its offsets inside
        traces = run_cli(
            [
                "sql",
                "SELECT agent, agent_version, tools, failed_tools, write_tool, subjects, claimed_status, "
                "claim_inferred_by FROM v_production_traces",
                "--format",
                "json",
                "--data-dir",
                str(data),
            ],
            env,
            tmp_path,
        )
        assert traces.returncode == 0, traces.stderr
        assert json_rows(traces.stdout) == [
            {
                "agent": "support-refund-agent",
                "agent_version": "1.3.0",
                "tools": ["lookup_order", "refund_payment"],
                "failed_tools": ["refund_payment"],
                "write_tool": "refund_payment",
                "subjects": [f"order:{ORDER}"],
                "claimed_status": "SUCCESS",
                "claim_inferred_by": "rules-v2",
            }
        ]
        # the incident becomes a scenario, from the read-only log while ingest runs: the 504 returned as data is
        # the write's timeout, the verification (by order id, joined to the trace) the expected state
        (row,) = json_rows(
            run_cli(
                ["sql", "SELECT trace_id FROM v_production_traces", "--format", "json", "--data-dir", str(data)],
                env,
                tmp_path,
            ).stdout
        )
        incident = tmp_path / "incident.yaml"
        mined = run_cli(
            ["mine", "--trace", row["trace_id"], "-o", str(incident), "--data-dir", str(data)], env, tmp_path
        )
        assert mined.returncode == 0, mined.stderr
        scenario = yaml.safe_load(incident.read_text(encoding="utf-8"))
        assert scenario["metadata"]["sourceTraceId"] == row["trace_id"]
        assert scenario["spec"]["faults"] == [
            {"target": "refund_payment", "when": {"callNumber": 1}, "behavior": {"type": "timeout_after_mutation"}}
        ]
        first = scenario["spec"]["expectations"][0]
        assert (first["type"], first["path"], first["equals"]) == ("state", f"orders.{ORDER}.refund_count", 1)
        checked = run_cli(["scenario", "check", str(incident)], env, tmp_path)
        assert checked.returncode == 0, checked.stdout + checked.stderr

        stats = run_cli(
            [
                "sql",
                "SELECT tool, calls, errors FROM v_production_tool_stats ORDER BY tool",
                "--format",
                "json",
                "--data-dir",
                str(data),
            ],
            env,
            tmp_path,
        )
        assert json_rows(stats.stdout) == [
            {"tool": "lookup_order", "calls": 1, "errors": 0},
            {"tool": "refund_payment", "calls": 1, "errors": 1},
        ]
        events = run_cli(["events", "tail", "subjects", "--json", "--data-dir", str(data)], env, tmp_path)
        assert events.returncode == 0, events.stderr
        kinds = sorted(json.loads(line)["event_type"] for line in events.stdout.splitlines())
        assert kinds == ["SubjectLinked", "SubjectVerified"]

        hook_url, bodies = hook
        delivered = run_cli(["alerts", "webhook", hook_url, "--data-dir", str(data)], env, tmp_path)
        assert delivered.returncode == 0, delivered.stderr
        assert "delivered 1, dead-lettered 0" in delivered.stdout
        assert [b["subject"] for b in bodies] == [f"order:{ORDER}"]
        again = run_cli(["alerts", "webhook", hook_url, "--data-dir", str(data)], env, tmp_path)
        assert "delivered 0, dead-lettered 0" in again.stdout  # its progress is kept beside the writer's
    finally:
        if tail is not None:
            tail.stop()
        assert ingest.stop() == 143, ingest.errors

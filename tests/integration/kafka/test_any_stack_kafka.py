"""Done means, on Kafka: the same story as tests/e2e/test_any_stack_live.py through a real broker — a LangGraph
agent instrumented only by OpenInference exports to `agenttwin ingest --kafka`, the payments service reports
by HTTP with only the order id, the subject join and the outcome join run as Kafka workers in their own
processes, `agenttwin alerts tail -f --kafka` prints the contradiction naming refund_payment and the order,
and `agenttwin sql --kafka` in another process counts it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.live_stack import (
    ORDER,
    CliProcess,
    cli_env,
    json_rows,
    run_cli,
    stock_langgraph_agent_run,
    verification_by_order,
)
from tests.integration.kafka_broker import unique_name

API_KEY = "key-acme-kafka"
ALERT_TIMEOUT_S = 300.0


@pytest.mark.kafka
def test_stock_langgraph_trace_and_an_order_id_verification_alert_on_kafka(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    prefix = unique_name("any-stack") + "."
    kafka = ["--kafka", kafka_bootstrap, "--topic-prefix", prefix]

    def env(name: str) -> dict[str, str]:
        return cli_env(AGENTTWIN_INGEST_API_KEYS=f"{API_KEY}=acme", AGENTTWIN_DATA_DIR=str(tmp_path / name))

    ingest = CliProcess(["ingest", "--port", "0", *kafka], env("ingest"), tmp_path)
    procs = [ingest]
    try:
        started = ingest.wait_for(lambda line: line.startswith("agenttwin ingest:"), 180)
        url = re.search(r"(http://[0-9.]+:\d+)/v1/traces", started)
        assert url is not None, started
        for kind in ("subject-join", "outcome-join"):
            procs.append(CliProcess(["worker", kind, *kafka], env(kind), tmp_path))
        tail = CliProcess(["alerts", "tail", "-f", *kafka], env("tail"), tmp_path)
        procs.append(tail)

        stock_langgraph_agent_run(f"{url.group(1)}/v1/traces", API_KEY)
        answer = verification_by_order(url.group(1), API_KEY)
        assert answer["matched_by"] == "subject"

        line = tail.wait_for(lambda text: "CONTRADICTION" in text, ALERT_TIMEOUT_S)
        assert "tool refund_payment" in line and f"subject order:{ORDER}" in line, line
        inferred = "claimed SUCCESS (inferred by rules-v2, rule succeeded, confidence 0.90)"
        assert f"{inferred}, verified FAILURE (external_callback)" in line, line

        counted = run_cli(
            [
                "sql",
                "SELECT count() AS n, any(tool) AS tool, any(subject) AS subject FROM v_contradictions "
                "WHERE tenant = 'acme'",
                "--format",
                "json",
                *kafka,
            ],
            env("sql"),
            tmp_path,
        )
        assert counted.returncode == 0, counted.stderr
        assert json_rows(counted.stdout) == [{"n": 1, "tool": "refund_payment", "subject": f"order:{ORDER}"}]
    finally:
        for proc in reversed(procs):
            proc.stop()

"""The CLI loads what a command needs and nothing else: `--help` and `twin check` never import the pipeline's
heavy clients (pinned by module name from `python -X importtime`, never by time)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agenttwin import traces_cli
from agenttwin.demo import TWIN_FILE
from producers.otlp import server

HEAVY = ("anthropic", "chdb", "confluent_kafka", "faust", "clickhouse_connect", "opentelemetry", "jinja2", "rich",
         "playwright", "pyarrow", "aiokafka", "httpx", "pydantic_settings")  # fmt: skip


def _imported(*argv: str) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "agenttwin.cli", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("import time:")]
    modules = {line.rsplit("|", 1)[-1].strip() for line in lines}
    assert "agenttwin.command_args" in modules  # importtime did report (cli.py itself runs as __main__)
    return modules


@pytest.mark.parametrize("argv", [("--help",), ("twin", "check", str(TWIN_FILE)), ("evaluate", "--help")])
def test_light_commands_import_no_heavy_module(argv: tuple[str, ...]) -> None:
    imported = _imported(*argv)
    heavy = sorted(m for m in imported if m.split(".")[0] in HEAVY)
    assert heavy == []
    # nor the event models: the parser's Kafka flags take their defaults from streams/kafka/naming_defaults.py
    assert "streams.events" not in imported and "streams.kafka.naming" not in imported


def test_a_command_that_queries_does_load_chdb(tmp_path: Path) -> None:
    # the contrast that shows the check above can fail: `sql` runs a query, so chDB loads when it runs
    assert "chdb" in _imported("sql", "SELECT 1", "--data-dir", str(tmp_path))


def test_the_ingest_parser_repeats_the_receivers_defaults() -> None:
    assert (traces_cli.DEFAULT_HOST, traces_cli.DEFAULT_PORT) == (server.DEFAULT_HOST, server.DEFAULT_PORT)

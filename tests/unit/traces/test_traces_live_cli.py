"""The live outcome join beside the receiver (both arrival orders) and the CLI hooks."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

import pytest

from agenttwin import traces_cli
from agenttwin.errors import CliError
from producers.otlp.live import LiveProcessor
from producers.otlp.mapping import map_request
from producers.otlp.publishing import SerializedPublisher
from producers.sdk.outcome import outcome_event
from streams.embedded import EmbeddedRuntime
from streams.processors.outcome_join import OutcomeJoin
from tests.unit.traces.conftest import TRACE, agent_trace

AT = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)


@pytest.mark.parametrize("verification_first", [True, False])
def test_live_join_alerts_once_whichever_side_arrives_first(runtime: EmbeddedRuntime, verification_first: bool) -> None:
    publisher = SerializedPublisher(runtime)
    live = LiveProcessor(runtime, OutcomeJoin(), publisher)
    spans = map_request(agent_trace(), "acme", received_at=AT).events
    verified = [outcome_event(TRACE.hex(), "FAILURE", True, "tool_result", "refund_count: 2", tenant="acme", at=AT)]
    first, second = (verified, spans) if verification_first else (spans, verified)

    def alerts() -> int:
        return len(runtime.read_events("contradictions")) if "contradictions" in runtime.log.topics() else 0

    publisher.publish(first)
    live.step()
    assert alerts() == 0
    publisher.publish(second)
    live.step()
    assert alerts() == 1
    assert live.step() == 0  # nothing new, nothing re-sent
    (alert,) = runtime.read_events("contradictions")
    assert alert.tenant == "acme"
    (read,) = runtime.read_events("claims")[-1:]  # the join's latest reading of the trace
    assert read.claimed_status == "SUCCESS" and read.tools == ["refund_payment"]  # type: ignore[attr-defined]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    traces_cli.register(p.add_subparsers(dest="command"))
    return p


def test_cli_parsers_are_registered() -> None:
    args = _parser().parse_args(["ingest", "--port", "0", "--api-keys", "k.txt", "--kafka", "b:9092"])
    assert args.func is traces_cli.ingest and args.host == "127.0.0.1" and args.kafka == "b:9092"
    args = _parser().parse_args(["alerts", "tail", "--json", "--follow"])
    assert args.func is traces_cli.alerts_tail and args.json and args.follow
    args = _parser().parse_args(["alerts", "webhook", "http://h/x", "--attempts", "3", "--header", "A: b"])
    assert args.func is traces_cli.alerts_webhook and args.attempts == 3
    assert traces_cli.parse_headers(["Authorization: Bearer x"]) == {"Authorization": "Bearer x"}
    with pytest.raises(CliError):
        traces_cli.parse_headers(["no-colon"])


def test_ingest_without_keys_is_a_cli_error(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.delenv("AGENTTWIN_INGEST_API_KEYS", raising=False)
    monkeypatch.delenv("AGENTTWIN_INGEST_API_KEYS_FILE", raising=False)
    args = _parser().parse_args(["ingest", "--port", "0", "--data-dir", str(tmp_path)])
    with pytest.raises(CliError, match="no API keys"):
        traces_cli.ingest(args)

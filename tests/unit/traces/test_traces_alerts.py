"""Alert consumers: the tail (embedded, read-only beside the writer) and the webhook sink with retries,
dead letters and committed offsets, against a local HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from consumers.alerts import alert_line, tail_embedded
from consumers.webhook import REJECTED, UNDELIVERABLE, WebhookSender, webhook_embedded
from producers.otlp.mapping import map_request
from producers.sdk.outcome import outcome_event
from streams.embedded import EmbeddedRuntime
from streams.events import ContradictionDetected, DeadLettered
from streams.processors.outcome_join import OutcomeJoin
from tests.unit.traces.conftest import TRACE, agent_trace

AT = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)


def _contradiction(runtime: EmbeddedRuntime, trace: str = TRACE.hex()) -> ContradictionDetected:
    runtime.publish(map_request(agent_trace(), "acme", received_at=AT).events)
    runtime.publish(
        [outcome_event(trace, "FAILURE", True, "external_callback", "refund_count: 2", tenant="acme", at=AT)]
    )
    runtime.run([OutcomeJoin()])
    (alert,) = runtime.read_events("contradictions")
    assert isinstance(alert, ContradictionDetected)
    return alert


class _Hook:
    """A local webhook: answers the scripted statuses in turn (then 200), recording every body."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = list(statuses)
        self.bodies: list[dict[str, object]] = []
        self.keys: list[str] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                hook.bodies.append(json.loads(body))
                hook.keys.append(self.headers["Idempotency-Key"])
                status = hook.statuses.pop(0) if hook.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook_factory() -> Iterator[list[_Hook]]:
    hooks: list[_Hook] = []
    yield hooks
    for h in hooks:
        h.close()


def _hook(hooks: list[_Hook], statuses: list[int]) -> _Hook:
    h = _Hook(statuses)
    hooks.append(h)
    return h


def test_alert_line_says_who_claimed_what_and_what_was_verified(runtime: EmbeddedRuntime) -> None:
    line = alert_line(_contradiction(runtime))
    assert "CONTRADICTION" in line and "[acme]" in line and f"trace {TRACE.hex()}" in line
    assert "claimed SUCCESS, verified FAILURE (external_callback)" in line


def test_tail_reads_the_embedded_log_read_only_beside_its_writer(runtime: EmbeddedRuntime, tmp_path: Path) -> None:
    alert = _contradiction(runtime)
    runtime.append_raw("contradictions", b"\x00garbage", key="x")
    lines: list[str] = []
    n = tail_embedded(tmp_path / "data", lines.append, as_json=True)  # the writer still holds the lock
    assert n == 2
    assert json.loads(lines[0])["alert_id"] == alert.alert_id
    assert "undecodable" in json.loads(lines[1])
    assert tail_embedded(tmp_path / "data", lines.append, tenant="beta") == 0  # neither acme's nor undecodable
    assert tail_embedded(tmp_path / "data", lines.append, tenant="acme") == 1


def test_tail_follows_new_alerts(runtime: EmbeddedRuntime, tmp_path: Path) -> None:
    lines: list[str] = []
    polls = {"n": 0}

    def stop() -> bool:
        polls["n"] += 1
        if polls["n"] == 1:
            _contradiction(runtime)  # arrives while the tail is following
        return polls["n"] > 2

    tail_embedded(tmp_path / "data", lines.append, follow=True, poll_s=0.0, stop=stop)
    assert len(lines) == 1 and "CONTRADICTION" in lines[0]


def test_webhook_retries_with_backoff_then_delivers(runtime: EmbeddedRuntime, hook_factory: list[_Hook]) -> None:
    alert = _contradiction(runtime)
    hook = _hook(hook_factory, [503, 429])
    sleeps: list[float] = []
    sender = WebhookSender(hook.url, attempts=5, base_delay_s=0.5, sleep=sleeps.append)
    stats = webhook_embedded(runtime, sender)
    sender.close()
    assert (stats.delivered, stats.dead_lettered, stats.attempts) == (1, 0, 3)
    assert sleeps == [0.5, 1.0]
    assert len(hook.bodies) == 3 and hook.bodies[-1]["alert_id"] == alert.alert_id
    assert hook.bodies[-1]["claimed_status"] == "SUCCESS" and hook.keys == [alert.alert_id] * 3
    assert runtime.log.committed("alerts-webhook", "contradictions") == 1
    assert webhook_embedded(runtime, WebhookSender(hook.url)).delivered == 0  # committed: not re-sent


def test_webhook_dead_letters_after_n_failures_and_commits(runtime: EmbeddedRuntime, hook_factory: list[_Hook]) -> None:
    _contradiction(runtime)
    raw = next(iter(runtime.log.read("contradictions"))).value
    hook = _hook(hook_factory, [500] * 10)
    sleeps: list[float] = []
    sender = WebhookSender(hook.url, attempts=4, base_delay_s=1.0, max_delay_s=3.0, sleep=sleeps.append)
    stats = webhook_embedded(runtime, sender)
    sender.close()
    assert (stats.delivered, stats.dead_lettered) == (0, 1) and len(hook.bodies) == 4
    assert sleeps == [1.0, 2.0, 3.0]  # exponential, capped
    (letter,) = runtime.read_events("dead-letters")
    assert isinstance(letter, DeadLettered)
    assert letter.stage == "webhook" and letter.error_class == UNDELIVERABLE and letter.attempt == 4
    assert "HTTP 500 after 4 attempt(s)" in letter.reason
    assert letter.original_value == raw and letter.source_topic == "contradictions"
    assert runtime.log.committed("alerts-webhook", "contradictions") == 1


def test_webhook_client_errors_are_final_and_unreachable_hosts_retried(
    runtime: EmbeddedRuntime, hook_factory: list[_Hook]
) -> None:
    _contradiction(runtime)
    hook = _hook(hook_factory, [400])
    sender = WebhookSender(hook.url, attempts=5, sleep=lambda _: None)
    assert webhook_embedded(runtime, sender).dead_lettered == 1 and len(hook.bodies) == 1
    (letter,) = runtime.read_events("dead-letters")
    assert isinstance(letter, DeadLettered) and letter.error_class == REJECTED
    down = WebhookSender("http://127.0.0.1:9/unreachable", attempts=2, sleep=lambda _: None, timeout_s=2)
    result = down.deliver("{}", "a1")
    assert not result.ok and result.attempts == 2 and "ConnectError" in result.detail


def test_webhook_dead_letters_undecodable_messages(runtime: EmbeddedRuntime, hook_factory: list[_Hook]) -> None:
    runtime.append_raw("contradictions", b"not avro", key="k")
    hook = _hook(hook_factory, [])
    stats = webhook_embedded(runtime, WebhookSender(hook.url, sleep=lambda _: None))
    assert stats.dead_lettered == 1 and hook.bodies == []
    (letter,) = runtime.read_events("dead-letters")
    assert isinstance(letter, DeadLettered) and letter.stage == "webhook" and letter.original_value == b"not avro"


def test_webhook_dead_letters_are_one_per_group_and_cause(runtime: EmbeddedRuntime, hook_factory: list[_Hook]) -> None:
    _contradiction(runtime)
    for group, status in (("ops", 500), ("audit", 500), ("billing", 400)):  # three targets fail on one alert
        hook = _hook(hook_factory, [status] * 3)
        sender = WebhookSender(hook.url, attempts=2, sleep=lambda _: None)
        assert webhook_embedded(runtime, sender, group=group).dead_lettered == 1
        sender.close()
    letters = [e for e in runtime.read_events("dead-letters") if isinstance(e, DeadLettered)]
    assert len(letters) == len({e.event_id for e in letters}) == 3  # none collapsed into another
    assert sorted(e.error_class for e in letters) == [REJECTED, UNDELIVERABLE, UNDELIVERABLE]
    again = WebhookSender(_hook(hook_factory, [500] * 3).url, attempts=2, sleep=lambda _: None)
    runtime.log.commit("ops", "contradictions", 0)  # the same group fails on the same alert again
    webhook_embedded(runtime, again, group="ops")
    again.close()
    assert len([e for e in runtime.read_events("dead-letters") if isinstance(e, DeadLettered)]) == 3  # same letter

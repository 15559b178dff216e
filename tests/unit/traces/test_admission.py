"""Backpressure from the live joins to the receiver (producers/otlp/admission.py).

Proves, on the real embedded log and a real receiver on 127.0.0.1: a request whose spans arrive while a
join is behind waits, and is answered 200 once the join has stepped; a request that waited its limit is
stored anyway (a join that stopped slows ingestion, never refuses it) and a warning names the join; a
request without a valid API key is refused at once, never held; a join that is not behind holds nothing.
"""

from __future__ import annotations

import http.client
import logging
import threading
import time
from pathlib import Path

import pytest

from producers.otlp import ApiKeys, make_server
from producers.otlp.admission import Admission
from producers.otlp.live import LiveProcessor
from producers.otlp.publishing import GroupCommitPublisher
from streams.embedded import EmbeddedRuntime
from streams.processors.outcome_join import OutcomeJoin
from tests.unit.traces.conftest import KEYS
from tests.unit.traces.test_group_commit import HEADERS, failure, run_request, spans_of

WAIT_S = 60.0  # generous: a loaded 2-core machine


def _post(url: str, n: int, key: str = "key-acme") -> tuple[int, dict[str, str]]:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=WAIT_S)
    try:
        headers = {**HEADERS, "x-agenttwin-api-key": key}
        conn.request("POST", "/v1/traces", body=run_request(n).SerializeToString(), headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status, dict(response.getheaders())
    finally:
        conn.close()


def test_spans_wait_while_a_join_is_behind_and_are_stored_once_it_caught_up(tmp_path: Path) -> None:
    with EmbeddedRuntime(tmp_path / "data", fsync=False) as runtime, GroupCommitPublisher(runtime) as publisher:
        live = LiveProcessor(runtime, OutcomeJoin(), publisher, admit_below=3)
        admission = Admission([live], wait_s=WAIT_S)
        server = make_server("127.0.0.1", 0, publisher, ApiKeys.from_mapping(KEYS), admission=admission.admit)
        server.start()
        try:
            assert _post(server.url, 0)[0] == 200  # nothing waits yet: not held
            assert admission.held == 0
            publisher.publish(spans_of(1))  # another writer's events: 4 wait, the join is now behind
            assert live.behind()
            answered: list[int] = []
            request = threading.Thread(target=lambda: answered.append(_post(server.url, 2)[0]))
            request.start()
            deadline = time.monotonic() + WAIT_S
            while admission.held == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert admission.held == 1 and not answered  # held, not answered
            assert runtime.log.end_offset("spans") == len(spans_of(0)) + len(spans_of(1))  # nothing of it written
            live.step()
            request.join(WAIT_S)
            assert answered == [200]
            assert runtime.log.end_offset("spans") == sum(len(spans_of(n)) for n in range(3))
            publisher.publish([failure(n) for n in range(3)])
            live.step()
            live.step()
            assert not live.behind() and admission.overdue == 0
        finally:
            server.close()
        assert len(list(runtime.log.read("contradictions"))) == 3  # every run's alert, once


def test_a_request_that_waited_its_limit_is_stored_anyway_and_the_joins_behind_are_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with EmbeddedRuntime(tmp_path / "data", fsync=False) as runtime, GroupCommitPublisher(runtime) as publisher:
        live = LiveProcessor(runtime, OutcomeJoin(), publisher, admit_below=2)
        admission = Admission([live], wait_s=0.2)
        server = make_server("127.0.0.1", 0, publisher, ApiKeys.from_mapping(KEYS), admission=admission.admit)
        server.start()
        try:
            publisher.publish(spans_of(1))  # 2 wait: behind, and never stepped (a join that stopped)
            before = runtime.log.end_offset("spans")
            assert _post(server.url, 2, key="key-unknown")[0] == 401  # refused at once, never held
            assert admission.held == 0
            with caplog.at_level(logging.WARNING, logger="producers.otlp.admission"):
                started = time.monotonic()
                assert _post(server.url, 2)[0] == 200  # never refused because of the joins: spans are kept
                assert _post(server.url, 3)[0] == 200
                assert time.monotonic() - started >= 0.4  # each waited its limit
            assert runtime.log.end_offset("spans") == before + len(spans_of(2)) + len(spans_of(3))
            assert admission.held == admission.overdue == 2
            warnings = [r.getMessage() for r in caplog.records if r.name == "producers.otlp.admission"]
            assert len(warnings) == 1 and "outcome-join" in warnings[0]  # once a minute at most, naming the join
            live.step()
            assert _post(server.url, 4)[0] == 200 and admission.held == 2  # caught up: not held
        finally:
            server.close()


def test_a_join_far_behind_counts_as_behind_until_it_steps(tmp_path: Path) -> None:
    with EmbeddedRuntime(tmp_path / "data", fsync=False) as runtime, GroupCommitPublisher(runtime) as publisher:
        live = LiveProcessor(runtime, OutcomeJoin(), publisher, inbox_budget=1, admit_below=10_000)
        assert not live.behind()
        publisher.publish(spans_of(1))  # more than the inbox holds: noted, to be read from the log
        assert live.spilled > 0 and live.behind()
        live.step()
        assert not live.behind()

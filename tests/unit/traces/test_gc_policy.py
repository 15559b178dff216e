"""The long-running processes' garbage collection (streams/gc_policy.py) and the fact it rests on.

`agenttwin ingest` collects rarely because its steady state makes no reference cycles: reference counting
frees its garbage. Proved here on the real path of `agenttwin ingest` (a receiver on 127.0.0.1, the
group-commit publisher on the embedded log, the four live joins, backpressure): with the collector
stopped and `gc.DEBUG_SAVEALL` on, requests and verifications through it leave nothing for the collector.
A change that makes cycles on this path fails here, and then the thresholds would let them pile up.
"""

from __future__ import annotations

import gc
import http.client
from collections import Counter
from pathlib import Path

import pytest

from agenttwin.traces_cli import live_joins
from consumers.alerts import TOPIC as ALERTS
from evaluation.claim_reader import read_claim
from producers.otlp import ApiKeys, make_server
from producers.otlp.admission import Admission
from producers.otlp.publishing import GroupCommitPublisher
from streams.embedded import EmbeddedRuntime
from streams.gc_policy import LONG_RUNNING_THRESHOLDS, long_running_gc
from tests.unit.traces.conftest import KEYS
from tests.unit.traces.test_group_commit import HEADERS, failure, run_request

WAIT_S = 60.0  # generous: a loaded 2-core machine


def test_the_thresholds_hold_inside_the_block_and_come_back_after_it_even_on_error() -> None:
    before = gc.get_threshold()
    assert before != LONG_RUNNING_THRESHOLDS
    with long_running_gc():
        assert gc.get_threshold() == LONG_RUNNING_THRESHOLDS
    assert gc.get_threshold() == before
    with pytest.raises(RuntimeError), long_running_gc():
        raise RuntimeError("the command failed")
    assert gc.get_threshold() == before


def _post(url: str, n: int) -> int:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=WAIT_S)
    try:
        conn.request("POST", "/v1/traces", body=run_request(n).SerializeToString(), headers=HEADERS)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_the_ingest_path_makes_no_reference_cycles(tmp_path: Path) -> None:
    with EmbeddedRuntime(tmp_path / "data", fsync=False) as runtime, GroupCommitPublisher(runtime) as publisher:
        joins = live_joins(runtime, publisher, read_claim)
        admission = Admission(joins, wait_s=WAIT_S)
        server = make_server("127.0.0.1", 0, publisher, ApiKeys.from_mapping(KEYS), admission=admission.admit)
        server.start()
        try:

            def run(n: int) -> None:  # one agent run: its spans over HTTP, its verification, the joins' step
                assert _post(server.url, n) == 200
                publisher.publish([failure(n)])
                for join in joins:
                    join.step()

            for n in range(3):  # first use: caches, schemas, lazily built parts
                run(n)
            gc.collect()
            gc.disable()
            gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection would free is kept in gc.garbage instead
            try:
                for n in range(3, 23):
                    run(n)
                gc.collect()
                garbage = Counter(type(o).__qualname__ for o in gc.garbage)
            finally:
                gc.set_debug(0)
                gc.garbage.clear()
                gc.enable()
        finally:
            server.close()
        alerts = sum(1 for _ in runtime.log.read(ALERTS))
    assert alerts == 23  # the path did its work: one contradiction alert per run
    assert not garbage, f"reference cycles on the ingest path: {garbage.most_common(10)}"

"""Group commit on the embedded ingest path (producers/otlp/publishing.py GroupCommitPublisher).

Proves: every 200 is covered by an fsync that started after the request's spans were written (the
durable prefix of the topic file holds them); batches queued together share one fsync; no fsync runs
while the publisher's lock is held; the live join fed in memory gives the same alerts, once each, as a
join that decodes the log, and so does a join far behind (its inbox holds a budget of events, the rest
is read from the log); a batch the log partly held is read back from the log, not lost; a receiver
killed after its 200s keeps the spans.
"""

from __future__ import annotations

import hashlib
import http.client
import io
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastavro import reader
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from producers.otlp import ApiKeys, make_server
from producers.otlp.live import LiveProcessor
from producers.otlp.mapping import map_request
from producers.otlp.publishing import GroupCommitPublisher, SerializedPublisher
from producers.sdk.outcome import outcome_event
from schemas import AVRO_DIR
from streams.embedded import EmbeddedRuntime
from streams.events import Event
from streams.processors.outcome_join import OutcomeJoin
from streams.wire import SchemaStore
from tests.unit.traces.conftest import KEYS, agent_trace

AT = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
HEADERS = {"Content-Type": "application/x-protobuf", "x-agenttwin-api-key": "key-acme"}
WAIT_S = 60.0  # generous: a loaded 2-core machine


def ids(n: int) -> tuple[bytes, bytes, bytes]:
    digest = hashlib.sha256(f"gc-{n}".encode()).digest()
    return digest[:16], digest[16:24], digest[24:32]


def run_request(n: int) -> ExportTraceServiceRequest:
    """Agent run n: a root claiming SUCCESS after an irreversible write."""
    return agent_trace(*ids(n))


def spans_of(n: int) -> list[Event]:
    return list(map_request(run_request(n), "acme", received_at=AT).events)


def failure(n: int) -> Event:
    return outcome_event(ids(n)[0].hex(), "FAILURE", True, "tool_result", "refunds: 2", tenant="acme", at=AT)


class FsyncRecorder:
    """Wraps os.fsync: per file, the size it had when an fsync of it started (that prefix is durable once
    the fsync returns), and whether the publisher's lock was held at the time."""

    def __init__(self, real: Callable[[int], None], publisher: GroupCommitPublisher | None = None) -> None:
        self.real = real
        self.publisher = publisher
        self.lock = threading.Lock()
        self.durable: dict[str, int] = {}
        self.calls: Counter[str] = Counter()
        self.under_lock = 0

    def __call__(self, fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        size = os.fstat(fd).st_size
        locked = self.publisher is not None and self.publisher.lock.locked()
        self.real(fd)
        with self.lock:
            self.calls[Path(path).name] += 1
            self.under_lock += locked
            self.durable[path] = max(self.durable.get(path, 0), size)

    def durable_span_ids(self, topic_file: Path) -> set[str]:
        """Span ids in the durable prefix of the spans topic file."""
        with self.lock:
            size = self.durable.get(str(topic_file), 0)
        data = topic_file.read_bytes()[:size]
        if not data:
            return set()
        schemas = SchemaStore.from_directory(AVRO_DIR)
        out: set[str] = set()
        try:
            for entry in reader(io.BytesIO(data)):
                out.add(str(schemas.decode(entry["value"]).record["span_id"]))  # type: ignore[index,call-overload]
        except EOFError:  # a block cut by the prefix is not durable yet
            pass
        return out


@pytest.fixture
def durable_runtime(tmp_path: Path) -> Iterator[EmbeddedRuntime]:
    with EmbeddedRuntime(tmp_path / "data", fsync=True) as rt:
        yield rt


def test_every_200_is_covered_by_an_fsync_of_its_spans(
    durable_runtime: EmbeddedRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    publisher = GroupCommitPublisher(durable_runtime)
    durable_runtime.publish(spans_of(999))  # the topic exists: creating a file fsyncs it (once) under the lock
    recorder = FsyncRecorder(os.fsync, publisher)
    monkeypatch.setattr(os, "fsync", recorder)
    server = make_server("127.0.0.1", 0, publisher, ApiKeys.from_mapping(KEYS))
    server.start()
    topic_file = durable_runtime.log.data_dir / "topics" / "spans.avro"
    not_durable: list[int] = []
    statuses: list[int] = []

    def client(first: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=WAIT_S)
        for n in range(first, first + 6):
            body = run_request(n).SerializeToString()
            conn.request("POST", "/v1/traces", body=body, headers=HEADERS)
            resp = conn.getresponse()
            resp.read()
            statuses.append(resp.status)
            if resp.status == 200:
                wanted = {ids(n)[1].hex(), ids(n)[2].hex()}
                if not wanted <= recorder.durable_span_ids(topic_file):
                    not_durable.append(n)
        conn.close()

    threads = [threading.Thread(target=client, args=(100 * i,)) for i in range(8)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(WAIT_S)
    finally:
        server.close()
        publisher.close()
    assert statuses == [200] * 48
    assert not_durable == []
    assert recorder.under_lock == 0  # the lock is never held across an fsync
    assert recorder.calls["spans.avro"] <= 48
    span_ids = [e.span_id for e in durable_runtime.read_events("spans")]  # type: ignore[attr-defined]
    assert len(span_ids) == 98 == len(set(span_ids))  # each span once


def test_batches_queued_together_share_one_fsync(
    durable_runtime: EmbeddedRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    publisher = GroupCommitPublisher(durable_runtime)
    durable_runtime.publish(spans_of(999))  # the topic exists: its creation's fsyncs are not counted
    recorder = FsyncRecorder(os.fsync, publisher)
    monkeypatch.setattr(os, "fsync", recorder)
    written: list[int] = []
    with publisher.lock:  # the committer waits for it: every batch below queues up meanwhile
        threads = [
            threading.Thread(target=lambda n=n: written.append(publisher.publish(spans_of(n)))) for n in range(8)
        ]
        for t in threads:
            t.start()
        deadline = time.monotonic() + WAIT_S
        while publisher.queued() < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert publisher.queued() == 8
        assert written == []  # nobody is answered before the commit
    for t in threads:
        t.join(WAIT_S)
    publisher.close()
    assert sorted(written) == [2] * 8
    assert recorder.calls["spans.avro"] == 1  # eight batches, one fsync
    assert recorder.under_lock == 0
    assert len(durable_runtime.read_events("spans")) == 2 * 9


def test_a_failed_fsync_answers_every_batch_of_its_group(
    durable_runtime: EmbeddedRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    publisher = GroupCommitPublisher(durable_runtime)

    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError, match="Input/output"):
        publisher.publish(spans_of(1))
    monkeypatch.undo()
    assert publisher.publish(spans_of(2)) == 2  # the committer lives on
    publisher.close()


def _alert_bytes(runtime: EmbeddedRuntime) -> list[bytes]:
    return (
        sorted(r.value for r in runtime.log.read("contradictions")) if "contradictions" in runtime.log.topics() else []
    )


def test_the_fed_join_alerts_once_each_like_a_join_that_reads_the_log(tmp_path: Path) -> None:
    with EmbeddedRuntime(tmp_path / "fed", fsync=False) as runtime, GroupCommitPublisher(runtime) as publisher:
        publisher.publish(spans_of(0))  # before the join starts: read from the log on its first step
        live = LiveProcessor(runtime, OutcomeJoin(), publisher)
        publisher.publish([failure(0)])

        def sender(first: int) -> None:
            for n in range(first, first + 10):
                publisher.publish(spans_of(n))
                publisher.publish(spans_of(n))  # a retried request: nothing new, nothing fed
                publisher.publish([failure(n)])

        threads = [threading.Thread(target=sender, args=(1 + 10 * i,)) for i in range(4)]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            live.step()
            time.sleep(0.005)
        for t in threads:
            t.join()
        # a batch the log partly holds: the feed says "read these offsets", the join reads them
        publisher.publish([*spans_of(41), *spans_of(40)])
        publisher.publish([failure(41)])
        live.step()
        live.step()
        fed = _alert_bytes(runtime)
        assert live.fed > 0  # the feed carried events: they were not decoded back from the log
        assert live.cursors == {t: runtime.log.end_offset(t) for t in live.cursors}
        inputs = {t: runtime.read_events(t) for t in OutcomeJoin.inputs}
    assert len(fed) == 42  # runs 0..41, one alert each
    with EmbeddedRuntime(tmp_path / "read", fsync=False) as runtime:
        serial = SerializedPublisher(runtime)
        for events in inputs.values():
            serial.publish(events)
        reading = LiveProcessor(runtime, OutcomeJoin(), serial)
        reading.step()
        assert reading.fed == 0
        assert _alert_bytes(runtime) == fed  # byte for byte


def test_a_join_behind_the_receiver_holds_at_most_its_inbox_budget_and_reads_the_rest_from_the_log(
    tmp_path: Path,
) -> None:
    budget = 12  # events: two or three runs' spans
    with EmbeddedRuntime(tmp_path / "behind", fsync=False) as runtime, GroupCommitPublisher(runtime) as publisher:
        live = LiveProcessor(runtime, OutcomeJoin(), publisher, inbox_budget=budget)
        for n in range(30):  # thirty runs while the join does not step
            publisher.publish(spans_of(n))
            publisher.publish([failure(n)])
            held = sum(len(c) for _, _, c in live._inbox if isinstance(c, list))
            assert held <= budget
            assert len(live._inbox) <= budget + len(OutcomeJoin.inputs)  # a note per topic, not one per batch
        assert live.spilled > 0
        live.step()
        publisher.publish(spans_of(30))  # after a step the feed carries events again
        publisher.publish([failure(30)])
        live.step()
        total = sum(runtime.log.end_offset(t) for t in OutcomeJoin.inputs)
        assert 0 < live.fed < total and live.fed + live.spilled == total
        assert live.cursors == {t: runtime.log.end_offset(t) for t in live.cursors}
        behind = _alert_bytes(runtime)
        inputs = {t: runtime.read_events(t) for t in OutcomeJoin.inputs}
    assert len(behind) == 31  # one alert a run, none twice
    with EmbeddedRuntime(tmp_path / "read", fsync=False) as runtime:
        serial = SerializedPublisher(runtime)
        for events in inputs.values():
            serial.publish(events)
        LiveProcessor(runtime, OutcomeJoin(), serial).step()
        assert _alert_bytes(runtime) == behind  # byte for byte


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc")
def test_spans_acknowledged_before_a_kill_are_in_the_log(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {**os.environ, "AGENTTWIN_INGEST_API_KEYS": "key-acme=acme"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agenttwin.cli", "ingest", "--port", "0", "--data-dir", str(data)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        port = int(line.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_S)
        for n in range(5):
            body = run_request(n).SerializeToString()
            conn.request("POST", "/v1/traces", body=body, headers=HEADERS)
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 200
        conn.close()
        proc.send_signal(signal.SIGKILL)  # no close, no flush: only what was written before each 200
        proc.wait(WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    copy = tmp_path / "copy"
    shutil.copytree(data, copy)
    (copy / "LOCK").unlink(missing_ok=True)
    with EmbeddedRuntime(copy, fsync=False) as runtime:
        got = {e.span_id for e in runtime.read_events("spans")}  # type: ignore[attr-defined]
    assert got == {ids(n)[k].hex() for n in range(5) for k in (1, 2)}


class CountingJoin(OutcomeJoin):
    def __init__(self) -> None:
        super().__init__()
        self.ticks = 0

    def tick(self, store: dict[str, object], now: datetime) -> list[Event]:  # type: ignore[override]
        self.ticks += 1
        return super().tick(store, now)  # type: ignore[arg-type]


@pytest.mark.parametrize("fed", [True, False])
def test_the_live_join_runs_its_timers_at_most_once_per_interval(tmp_path: Path, fed: bool) -> None:
    clock = [100.0]
    with EmbeddedRuntime(tmp_path / "d", fsync=False) as runtime:
        publisher: GroupCommitPublisher | SerializedPublisher = (
            GroupCommitPublisher(runtime) if fed else SerializedPublisher(runtime)
        )
        join = CountingJoin()
        live = LiveProcessor(runtime, join, publisher, tick_every_s=1.0, monotonic=lambda: clock[0])
        publisher.publish(spans_of(1))
        live.step()
        assert join.ticks == 1
        publisher.publish([failure(1)])
        live.step()
        live.step()
        assert join.ticks == 1  # inside the interval: inputs handled (the alert is out), timers not run
        assert len(_alert_bytes(runtime)) == 1
        clock[0] += 1.0
        live.step()
        assert join.ticks == 2
        if isinstance(publisher, GroupCommitPublisher):
            publisher.close()

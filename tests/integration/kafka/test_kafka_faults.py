"""Faults on the Kafka runtime; each run must end with exactly the tables of a fault-free run."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from consumers.clickhouse import QueryResult, Warehouse, WarehouseError, qualified
from streams.events import CaseVerdicted, DeadLettered
from streams.kafka.naming import Naming
from streams.kafka.publisher import KafkaPublisher
from streams.kafka.reading import read_all
from streams.kafka.runner import WorkerGroup
from streams.kafka.sink_loop import SinkLoop
from tests.integration.kafka.kafka_pipeline_support import (
    Reference,
    differences,
    grader_diagnosis,
    new_naming,
    run_on_kafka,
    table_rows,
    warehouse_for,
)
from tests.integration.kafka_broker import REPO_ROOT, not_restartable, restart_broker

NOT_GRADER = ("planner", "simulator", "comparator", "outcome-join", "sink")
WAIT_S = 60.0


async def _until_verdicts(bootstrap: str, naming: Naming, at_least: int, group: WorkerGroup) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        group.check()
        events = await asyncio.to_thread(read_all, bootstrap, naming, ["verdicts"])
        if sum(isinstance(e, CaseVerdicted) for e in events) >= at_least:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"fewer than {at_least} verdicts within {WAIT_S} s")


class GraderProcess:
    """`agenttwin worker grader` as a separate OS process."""

    def __init__(self, bootstrap: str, naming: Naming, data_dir: Path) -> None:
        self.args = [
            sys.executable, "-m", "agenttwin.kafka_cli", "worker", "grader", "--evaluator-version", "1.1.0",
            "--kafka", bootstrap, "--topic-prefix", naming.prefix, "--log-level", "INFO",
        ]  # fmt: skip
        self.env = {
            **os.environ,
            "AGENTTWIN_DATA_DIR": str(data_dir),
            "PYTHONWARNINGS": "ignore",
        }
        self.log = data_dir / "grader.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(self.args, cwd=REPO_ROOT, env=self.env, stdout=log, stderr=log)

    def wait_for_log(self, text: str, timeout_s: float = WAIT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while text not in self.log.read_text(errors="replace"):
            assert self.proc is not None and self.proc.poll() is None, f"grader exited; see {self.log}"
            assert time.monotonic() < deadline, f"{text!r} not in {self.log} within {timeout_s} s"
            time.sleep(0.2)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        assert self.proc.wait(timeout=30) == -signal.SIGKILL

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


@pytest.fixture
def grader_process(kafka_bootstrap: str, tmp_path: Path) -> Iterator[tuple[GraderProcess, Naming]]:
    naming = new_naming()
    grader = GraderProcess(kafka_bootstrap, naming, tmp_path)
    try:
        yield grader, naming
    finally:
        grader.stop()


@pytest.mark.kafka
def test_grader_killed_with_sigkill_mid_stream_and_restarted(
    kafka_bootstrap: str,
    chdb_root: Path,
    reference: Reference,
    tmp_path: Path,
    grader_process: tuple[GraderProcess, Naming],
) -> None:
    grader, naming = grader_process
    first, second = reference.requests

    async def scenario(group: WorkerGroup, publisher: KafkaPublisher) -> None:
        grader.start()
        await asyncio.to_thread(publisher.publish, [first])
        await _until_verdicts(kafka_bootstrap, naming, 1, group)
        grader.kill()  # no shutdown: offsets, changelog and outputs as they happened to be
        await asyncio.to_thread(publisher.publish, [second])  # events keep flowing while it is dead
        grader.start()  # at once: the new member joins while the dead one still holds its partitions

    with warehouse_for(chdb_root, "kafka_kill") as warehouse:
        try:
            run_on_kafka(kafka_bootstrap, naming, warehouse, reference, tmp_path, kinds=NOT_GRADER, scenario=scenario)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}\n{grader_diagnosis(kafka_bootstrap, naming)}") from None
        problems = differences(reference, warehouse)
        assert problems == [], "\n".join(problems)


@pytest.mark.kafka
def test_graders_scaled_out_hand_partitions_over_when_a_member_joins_and_leaves(
    kafka_bootstrap: str, chdb_root: Path, reference: Reference, tmp_path: Path
) -> None:
    naming = new_naming()
    first, second = reference.requests
    members = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        members.append(GraderProcess(kafka_bootstrap, naming, tmp_path / name))
    a, b = members

    async def scenario(group: WorkerGroup, publisher: KafkaPublisher) -> None:
        a.start()
        await asyncio.to_thread(publisher.publish, [first])
        await _until_verdicts(kafka_bootstrap, naming, 1, group)
        b.start()  # a rebalance splits the six partitions between a and b
        await asyncio.to_thread(b.wait_for_log, "Setting newly assigned partitions")
        await asyncio.to_thread(publisher.publish, [second])
        await asyncio.sleep(2)
        await asyncio.to_thread(a.stop)  # a leaves cleanly: b takes every partition, with a's stores

    try:
        with warehouse_for(chdb_root, "kafka_scale") as warehouse:
            run_on_kafka(kafka_bootstrap, naming, warehouse, reference, tmp_path, kinds=NOT_GRADER, scenario=scenario)
            problems = differences(reference, warehouse)
            assert problems == [], "\n".join(problems)
    finally:
        for member in members:
            member.stop()


@pytest.mark.kafka
def test_broker_restart_while_events_flow(
    kafka_bootstrap: str, chdb_root: Path, reference: Reference, tmp_path: Path
) -> None:
    if (why := not_restartable()) is not None:
        pytest.skip(why)
    naming = new_naming()
    first, second = reference.requests

    async def scenario(group: WorkerGroup, publisher: KafkaPublisher) -> None:
        await asyncio.to_thread(publisher.publish, [first])
        await _until_verdicts(kafka_bootstrap, naming, 1, group)
        await asyncio.to_thread(restart_broker)
        await asyncio.to_thread(publisher.publish, [second])

    with warehouse_for(chdb_root, "kafka_restart") as warehouse:
        run_on_kafka(kafka_bootstrap, naming, warehouse, reference, tmp_path, scenario=scenario, timeout_s=150)
        problems = differences(reference, warehouse)
        assert problems == [], "\n".join(problems)


# About 1% of the demo's 576 events: undecodable values on four input topics, interleaved with the requests.
GARBAGE: Sequence[tuple[str, bytes | None, bytes]] = (
    ("evaluations", b"ev-garbage", b"not avro at all"),
    ("case-plans", b"case-garbage-1", b"\xc3\x01" + b"\x00" * 8 + b"unknown fingerprint"),
    ("case-plans", None, b""),
    ("twin-calls", b"case-garbage-2", b"\xc3\x01\xff"),
    ("twin-calls", b"case-garbage-3", b'{"json": true}'),
    ("spans", b"trace-garbage", b"\x00\x00\x00\x00\x01confluent-framed"),
)
# who reads each topic besides the sink (the comparator reads the pair plans on `evaluations`)
READERS = {
    "evaluations": ("planner", "comparator"),
    "case-plans": ("simulator",),
    "twin-calls": ("grader-1.1.0",),
    "spans": ("outcome-join",),
}


@pytest.mark.kafka
def test_undecodable_messages_all_land_in_the_dead_letters(
    kafka_bootstrap: str, chdb_root: Path, reference: Reference, tmp_path: Path
) -> None:
    naming = new_naming()
    first, second = reference.requests

    async def scenario(_group: WorkerGroup, publisher: KafkaPublisher) -> None:
        for n, (topic, key, value) in enumerate(GARBAGE):
            publisher.send_raw(naming.topic(topic), key, value)
            if n == 2:
                await asyncio.to_thread(publisher.publish, [first])
        await asyncio.to_thread(publisher.publish, [second])

    expected_letters = sum(len(READERS[topic]) + 1 for topic, _k, _v in GARBAGE)  # each reader, and the sink
    with warehouse_for(chdb_root, "kafka_dlq") as warehouse:
        run_on_kafka(
            kafka_bootstrap, naming, warehouse, reference, tmp_path, scenario=scenario,
            expected_dead_letters=expected_letters,
        )  # fmt: skip
        problems = differences(reference, warehouse)
        assert problems == [], "\n".join(problems)
        letters = warehouse.query(
            "SELECT stage, source_topic, source_offset, original_value, error_class "
            f"FROM {qualified(warehouse, 'dead_letters')} FINAL"
        ).as_dicts()
    on_topic = [e for e in read_all(kafka_bootstrap, naming, ["dead-letters"]) if isinstance(e, DeadLettered)]
    assert len({e.event_id for e in on_topic}) == expected_letters
    got = sorted((r["stage"], r["source_topic"], r["original_value"]) for r in letters)
    import base64

    want = sorted(
        (stage, naming.topic(topic), base64.b64encode(value).decode())
        for topic, _key, value in GARBAGE
        for stage in (*READERS[topic], "clickhouse-sink")
    )
    assert got == want
    assert all(r["error_class"] for r in letters)


class FlakyWarehouse:
    """The real warehouse, except that the first `failures` inserts raise (ClickHouse unavailable)."""

    def __init__(self, real: Warehouse, failures: int) -> None:
        self.real = real
        self.failures_left = failures
        self.failed = 0
        self.sink: SinkLoop | None = None
        self.commits_while_failing: list[int] = []

    @property
    def database(self) -> str:
        return self.real.database

    def execute(self, sql: str) -> None:
        self.real.execute(sql)

    def insert(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], dedup_token: str | None
    ) -> None:
        if self.failures_left > 0:
            self.failures_left -= 1
            self.failed += 1
            assert self.sink is not None
            self.commits_while_failing.append(self.sink.commits)
            raise WarehouseError("injected: ClickHouse is unavailable")
        self.real.insert(table, columns, rows, dedup_token)

    def query(self, sql: str) -> QueryResult:
        return self.real.query(sql)

    def read_only_query(self, sql: str) -> QueryResult:
        return self.real.read_only_query(sql)

    def close(self) -> None:
        self.real.close()

    def __enter__(self) -> FlakyWarehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.mark.kafka
def test_sink_backs_off_while_clickhouse_is_down_then_catches_up(
    kafka_bootstrap: str, chdb_root: Path, reference: Reference, tmp_path: Path
) -> None:
    naming = new_naming()
    with warehouse_for(chdb_root, "kafka_flaky") as real:
        flaky = FlakyWarehouse(real, failures=6)
        sink = SinkLoop(kafka_bootstrap, naming, flaky, max_backoff_s=1.0)
        flaky.sink = sink
        run_on_kafka(
            kafka_bootstrap, naming, real, reference, tmp_path,
            kinds=("planner", "simulator", "grader", "comparator", "outcome-join"), extra_workers=[sink],
        )  # fmt: skip
        assert differences(reference, real) == []
        assert flaky.failed == 6
        assert flaky.commits_while_failing == [0] * 6  # nothing committed while the first batch was not durable
        assert sink.insert_failures == 6
        assert table_rows(real, "dead_letters") == []

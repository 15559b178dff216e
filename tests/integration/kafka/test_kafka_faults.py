"""Faults on the Kafka runtime; each run must end with exactly the tables of a fault-free run."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agenttwin.kafka_cli import ALL_KINDS
from consumers.clickhouse import Warehouse, WarehouseError, qualified
from streams.events import (
    CaseFinished,
    CaseVerdicted,
    DeadLettered,
    EvaluationRequested,
    Event,
    OutcomeVerified,
    PairPlanned,
    SubjectVerified,
)
from streams.kafka.clients import ensure_topics
from streams.kafka.naming import Naming
from streams.kafka.publisher import KafkaPublisher
from streams.kafka.reading import read_all
from streams.kafka.runner import WorkerGroup
from streams.kafka.sink_loop import SinkLoop
from streams.processors import Comparator, Grader, OutcomeJoin
from streams.processors.base import Processor
from streams.processors.subject_join import SubjectJoin
from tests.integration.kafka.kafka_pipeline_support import (
    ALL_TOPIC_NAMES,
    Reference,
    as_inserted_differences,
    at_lag_0,
    differences,
    dump_tables,
    grader_diagnosis,
    merges_off,
    new_naming,
    run_on_kafka,
    table_rows,
    warehouse_for,
)
from tests.integration.kafka.worker_processes import WorkerProcess, committed, dump_in_another_process
from tests.integration.kafka_broker import not_restartable, restart_broker
from tests.integration.warehouse_proxy import WarehouseProxy

WAIT_S = 60.0
NOT_GRADER = tuple(k for k in ALL_KINDS if k != "grader")


@dataclass(frozen=True)
class Join:
    """A stateful worker kind fed the events of a reference (a fixture's name) but its own `outputs`: first the
    ones that begin its joins (its store then holds half-joined entries; its group's commits on `begins` show
    progress), then the ones of types `completes`. `processor` gives its consumer group and its inputs."""

    reference: str
    processor: Processor
    begins: tuple[str, ...]
    completes: tuple[type[Event], ...]
    outputs: tuple[str, ...]


JOINS = {
    # twin calls wait for their case's end (which says how many there are)
    "grader": Join(
        "reference", Grader("1.1.0"), ("twin-calls",), (CaseFinished,),
        ("verdicts", "expectation-results", "verified-outcomes"),
    ),
    # both sides' verdicts wait for the pair plan
    "comparator": Join("reference", Comparator(), ("verdicts",), (EvaluationRequested, PairPlanned), ("comparisons",)),
    # a trace's spans (its claim) wait for its verification
    "outcome-join": Join("reference", OutcomeJoin(), ("spans",), (OutcomeVerified,), ("contradictions", "claims")),
    # a subject's links to traces wait for a verification by subject
    "subject-join": Join(
        "subjects", SubjectJoin(), ("subjects",), (SubjectVerified,), ("verified-outcomes", "contradictions")
    ),
}  # fmt: skip


async def _until_verdicts(bootstrap: str, naming: Naming, at_least: int, group: WorkerGroup) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        group.check()
        events = await asyncio.to_thread(read_all, bootstrap, naming, ["verdicts"])
        if sum(isinstance(e, CaseVerdicted) for e in events) >= at_least:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"fewer than {at_least} verdicts within {WAIT_S} s")


@pytest.fixture
def processes() -> Iterator[list[WorkerProcess]]:
    """Worker processes a test starts; whatever still runs at its end is stopped."""
    started: list[WorkerProcess] = []
    yield started
    for process in started:
        process.stop()


@pytest.mark.kafka
@pytest.mark.parametrize("kind", sorted(JOINS))
def test_stateful_worker_killed_mid_join_and_between_its_writes_then_restarted(
    kind: str,
    kafka_bootstrap: str,
    chdb_root: Path,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    processes: list[WorkerProcess],
) -> None:
    """The worker kind, fed the reference's events, is killed with SIGKILL twice:

    1. mid-join: once its group has committed some of the events that begin its joins (`first`); the ones
       that complete them (`then`) come while it is dead, so the next worker has that state only from its
       changelog (one that lost it would never get to step 2: tested by breaking the changelog's load);
    2. between its writes (tests/integration/kafka/paused_worker.py): a batch's outputs acknowledged, its
       store changes and offsets not written. `agenttwin worker KIND` restarted handles the batch again and
       writes the same outputs a second time: the sink must not project them twice.
    """
    naming = new_naming()
    join = JOINS[kind]
    state = tmp_path / "state"
    state.mkdir()
    paused = WorkerProcess(
        kafka_bootstrap, naming, tmp_path, kind,
        command=("tests.integration.kafka.paused_worker", kind, "--state", str(state)), label=f"paused-{kind}",
    )  # fmt: skip
    worker = WorkerProcess(kafka_bootstrap, naming, tmp_path, kind)
    processes += [paused, worker]
    reference: Reference = request.getfixturevalue(join.reference)
    fed = [e for t, events in reference.events.items() if t not in join.outputs for e in events]
    first = [e for e in fed if not isinstance(e, join.completes)]
    then = [e for e in fed if isinstance(e, join.completes)]
    assert then and all(reference.events[t] for t in join.begins)
    assert any(reference.events[t] for t in join.outputs)

    def made_progress() -> bool:
        paused.check()
        return committed(kafka_bootstrap, naming, join.processor.name, join.begins) > 0

    def between_writes() -> bool:
        paused.check()
        return (state / "paused").exists()

    async def scenario(group: WorkerGroup, publisher: KafkaPublisher) -> None:
        paused.start()  # no outputs before `then`: it does not pause in step 1
        await asyncio.to_thread(publisher.publish, first)
        await group.wait_for(made_progress, timeout_s=WAIT_S, poll_s=0.2, what=f"{kind} committed some input")
        paused.kill()  # 1. mid-join; no shutdown: offsets, changelog and outputs as they happened to be
        assert not (state / "paused").exists(), "it wrote outputs before the events that complete its joins"
        await asyncio.to_thread(publisher.publish, then)  # events keep flowing while it is dead
        paused.start()  # at once: the new member joins while the dead one still holds its partitions
        await group.wait_for(between_writes, timeout_s=2 * WAIT_S, poll_s=0.2, what=f"{kind} between its writes")
        paused.kill()  # 2. its outputs are on their topics, its store changes and offsets are not
        worker.start()

    with warehouse_for(chdb_root, f"kafka_kill_{kind}") as warehouse:  # the in-process sink writes it
        merges_off(warehouse)
        try:
            run_on_kafka(
                kafka_bootstrap, naming, warehouse, reference, tmp_path, kinds=("sink",), scenario=scenario,
                drained={join.processor.name: join.processor.inputs},
            )  # fmt: skip
        except TimeoutError as exc:
            diagnosis = grader_diagnosis(kafka_bootstrap, naming) if kind == "grader" else ""
            raise AssertionError(f"{exc}\n{diagnosis}\nsee {paused.log}, {worker.log}") from None
        problems = as_inserted_differences(reference, dump_tables(warehouse))
        assert problems == [], "\n".join(problems)


@pytest.mark.kafka
def test_sink_killed_with_sigkill_mid_batch_and_restarted(
    kafka_bootstrap: str, reference: Reference, tmp_path: Path, processes: list[WorkerProcess]
) -> None:
    """The reference's events in three parts: the sink finishes a batch of the first, is killed in the middle
    of a batch of the second (tests/integration/kafka/paused_sink.py), and `agenttwin worker sink` restarted on
    the same warehouse (the chDB of its data directory) takes in the third."""
    naming = new_naming()
    data_dir, state = tmp_path / "sink", tmp_path / "state"
    data_dir.mkdir()
    state.mkdir()
    paused = WorkerProcess(
        kafka_bootstrap, naming, data_dir, "sink",
        command=("tests.integration.kafka.paused_sink", "--state", str(state)), label="paused-sink",
    )  # fmt: skip
    sink = WorkerProcess(kafka_bootstrap, naming, data_dir, "sink")
    processes += [paused, sink]
    rest = [e for topic in ALL_TOPIC_NAMES if topic != "evaluations" for e in reference.events[topic]]
    parts = (reference.events["evaluations"], rest[: len(rest) // 2], rest[len(rest) // 2 :])

    def wait(condition: Callable[[], bool], process: WorkerProcess, what: str) -> None:
        deadline = time.monotonic() + 2 * WAIT_S
        while not condition():
            process.check()
            assert time.monotonic() < deadline, f"{what} not within {2 * WAIT_S:.0f} s; see {process.log}"
            time.sleep(0.2)

    ensure_topics(kafka_bootstrap, naming)
    with KafkaPublisher(kafka_bootstrap, naming) as publisher:
        paused.start()
        wait((state / "group").exists, paused, "the sink's group")
        group = (state / "group").read_text()
        publisher.publish(parts[0])
        wait(lambda: committed(kafka_bootstrap, naming, group, ALL_TOPIC_NAMES) > 0, paused, "a batch committed")
        publisher.publish(parts[1])
        wait((state / "paused").exists, paused, "the sink inside a batch")  # begun, some rows in, not finished
        paused.kill()
        publisher.publish(parts[2])
    sink.start()  # `agenttwin worker sink` on the same warehouse: the same group
    wait(lambda: at_lag_0(kafka_bootstrap, naming, {group: ALL_TOPIC_NAMES}), sink, "lag 0")
    assert sink.stop() == 0
    tables = dump_in_another_process(data_dir)
    problems = as_inserted_differences(reference, tables)
    assert problems == [], "\n".join(problems)
    assert tables["dead_letters"].stored == []
    assert "redoing the unfinished batch" in sink.log.read_text(errors="replace")  # it was killed mid-batch


@pytest.mark.kafka
def test_graders_scaled_out_hand_partitions_over_when_a_member_joins_and_leaves(
    kafka_bootstrap: str, chdb_root: Path, reference: Reference, tmp_path: Path
) -> None:
    naming = new_naming()
    first, second = reference.requests
    members = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        members.append(WorkerProcess(kafka_bootstrap, naming, tmp_path / name))
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
@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGKILL"])
def test_broker_restart_while_events_flow(
    signal_name: str, kafka_bootstrap: str, chdb_root: Path, reference: Reference, tmp_path: Path
) -> None:
    """The broker stopped cleanly (SIGTERM), or killed as a crash would (SIGKILL: its logs recovered on start),
    while every worker runs and the first evaluation is half way; the second is published once it is back."""
    if (why := not_restartable()) is not None:
        pytest.skip(why)
    naming = new_naming()
    first, second = reference.requests

    async def scenario(group: WorkerGroup, publisher: KafkaPublisher) -> None:
        await asyncio.to_thread(publisher.publish, [first])
        await _until_verdicts(kafka_bootstrap, naming, 1, group)
        await asyncio.to_thread(restart_broker, sigkill=signal_name == "SIGKILL")
        await asyncio.to_thread(publisher.publish, [second])

    with warehouse_for(chdb_root, f"kafka_restart_{signal_name.lower()}") as warehouse:
        merges_off(warehouse)
        run_on_kafka(kafka_bootstrap, naming, warehouse, reference, tmp_path, scenario=scenario, timeout_s=150)
        problems = as_inserted_differences(reference, dump_tables(warehouse))
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
    "spans": ("outcome-join", "version-tally"),
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


class FlakyWarehouse(WarehouseProxy):
    """The real warehouse, except that the first `failures` inserts raise (ClickHouse unavailable)."""

    def __init__(self, real: Warehouse, failures: int) -> None:
        super().__init__(real)
        self.failures_left = failures
        self.failed = 0
        self.sink: SinkLoop | None = None
        self.commits_while_failing: list[int] = []

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

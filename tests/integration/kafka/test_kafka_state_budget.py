"""The outcome join on the batch worker with a tiny memory budget (its state on disk, in local files that
cache the changelog) raises the same alerts as with every key in memory: across a worker restart (every
partition loaded again from its changelog), through verifications in time, the horizon, eviction and
duplicates after it. The files are the worker's own and are gone once it stops."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from producers.sdk.outcome import outcome_event
from streams.checkpoints import Checkpoint
from streams.events import ContradictionDetected, Event, SpanRecorded
from streams.kafka.batch_worker import STORES_DIR, BatchWorker
from streams.kafka.clients import ensure_topics
from streams.kafka.naming import Naming
from streams.kafka.publisher import KafkaPublisher
from streams.kafka.reading import read_all
from streams.kafka.runner import WorkerGroup
from streams.processors.outcome_join import OutcomeJoin
from streams.topics import TOPIC_BY_NAME
from tests.claim_spans import agent_claim_span
from tests.integration.kafka.kafka_pipeline_support import new_naming

pytestmark = pytest.mark.kafka

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
HORIZON = timedelta(minutes=5)
TINY = 6  # store keys in memory over all partitions: one per partition
UNBOUNDED = 10**9
PARTITIONS = TOPIC_BY_NAME["spans"].partitions
VERIFIED_EARLY, VERIFIED_LATER, LONELY = range(1, 9), range(9, 13), range(13, 25)


def _trace(n: int) -> str:
    return f"{n:032x}"


def _claim(n: int, at: datetime) -> SpanRecorded:
    return agent_claim_span(_trace(n), at, event_id=f"span-{_trace(n)}")


def _failure(n: int, at: datetime) -> Event:
    return outcome_event(_trace(n), "FAILURE", True, "external_callback", "2 refunds", tenant="acme", at=at)


def _alerts(bootstrap: str, naming: Naming) -> list[ContradictionDetected]:
    return [e for e in read_all(bootstrap, naming, ["contradictions"]) if isinstance(e, ContradictionDetected)]


def _rows_on_disk(folder: Path) -> int:
    total = 0
    for path in folder.glob(f"{STORES_DIR}/*/p*.sqlite"):
        db = sqlite3.connect(path)
        try:
            total += db.execute("SELECT count(*) FROM kv").fetchone()[0]
        finally:
            db.close()
    return total


async def _fewest_in_memory(worker: BatchWorker) -> int:
    """Keys held in memory over the worker's stores, the fewest of a few looks (a tick reads a few keys
    between two commits)."""
    seen = []
    for _ in range(10):
        seen.append(sum(s.in_memory for _, s in worker.stores.items() if isinstance(s, Checkpoint)))
        await asyncio.sleep(0.1)
    return min(seen)


def _run(bootstrap: str, data: Path, budget: int) -> tuple[list[tuple[str, str, str]], int, int]:
    """The scenario on a fresh set of topics: (alerts as (trace, kind, event id)), keys on disk and the
    fewest keys seen in memory while the first worker was idle."""
    naming = new_naming()
    ensure_topics(bootstrap, naming)
    claims = [_claim(n, T0) for n in [*VERIFIED_EARLY, *VERIFIED_LATER, *LONELY]]
    early = [_failure(n, T0 + timedelta(seconds=30)) for n in VERIFIED_EARLY]
    later = [_failure(n, T0 + timedelta(minutes=2)) for n in VERIFIED_LATER]
    past_everything = _claim(99, T0 + 4 * HORIZON)  # receive time past horizon + retention of all the above

    def worker() -> BatchWorker:
        join = OutcomeJoin(horizon=HORIZON, retention=HORIZON)
        return BatchWorker(join, bootstrap, naming, data, tick_interval_s=0.5, state_budget=budget)

    def alerted(n: int) -> bool:
        return len(_alerts(bootstrap, naming)) >= n

    async def scenario() -> tuple[int, int]:
        with KafkaPublisher(bootstrap, naming) as publisher:
            first = worker()
            async with WorkerGroup([first]) as group:
                await asyncio.to_thread(publisher.publish, claims + early)
                await group.wait_for(lambda: alerted(len(VERIFIED_EARLY)), timeout_s=60, what="early alerts")
                await group.wait_idle(idle_s=1.0, timeout_s=60)
                on_disk = await asyncio.to_thread(_rows_on_disk, data)
                in_memory = await _fewest_in_memory(first)
            assert not any((data / STORES_DIR).iterdir()), "a stopped worker leaves its store files behind"
            # a new process: every partition is loaded again from its changelog
            async with WorkerGroup([worker()]) as group:
                await asyncio.to_thread(publisher.publish, later)
                expected = len(VERIFIED_EARLY) + len(VERIFIED_LATER)
                await group.wait_for(lambda: alerted(expected), timeout_s=60, what="alerts after the restart")
                await asyncio.to_thread(publisher.publish, [past_everything])
                expected += len(LONELY)
                await group.wait_for(lambda: alerted(expected), timeout_s=60, what="horizon alerts")
                await group.wait_idle(idle_s=2.0, timeout_s=60)
                # after eviction: the same records again, as a producer retry would deliver them
                await asyncio.to_thread(publisher.publish, claims + early + later)
                await group.wait_idle(idle_s=3.0, timeout_s=60)
            return on_disk, in_memory

    on_disk, in_memory = asyncio.run(scenario())
    alerts = sorted((a.trace_id, a.kind, a.event_id) for a in _alerts(bootstrap, naming))
    return alerts, on_disk, in_memory


def test_a_tiny_memory_budget_raises_the_same_alerts_as_holding_every_key(kafka_bootstrap: str, tmp_path: Path) -> None:
    bounded, on_disk, in_memory = _run(kafka_bootstrap, tmp_path / "bounded", TINY)
    unbounded, _, held = _run(kafka_bootstrap, tmp_path / "unbounded", UNBOUNDED)

    expected = [(_trace(n), "contradiction") for n in [*VERIFIED_EARLY, *VERIFIED_LATER]]
    expected += [(_trace(n), "claim_never_verified") for n in LONELY]
    assert sorted((t, k) for t, k, _ in bounded) == sorted(expected)  # each once: no duplicate after eviction
    assert bounded == unbounded  # same alerts, same event ids
    # the budget held: the state was on disk, only about a key per partition in memory
    assert on_disk >= 2 * 24 and in_memory <= TINY + PARTITIONS < held

"""A processor as a faust app: one agent over its (co-partitioned) inputs, its store kept per partition.

The app id is the processor's consumer group (`grader-<version>`, ...), so it is also the prefix of the
store's changelog topic (`<group>-store-changelog`): a new evaluator version starts from offset 0 with
empty state. faust's own joins are not implemented; the join is the processor's store, keyed like its
inputs, and inputs with equal partition counts are co-partitioned by faust's assignor, so partition p
of every input and of the changelog is handled by one member. The store is not a faust Table: the
worker writes and re-reads its changelog itself (partition_stores.py says why).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import MutableMapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import faust
from confluent_kafka import KafkaException

from streams.events import Event
from streams.kafka.batch_sender import BatchSender, Outgoing
from streams.kafka.batch_step import apply_changes, changelog_records, handle_batch
from streams.kafka.clients import HEARTBEAT_INTERVAL_S, SESSION_TIMEOUT_S, ensure_changelog
from streams.kafka.codec import KafkaCodec, SourceRef
from streams.kafka.naming import Naming
from streams.kafka.partition_stores import PartitionStores, read_changelog_partition
from streams.kafka.reading import ends_without_data, partition_lags
from streams.kafka.staged_store import StagedStore
from streams.kafka.worker import Progress
from streams.processors.base import Processor
from streams.topics import TOPIC_BY_NAME

log = logging.getLogger(__name__)

COMMIT_INTERVAL_S = 0.5
TICK_INTERVAL_S = 5.0
WATCH_INTERVAL_S = 5.0
STALL_S = 12.0  # longer than the session timeout: a join that waits for a dead member is not a stall
RESTART_TIMEOUT_S = 60.0
PUBLISH_RETRY_MAX_S = 5.0
# A batch is what arrived within BATCH_WITHIN_S, at most BATCH_MAX events: one round of acks per batch
# instead of two per event, for at most that much added latency.
BATCH_MAX = 500
BATCH_WITHIN_S = 0.02
# Idle this long, the worker commits past transaction markers at the end of its partitions (lag 0).
SETTLE_IDLE_S = 1.0
SETTLE_POLL_S = 0.5
STOP_SETTLE_TIMEOUT_S = 15.0


def has_timer(processor: Processor) -> bool:
    return type(processor).tick is not Processor.tick


class FaustWorker:
    def __init__(
        self,
        processor: Processor,
        bootstrap: str,
        naming: Naming,
        data_dir: Path,
        *,
        commit_interval_s: float = COMMIT_INTERVAL_S,
        tick_interval_s: float = TICK_INTERVAL_S,
    ) -> None:
        partitions = {TOPIC_BY_NAME[t].partitions for t in processor.inputs}
        if len(partitions) != 1:
            raise ValueError(f"{processor.name}: inputs {processor.inputs} are not co-partitioned")
        (n,) = partitions
        self.processor = processor
        self.name = naming.group(processor.name)
        self.changelog = naming.changelog(processor.name)
        self.progress = Progress()
        self.stores = PartitionStores()
        self._codec = KafkaCodec(naming)
        self._stage = processor.name
        self._version: str | None = getattr(processor, "evaluator_version", None)
        self._watermark: datetime | None = None
        self._ticked_at: datetime | None = None
        self._failure: BaseException | None = None
        self._sender = BatchSender(bootstrap, self.name)
        self._bootstrap, self._naming, self._partitions = bootstrap, naming, n
        self._datadir = data_dir / "faust" / self.name
        self._datadir.mkdir(parents=True, exist_ok=True)
        self._commit_interval_s, self._tick_interval_s = commit_interval_s, tick_interval_s
        self._watchdog: asyncio.Task[None] | None = None
        self._settler: asyncio.Task[None] | None = None
        # one batch (or one tick) at a time: both read, publish and then persist the same stores
        self._busy = asyncio.Lock()
        self._generation = 0  # bumped whenever the stores are forgotten (a rebalance)
        self.restarts = 0
        self.app = self._build_app()

    def _build_app(self) -> Any:
        """A fresh faust app (a stopped mode service cannot be started again, so a restart builds anew)."""
        n, processor = self._partitions, self.processor
        app = faust.App(
            self.name,
            broker=f"kafka://{self._bootstrap}",
            store="memory://",
            datadir=str(self._datadir),
            web_enabled=False,
            topic_partitions=n,
            topic_replication_factor=1,
            consumer_auto_offset_reset="earliest",
            broker_commit_interval=self._commit_interval_s,
            producer_acks=-1,
            # a killed worker's partitions move to a live one after this long (faust's default is 60 s)
            broker_session_timeout=SESSION_TIMEOUT_S,
            broker_heartbeat_interval=HEARTBEAT_INTERVAL_S,
        )
        source = app.topic(
            *(self._naming.topic(t) for t in processor.inputs),
            key_serializer="raw",
            value_serializer="raw",
            partitions=n,
        )
        app.agent(source, name=f"{processor.name}-agent")(self._agent)
        # after a rebalance another member may have owned (and written) any partition: reload lazily
        app.on_partitions_revoked.connect(self._forget_stores)
        app.on_partitions_assigned.connect(self._forget_stores)
        if has_timer(processor):

            async def tick() -> None:
                await self._tick()

            app.timer(interval=self._tick_interval_s)(tick)
        self._forget_stores()
        return app

    def _forget_stores(self, *_args: Any, **_kwargs: Any) -> None:
        self.stores.forget()
        self._generation += 1

    @property
    def last_progress(self) -> float:
        return self.progress.last

    @property
    def failure(self) -> BaseException | None:
        crashed: BaseException | None = self.app.crash_reason
        return self._failure or crashed

    async def start(self) -> None:
        await asyncio.to_thread(ensure_changelog, self._bootstrap, self.changelog, self._partitions)
        await self.app.start()
        self._watchdog = asyncio.create_task(self._watch(), name=f"{self.name}-watchdog")
        self._settler = asyncio.create_task(self._settle(), name=f"{self.name}-settle")

    async def stop(self) -> None:
        if self._settler is not None and self.failure is None:
            # a clean stop leaves no marker behind as lag (the settle loop may not have had its idle spell)
            try:
                async with self._busy:
                    await asyncio.wait_for(self._commit_past_markers(), STOP_SETTLE_TIMEOUT_S)
            except Exception:  # stopping goes on; the next run commits them
                log.warning("%s: end markers not committed on stop", self.name, exc_info=True)
        for task in (self._watchdog, self._settler):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._watchdog = self._settler = None
        await self.app.stop()
        await asyncio.to_thread(self._sender.close)

    async def _settle(self) -> None:
        """Once per idle spell, commit past what follows the last record of each input partition."""
        settled: float | None = None
        while True:
            await asyncio.sleep(SETTLE_POLL_S)
            last = self.progress.last
            if settled == last or time.monotonic() - last < SETTLE_IDLE_S:
                continue
            try:
                async with self._busy:
                    done = await self._commit_past_markers()
                if done:
                    settled = last
            except Exception:  # a boundary that must keep running: the next idle spell tries again
                log.warning("%s: could not commit past the end markers", self.name, exc_info=True)

    async def _commit_past_markers(self) -> bool:
        """Transaction markers follow the last record of a transactional write (`case-plans`): faust commits
        the offset after the last record it handled, so the marker would stay as lag 1 forever. For each
        input partition whose records are all handled and committed, commit its end offset when only
        markers lie between (checked with read_committed: streams/kafka/reading.ends_without_data).
        Returns False when some partition still had acknowledgements pending (try again later)."""
        consumer = self.app.consumer
        inputs = {self._naming.topic(t) for t in self.processor.inputs}
        starts: dict[tuple[str, int], int] = {}
        complete = True
        for tp in consumer.assignment():
            if tp.topic not in inputs:
                continue
            if consumer._acked.get(tp) or consumer._commit_fut is not None:  # faust still has to commit
                complete = False
                continue
            committed = consumer._committed_offset.get(tp)
            if committed is not None:
                starts[(tp.topic, tp.partition)] = committed
        ends = await asyncio.to_thread(ends_without_data, self._bootstrap, starts)
        offsets = {}
        for tp in consumer.assignment():
            end = ends.get((tp.topic, tp.partition))
            read = consumer._read_offset.get(tp)
            unchanged = consumer._committed_offset.get(tp) == starts.get((tp.topic, tp.partition))
            # nothing read at or after the end since: no faust commit can be higher than this one
            if end is not None and unchanged and (read is None or read < end) and consumer._commit_fut is None:
                offsets[tp] = end
        if offsets and await consumer._commit(offsets):
            consumer._committed_offset.update(offsets)
        return complete

    async def _watch(self) -> None:
        """Restart the app when it has lag but stopped progressing.

        faust was seen never to resume a partition after a rebalance that followed a crashed member
        (cf. faust issues #21, #175, #640). Lag > 1 because a transaction marker after the last record
        leaves 1 that is never consumed.
        """
        inputs = {self.processor.name: self.processor.inputs}
        while True:
            await asyncio.sleep(WATCH_INTERVAL_S)
            if time.monotonic() - self.progress.last < STALL_S:
                continue
            try:
                lags = await asyncio.to_thread(partition_lags, self._bootstrap, self._naming, inputs)
            except KafkaException as exc:  # cluster away or coordinator moving: look again next round
                log.warning("%s: watchdog could not read the group's lag: %s", self.name, exc)
                continue
            stuck = {tp: lag for tp, lag in lags.items() if lag > 1}
            if not stuck or time.monotonic() - self.progress.last < STALL_S:
                continue
            log.warning("%s: no progress for %.0f s with lag %s; restarting the faust app", self.name, STALL_S, stuck)
            try:
                await asyncio.wait_for(self.app.stop(), RESTART_TIMEOUT_S)
                self.app = self._build_app()
                self.restarts += 1
                self.progress.tick()
                await asyncio.wait_for(self.app.start(), RESTART_TIMEOUT_S)
            except Exception:  # the watchdog is a boundary that must keep watching; recorded, retried
                log.exception("%s: restarting the faust app failed; trying again later", self.name)
            else:
                log.warning("%s: faust app restarted (%d so far)", self.name, self.restarts)

    async def _agent(self, stream: faust.StreamT[bytes]) -> None:
        # faust acknowledges a batch's events only after this body returns for it
        batches = cast(faust.Stream[bytes], stream).take_events(BATCH_MAX, within=BATCH_WITHIN_S)  # not on StreamT
        async for batch in batches:
            await self.handle([self._source(e.message) for e in batch])

    @staticmethod
    def _source(msg: Any) -> SourceRef:
        return SourceRef(msg.topic, msg.partition, msg.offset, msg.key, msg.value)

    async def handle(self, sources: Sequence[SourceRef]) -> None:
        """Process a batch: every output acknowledged, then every store change, then the batch counts as done
        (streams/kafka/batch_step.py handles the events)."""
        async with self._busy:
            loaded: dict[int, tuple[MutableMapping[str, Any], int]] = {}
            for p in sorted({s.partition for s in sources}):
                loaded[p] = await self._load(p)
            done = handle_batch(
                self.processor, self._codec, sources, lambda p: loaded[p][0], stage=self._stage,
                evaluator_version=self._version,
            )  # fmt: skip
            if done.watermark is not None and (self._watermark is None or done.watermark > self._watermark):
                self._watermark = done.watermark
            await self._publish(done.outputs)
            await self._persist(done.views, {p: loaded[p][1] for p in done.views})
        self.progress.tick(handled=len(sources), produced=len(done.outputs) - done.letters, dead_letters=done.letters)

    async def _tick(self) -> None:
        now = self._watermark
        if now is None or now == self._ticked_at:
            return
        outputs: list[Event] = []
        async with self._busy:
            staged: dict[int, StagedStore] = {}
            generations: dict[int, int] = {}
            for partition in self._assigned_partitions():
                store, generations[partition] = await self._load(partition)
                staged[partition] = StagedStore(store)
                outputs += self.processor.tick(staged[partition], now)
            await self._publish(outputs)
            await self._persist(staged, generations)
        self._ticked_at = now
        if outputs:
            self.progress.tick(produced=len(outputs))

    def _assigned_partitions(self) -> list[int]:
        """The input partitions this member owns (faust also assigns its own `__assignor` topic)."""
        inputs = {self._naming.topic(t) for t in self.processor.inputs}
        return sorted({tp.partition for tp in self.app.consumer.assignment() if tp.topic in inputs})

    async def _load(self, partition: int) -> tuple[MutableMapping[str, Any], int]:
        """Make sure the partition's store is loaded; returns it and the generation it was loaded in."""
        delay = 0.2
        while not self.stores.loaded(partition):
            generation = self._generation
            try:
                store = await asyncio.to_thread(read_changelog_partition, self._bootstrap, self.changelog, partition)
            except (KafkaException, TimeoutError, RuntimeError) as exc:  # the cluster away: wait, read again
                log.warning("%s: could not read %s/%d (%s); retrying in %.1f s", self.name, self.changelog,
                            partition, exc, delay)  # fmt: skip
                await asyncio.sleep(delay)
                delay = min(delay * 2, PUBLISH_RETRY_MAX_S)
                continue
            if generation == self._generation:  # else a rebalance came in while reading: read again
                self.stores.put(partition, store)
        return self.stores[partition], self._generation

    async def _persist(self, staged: dict[int, StagedStore], generations: dict[int, int]) -> None:
        """Write the staged changes to their partitions' changelog, wait for the acks, then to the stores.

        The writes are acknowledged before the events are acknowledged to faust, so committed offsets
        never run ahead of the changelog. If a rebalance forgot the stores meanwhile, the next load
        reads these writes back from the changelog."""
        changes = {p: s.changes() for p, s in staged.items()}
        await self._send_all(changelog_records(self.changelog, changes.items()))
        for p, partition_changes in changes.items():
            if partition_changes and generations[p] == self._generation and self.stores.loaded(p):
                apply_changes(self.stores[p], partition_changes)

    async def _publish(self, events: Sequence[Event]) -> None:
        """Send and wait until every output is acknowledged (retrying while the cluster is away)."""
        if not events:
            return
        messages = [self._codec.encode(e) for e in events]
        await self._send_all([Outgoing(m.topic, m.key, m.value, m.headers, None, m.timestamp_ms) for m in messages])

    async def _send_all(self, sends: Sequence[Outgoing]) -> None:
        """Every message acknowledged on return (retrying while the cluster is away); one wait per batch."""
        if sends:
            await asyncio.to_thread(self._sender.send, sends)

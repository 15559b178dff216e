"""A processor as a faust app: one agent over its (co-partitioned) inputs, its store a faust Table.

The app id is the processor's consumer group (`grader-<version>`, ...), so it is also the prefix of the
store's changelog topic (`<group>-store-changelog`): a new evaluator version starts from offset 0 with
empty state. faust's own joins are not implemented; the join is the processor's store, keyed like its
inputs, and inputs with equal partition counts are co-partitioned by faust's assignor.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import faust
from aiokafka.errors import KafkaError
from confluent_kafka import KafkaException

from streams.embedded import DecodeError
from streams.events import Event
from streams.kafka.codec import KafkaCodec, SourceRef, dead_letter
from streams.kafka.naming import Naming
from streams.kafka.reading import partition_lags
from streams.kafka.staged_store import DELETED, SEED_KEY, StagedStore
from streams.kafka.store_codec import register_store_codecs
from streams.kafka.worker import Progress
from streams.processors.base import Processor
from streams.topics import TOPIC_BY_NAME

log = logging.getLogger(__name__)

COMMIT_INTERVAL_S = 0.5
TICK_INTERVAL_S = 5.0
SESSION_TIMEOUT_S = 10.0
WATCH_INTERVAL_S = 5.0
STALL_S = 12.0  # longer than the session timeout: a join that waits for a dead member is not a stall
RESTART_TIMEOUT_S = 60.0
PUBLISH_RETRY_MAX_S = 5.0


class StoreTable(faust.Table[str, Any]):
    """A faust Table whose changelog uses the store codecs: str keys as UTF-8, values as tagged JSON.

    faust derives a table's serializers from its key/value types (json unless a model names one) when
    the table is built, and builds the changelog topic with them, so they are chosen here, not after."""

    def _serializer_from_type(self, typ: Any) -> str:
        key_codec, value_codec = register_store_codecs()
        return key_codec if typ is str else value_codec


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
        self.progress = Progress()
        self._codec = KafkaCodec(naming)
        self._stage = processor.name
        self._version: str | None = getattr(processor, "evaluator_version", None)
        self._watermark: datetime | None = None
        self._ticked_at: datetime | None = None
        self._failure: BaseException | None = None
        self._outputs: dict[str, Any] = {}
        self._bootstrap, self._naming, self._partitions = bootstrap, naming, n
        self._datadir = data_dir / "faust" / self.name
        self._datadir.mkdir(parents=True, exist_ok=True)
        self._commit_interval_s, self._tick_interval_s = commit_interval_s, tick_interval_s
        self._watchdog: asyncio.Task[None] | None = None
        self.restarts = 0
        self.app, self.table = self._build_app()

    def _build_app(self) -> tuple[Any, Any]:
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
            broker_heartbeat_interval=SESSION_TIMEOUT_S / 10,
        )
        source = app.topic(
            *(self._naming.topic(t) for t in processor.inputs),
            key_serializer="raw",
            value_serializer="raw",
            partitions=n,
        )
        # A timer writes outside stream iteration, which faust allows only when the changelog partition
        # comes from the key (murmur2, like the inputs: timer processors' store keys are their input keys).
        table = app.tables.add(
            StoreTable(
                app, name="store", partitions=n, key_type=str, use_partitioner=has_timer(processor),
                beacon=app.tables.beacon,
            )
        )  # fmt: skip
        app.agent(source, name=f"{processor.name}-agent")(self._agent)
        if has_timer(processor):

            async def tick() -> None:
                await self._tick()

            app.timer(interval=self._tick_interval_s)(tick)
        self._outputs = {}
        return app, table

    @property
    def last_progress(self) -> float:
        return self.progress.last

    @property
    def failure(self) -> BaseException | None:
        crashed: BaseException | None = self.app.crash_reason
        return self._failure or crashed

    async def start(self) -> None:
        await self.app.start()
        await self._seed_changelog()
        self._watchdog = asyncio.create_task(self._watch(), name=f"{self.name}-watchdog")

    async def stop(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
            self._watchdog = None
        await self.app.stop()

    async def _seed_changelog(self) -> None:
        """Put one record on every changelog partition.

        After a crashed member, faust recovers an *empty* active changelog partition as "done" but keeps
        it in its fetch set; the first store write to it then parks that partition's stream for good
        (seen here: one event per restart, then nothing). A partition that already holds a record is
        recovered normally. The marker key is hidden from processors (StagedStore)."""
        topic = self.table.changelog_topic
        pending = [
            await topic.send(key=SEED_KEY, value={"seed": True}, partition=p, force=True)
            for p in range(self._partitions)
        ]
        await asyncio.gather(*pending)

    async def _watch(self) -> None:
        """Restart the app when it has lag but stopped progressing.

        faust sometimes never resumes a partition after a rebalance that follows a crashed member (its
        recovery sees no highwater for it and the stream stays parked; cf. faust issues #21, #175, #640).
        Lag > 1 because a transaction marker after the last record leaves 1 that is never consumed.
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
                self.app, self.table = self._build_app()
                self.restarts += 1
                self.progress.tick()
                await asyncio.wait_for(self.app.start(), RESTART_TIMEOUT_S)
            except Exception:  # the watchdog is a boundary that must keep watching; recorded, retried
                log.exception("%s: restarting the faust app failed; trying again later", self.name)
            else:
                log.warning("%s: faust app restarted (%d so far)", self.name, self.restarts)

    async def _agent(self, stream: faust.StreamT[bytes]) -> None:
        async for event in stream.events():
            msg = event.message
            await self.handle(SourceRef(msg.topic, msg.partition, msg.offset, msg.key, msg.value))

    async def handle(self, source: SourceRef) -> None:
        try:
            event = self._codec.decode(source.value)
        except DecodeError as exc:
            await self._dead_letter(exc.reason, exc, source)
            return
        if self._watermark is None or event.occurred_at > self._watermark:
            self._watermark = event.occurred_at
        staged = StagedStore(self.table)
        try:
            outputs = self.processor.handle(staged, event)
        except Exception as exc:  # the stream boundary: a poison event is dead-lettered, the stream goes on
            await self._dead_letter("PROCESSING_ERROR", exc, source)
            return
        await self._publish(outputs)
        await self._persist(staged, None if self.table.use_partitioner else source.partition)
        self.progress.tick(handled=1, produced=len(outputs))

    async def _dead_letter(self, reason: str, error: BaseException, source: SourceRef) -> None:
        letter = dead_letter(self._stage, reason, error, source, evaluator_version=self._version)
        await self._publish([letter])
        self.progress.tick(handled=1, dead_letters=1)

    async def _tick(self) -> None:
        now = self._watermark
        if now is None or now == self._ticked_at:
            return
        staged = StagedStore(self.table)
        outputs = self.processor.tick(staged, now)
        await self._publish(outputs)
        await self._persist(staged, None)
        self._ticked_at = now
        if outputs:
            self.progress.tick(produced=len(outputs))

    async def _persist(self, staged: StagedStore, partition: int | None) -> None:
        """Write the staged changes to the changelog, wait for the acks, then to the local store.

        Not through `table[key] = value`: faust queues that changelog write in a buffer that its
        pre-commit flush was seen to miss under SIGKILL (offsets committed past writes that never
        landed). An acknowledged write before the event is acked keeps store and offsets in step.
        partition None = by key (murmur2), for stores whose keys are their input keys."""
        changes = staged.changes()
        if not changes:
            return
        topic = self.table.changelog_topic
        await self._send_all(
            [(topic, key, None, "raw") if value is DELETED else (topic, key, value, None) for key, value in changes],
            partition,
        )
        for key, value in changes:
            if value is DELETED:
                self.table.data.pop(key, None)
            else:
                self.table.data[key] = value

    def _topic(self, physical: str) -> Any:
        topic = self._outputs.get(physical)
        if topic is None:
            topic = self._outputs[physical] = self.app.topic(physical, key_serializer="raw", value_serializer="raw")
        return topic

    async def _publish(self, events: Sequence[Event]) -> None:
        """Send and wait until every output is acknowledged (retrying while the cluster is away)."""
        if not events:
            return
        messages = [self._codec.encode(e) for e in events]
        await self._send_all([(self._topic(m.topic), m.key, m.value, None, m.headers) for m in messages], None)

    async def _send_all(self, sends: Sequence[tuple[Any, ...]], partition: int | None) -> None:
        """(topic, key, value, value_serializer[, headers]) each; all acknowledged on return."""
        delay = 0.2
        while True:
            try:
                pending = []
                for topic, key, value, serializer, *headers in sends:
                    pending.append(
                        await topic.send(
                            key=key,
                            value=value,
                            partition=partition,
                            value_serializer=serializer,
                            headers=headers[0] if headers else None,
                            force=True,
                        )
                    )
                await asyncio.gather(*pending)
                return
            except KafkaError as exc:  # retriable by nature here: the writes are idempotent
                log.warning("%s: %d send(s) failed (%s); retrying in %.1f s", self.name, len(sends), exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, PUBLISH_RETRY_MAX_S)

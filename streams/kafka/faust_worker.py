"""A processor as a faust app: one agent over its (co-partitioned) inputs, its store a faust Table.

The app id is the processor's consumer group (`grader-<version>`, ...), so it is also the prefix of the
store's changelog topic (`<group>-store-changelog`): a new evaluator version starts from offset 0 with
empty state. faust's own joins are not implemented; the join is the processor's store, keyed like its
inputs, and inputs with equal partition counts are co-partitioned by faust's assignor.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import faust
from aiokafka.errors import KafkaError

from streams.embedded import DecodeError
from streams.events import Event
from streams.kafka.codec import KafkaCodec, SourceRef, dead_letter
from streams.kafka.naming import Naming
from streams.kafka.staged_store import StagedStore
from streams.kafka.store_codec import register_store_codecs
from streams.kafka.worker import Progress
from streams.processors.base import Processor
from streams.topics import TOPIC_BY_NAME

log = logging.getLogger(__name__)

COMMIT_INTERVAL_S = 0.5
TICK_INTERVAL_S = 5.0
PUBLISH_RETRY_MAX_S = 5.0


class StoreTable(faust.Table):  # type: ignore[misc]
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
        datadir = data_dir / "faust" / self.name
        datadir.mkdir(parents=True, exist_ok=True)
        self.app = faust.App(
            self.name,
            broker=f"kafka://{bootstrap}",
            store="memory://",
            datadir=str(datadir),
            web_enabled=False,
            topic_partitions=n,
            topic_replication_factor=1,
            consumer_auto_offset_reset="earliest",
            broker_commit_interval=commit_interval_s,
            producer_acks=-1,
        )
        source = self.app.topic(
            *(naming.topic(t) for t in processor.inputs),
            key_serializer="raw",
            value_serializer="raw",
            partitions=n,
        )
        # A timer writes outside stream iteration, which faust allows only when the changelog partition
        # comes from the key (murmur2, like the inputs: timer processors' store keys are their input keys).
        self.table = self.app.tables.add(
            StoreTable(
                self.app, name="store", partitions=n, key_type=str, use_partitioner=has_timer(processor),
                beacon=self.app.tables.beacon,
            )
        )  # fmt: skip
        self.app.agent(source, name=f"{processor.name}-agent")(self._agent)
        if has_timer(processor):

            async def tick() -> None:
                await self._tick()

            self.app.timer(interval=tick_interval_s)(tick)

    @property
    def last_progress(self) -> float:
        return self.progress.last

    @property
    def failure(self) -> BaseException | None:
        crashed: BaseException | None = self.app.crash_reason
        return self._failure or crashed

    async def start(self) -> None:
        await self.app.start()

    async def stop(self) -> None:
        await self.app.stop()

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
        staged.apply()
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
        staged.apply()
        self._ticked_at = now
        if outputs:
            self.progress.tick(produced=len(outputs))

    def _topic(self, physical: str) -> Any:
        topic = self._outputs.get(physical)
        if topic is None:
            topic = self._outputs[physical] = self.app.topic(physical, key_serializer="raw", value_serializer="raw")
        return topic

    async def _publish(self, events: Sequence[Event]) -> None:
        """Send and wait until every output is acknowledged (retrying while the cluster is away)."""
        if not events:
            return
        delay = 0.2
        while True:
            try:
                pending = []
                for e in events:
                    m = self._codec.encode(e)
                    pending.append(
                        await self._topic(m.topic).send(key=m.key, value=m.value, headers=m.headers, force=True)
                    )
                await asyncio.gather(*pending)
                return
            except KafkaError as exc:  # retriable by nature here: the outputs are idempotent downstream
                log.warning(
                    "%s: publishing %d event(s) failed (%s); retrying in %.1f s", self.name, len(events), exc, delay
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, PUBLISH_RETRY_MAX_S)

"""One batch of input messages through a processor, whatever the runtime around it (faust app or confluent loop).

Each event gets its own staged view, folded into its partition's batch view only when the processor returned:
an event that raises is dead-lettered and leaves no partial state. What comes back is what the runtime then
writes: the outputs (dead letters included), and per partition the staged changes to its store
(`StagedStore.changes()`), turned into changelog records by `changelog_records`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from streams.embedded import DecodeError
from streams.events import Event
from streams.kafka.batch_sender import Outgoing
from streams.kafka.codec import KafkaCodec, SourceRef, dead_letter
from streams.kafka.staged_store import DELETED, StagedStore
from streams.kafka.store_codec import dumps
from streams.processors.base import Processor


@dataclass
class BatchOutcome:
    outputs: list[Event] = field(default_factory=list)
    views: dict[int, StagedStore] = field(default_factory=dict)  # partition -> the batch's staged changes
    letters: int = 0
    watermark: datetime | None = None  # the latest receive time in the batch


def handle_batch(
    processor: Processor,
    codec: KafkaCodec,
    sources: Sequence[SourceRef],
    store_of: Callable[[int], MutableMapping[str, Any]],
    *,
    stage: str,
    evaluator_version: str | None = None,
) -> BatchOutcome:
    """Decode and handle every message in order; `store_of(partition)` is the partition's loaded store."""
    done = BatchOutcome()
    for source in sources:
        try:
            event = codec.decode(source.value)
        except DecodeError as exc:
            done.outputs.append(dead_letter(stage, exc.reason, exc, source, evaluator_version=evaluator_version))
            done.letters += 1
            continue
        if done.watermark is None or event.received_time > done.watermark:  # never a sender's clock
            done.watermark = event.received_time
        view = done.views.get(source.partition)
        if view is None:
            view = done.views[source.partition] = StagedStore(store_of(source.partition))
        staged = StagedStore(view)
        try:
            produced = processor.handle(staged, event)
        except Exception as exc:  # the stream boundary: a poison event is dead-lettered, the stream goes on
            done.outputs.append(
                dead_letter(stage, "PROCESSING_ERROR", exc, source, evaluator_version=evaluator_version)
            )
            done.letters += 1
            continue
        staged.fold()
        done.outputs += produced
    return done


def changelog_records(changelog: str, changes: Iterable[tuple[int, list[tuple[str, Any]]]]) -> list[Outgoing]:
    """Store changes as changelog records: keyed by the store key, on the store's partition, None a removal."""
    return [
        Outgoing(changelog, key.encode(), None if value is DELETED else dumps(value), None, p)
        for p, partition_changes in changes
        for key, value in partition_changes
    ]


def apply_changes(store: MutableMapping[str, Any], changes: Iterable[tuple[str, Any]]) -> None:
    for key, value in changes:
        if value is DELETED:
            store.pop(key, None)
        else:
            store[key] = value

"""One writer, many readers, on an embedded data directory.

The embedded log has one writer: the process that holds `<data dir>/topics-log/LOCK` (`agenttwin ingest`,
`evaluate`, `demo`, ...). Every other process reads: `ReadOnlyLog` opens the log read-only — no lock, no
commit, blocks checked against their CRC as they are read, new blocks taken in as the writer appends them
(streams/embedded_log.py). What a reader must keep for itself lives beside the writer's files, never in them:

- `<data dir>/readers/`: the projections a reader queries while the writer runs (consumers/reader_sink.py);
- `<data dir>/consumers/<name>/`: a consumer's own small embedded log (its own lock: one process per
  consumer) holding its progress and the dead letters it made — the webhook's undeliverable alerts.
  The writer adopts those dead letters into the main `dead-letters` topic (`adopt_dead_letters`), once
  each (their event ids are fixed), so they reach the projections like any other.

Events from outside (spans, verifications) never take this path: they go to the writer through the
receiver's HTTP endpoints (`POST /v1/traces`, `POST /v1/outcomes`).
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

from schemas import AVRO_DIR
from streams.embedded import DecodeError, EmbeddedRuntime, decodable_events, decode_record
from streams.embedded_log import RUNTIME_LOG_DIR, EmbeddedLog, LogRecord
from streams.events import DeadLettered, Event
from streams.topics import DEAD_LETTERS
from streams.wire import SchemaStore

CONSUMERS_DIR = "consumers"
READERS_DIR = "readers"


class ReadOnlyLog:
    """The log of a data directory, read-only, with records decoded like the runtime decodes them."""

    def __init__(self, data_dir: Path, *, schemas: SchemaStore | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.log = EmbeddedLog(self.data_dir / RUNTIME_LOG_DIR, read_only=True)
        self.schemas = schemas or SchemaStore.from_directory(AVRO_DIR)

    def decode(self, record: LogRecord) -> Event:
        return decode_record(self.schemas, record)

    def read_events(self, topic: str) -> list[Event]:
        """Every decodable event of a topic, in offset order (undecodable ones are skipped here)."""
        return decodable_events(self.log, self.schemas, topic)

    def close(self) -> None:
        self.log.close()

    def __enter__(self) -> ReadOnlyLog:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def consumer_dir(data_dir: Path, name: str) -> Path:
    return Path(data_dir) / CONSUMERS_DIR / name


def adopt_dead_letters(runtime: EmbeddedRuntime) -> int:
    """Copy the dead letters consumers wrote in their own logs into the main `dead-letters` topic; returns
    how many were new (already adopted ones are skipped by their event ids)."""
    root = runtime.data_dir / CONSUMERS_DIR
    if not root.is_dir():
        return 0
    letters: list[Event] = []
    for directory in sorted(p for p in root.iterdir() if (p / RUNTIME_LOG_DIR).is_dir()):
        with ReadOnlyLog(directory, schemas=runtime.schemas) as side:
            if DEAD_LETTERS.name not in side.log.topics():
                continue
            for record in side.log.read(DEAD_LETTERS.name):
                try:
                    event = side.decode(record)
                except DecodeError:  # a consumer writes only dead letters; anything else stays where it is
                    continue
                if isinstance(event, DeadLettered):
                    letters.append(event)
    return runtime.publish(letters) if letters else 0

"""`python -m tests.integration.kafka.paused_worker KIND --kafka B --topic-prefix P --state DIR`: the worker that
`agenttwin worker KIND` runs (the same worker class and processor) stopped dead between the writes of a batch,
so that a SIGKILL lands exactly there. It writes DIR/paused then.

- a faust worker (FaustWorker): the batch's outputs are acknowledged on their topics, its store changes are
  not yet on the changelog (and its offsets not committed);
- a transactional batch worker (BatchWorker): the batch's outputs, store changes and offsets are written in
  its transaction, which is not committed (the broker aborts it once the worker is dead).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agenttwin.kafka_cli import build_workers, kafka_data_dir
from agenttwin.pipeline import judge_refiner
from agenttwin.settings import load_settings
from streams.events import Event
from streams.kafka.batch_worker import BatchWorker
from streams.kafka.faust_worker import FaustWorker
from streams.kafka.naming import Naming
from streams.kafka.runner import WorkerGroup
from streams.kafka.worker import Worker


def _pause(state: Path) -> None:
    ready = state / "paused.tmp"
    ready.write_text("")
    ready.replace(state / "paused")


class PausedWorker(FaustWorker):
    state: Path

    async def _publish(self, events: Sequence[Event]) -> None:
        await super()._publish(events)
        self.published = bool(events)

    async def _persist(self, staged: Any, generations: Any) -> None:
        if getattr(self, "published", False):
            _pause(self.state)
            await asyncio.Event().wait()  # until SIGKILL
        await super()._persist(staged, generations)


class PausedBatchWorker(BatchWorker):
    state: Path

    def _before_commit(self, outputs: int) -> None:
        if outputs:
            _pause(self.state)
            while True:  # until SIGKILL
                time.sleep(1)


async def serve(worker: Worker) -> None:
    async with WorkerGroup([worker]) as group:
        await group.run_until_stopped(asyncio.Event())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=("grader", "comparator", "outcome-join", "subject-join"))
    parser.add_argument("--kafka", required=True)
    parser.add_argument("--topic-prefix", required=True)
    parser.add_argument("--state", required=True, type=Path)
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args()
    settings = load_settings()
    (worker,) = build_workers(
        (args.kind,),
        args.kafka,
        naming=Naming(args.topic_prefix),
        data_dir=kafka_data_dir(settings),
        versions=("1.1.0",),
        refine=judge_refiner(settings),
    )
    # the same worker, with the pause between its writes
    if isinstance(worker, BatchWorker):
        worker.__class__ = PausedBatchWorker
    else:
        assert isinstance(worker, FaustWorker)
        worker.__class__ = PausedWorker
    worker.state = args.state  # type: ignore[attr-defined]
    asyncio.run(serve(worker))


if __name__ == "__main__":
    main()

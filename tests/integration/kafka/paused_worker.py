"""`python -m tests.integration.kafka.paused_worker KIND --kafka B --topic-prefix P --state DIR`: the faust worker
that `agenttwin worker KIND` runs (the same FaustWorker and processor) that stops dead between the two writes
of a batch, so that a SIGKILL lands exactly there: the batch's outputs are acknowledged on their topics, its
store changes are not yet on the changelog (and its offsets not committed). It writes DIR/paused then.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agenttwin.kafka_cli import build_workers, kafka_data_dir
from agenttwin.pipeline import judge_refiner
from agenttwin.settings import load_settings
from streams.events import Event
from streams.kafka.faust_worker import FaustWorker
from streams.kafka.naming import Naming
from streams.kafka.runner import WorkerGroup


class PausedWorker(FaustWorker):
    state: Path

    async def _publish(self, events: Sequence[Event]) -> None:
        await super()._publish(events)
        self.published = bool(events)

    async def _persist(self, staged: Any, generations: Any) -> None:
        if getattr(self, "published", False):
            ready = self.state / "paused.tmp"
            ready.write_text("")
            ready.replace(self.state / "paused")
            await asyncio.Event().wait()  # until SIGKILL
        await super()._persist(staged, generations)


async def serve(worker: FaustWorker) -> None:
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
    assert isinstance(worker, FaustWorker)
    worker.__class__ = PausedWorker  # the same worker, with the pause between its two writes
    worker.state = args.state  # type: ignore[attr-defined]
    asyncio.run(serve(worker))


if __name__ == "__main__":
    main()

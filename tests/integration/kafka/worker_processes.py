"""Workers as separate OS processes, for the fault tests: started, killed with SIGKILL, restarted; their
consumer groups' progress read from the broker; a chDB warehouse read back by a process of its own."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from streams.kafka.clients import consumer_config
from streams.kafka.naming import Naming
from streams.kafka.reading import committed_positions
from streams.topics import TOPIC_BY_NAME
from tests.integration.kafka.kafka_pipeline_support import TableDump
from tests.integration.kafka_broker import REPO_ROOT

WAIT_S = 60.0
DUMP_TIMEOUT_S = 120.0


class WorkerProcess:
    """`agenttwin worker KIND` (or `command`, a python -m module line) as a separate OS process whose data
    directory is `data_dir`; its output goes to `<data_dir>/<label>.log`."""

    def __init__(
        self,
        bootstrap: str,
        naming: Naming,
        data_dir: Path,
        kind: str = "grader",
        *,
        command: Sequence[str] | None = None,
        label: str | None = None,
    ) -> None:
        self.kind = kind
        self.args = [sys.executable, "-m", *(command or ("agenttwin.kafka_cli", "worker", kind))]
        self.args += ["--kafka", bootstrap, "--topic-prefix", naming.prefix, "--log-level", "INFO"]
        if command is None and kind == "grader":
            self.args += ["--evaluator-version", "1.1.0"]
        self.env = {**os.environ, "AGENTTWIN_DATA_DIR": str(data_dir), "PYTHONWARNINGS": "ignore"}
        self.env.pop("AGENTTWIN_CLICKHOUSE_URL", None)  # a sink here writes the chDB of its data directory
        self.log = data_dir / f"{label or kind}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(self.args, cwd=REPO_ROOT, env=self.env, stdout=log, stderr=log)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def check(self) -> None:
        assert self.alive(), f"{self.kind} worker exited ({self.proc and self.proc.returncode}); see {self.log}"

    def wait_for_log(self, text: str, timeout_s: float = WAIT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while text not in self.log.read_text(errors="replace"):
            self.check()
            assert time.monotonic() < deadline, f"{text!r} not in {self.log} within {timeout_s} s"
            time.sleep(0.2)

    def kill(self) -> None:
        """SIGKILL: no shutdown at all (offsets, changelog, outputs and warehouse as they happen to be)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        assert self.proc.wait(timeout=30) == -signal.SIGKILL

    def stop(self) -> int | None:
        """SIGTERM (a clean stop), SIGKILL if that takes over 30 s; the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        return self.proc.returncode


def committed(bootstrap: str, naming: Naming, group: str, topics: Sequence[str]) -> int:
    """How many messages of `topics` the consumer group (logical name) has committed, over all partitions."""
    consumer = Consumer(consumer_config(bootstrap, naming.group(group)))
    try:
        parts = [TopicPartition(naming.topic(t), p) for t in topics for p in range(TOPIC_BY_NAME[t].partitions)]
        return sum(max(tp.offset, 0) for tp in committed_positions(consumer, parts))
    finally:
        consumer.close()


def dump_in_another_process(data_dir: Path) -> dict[str, TableDump]:
    """The tables of the chDB warehouse in `data_dir`, read by a process of its own (chDB binds one directory
    per process, and this one's is the tests' shared directory)."""
    out = data_dir / "tables.pickle"
    result = subprocess.run(
        [sys.executable, "-m", "tests.integration.kafka.warehouse_dump", str(data_dir), str(out)],
        cwd=REPO_ROOT,
        env={k: v for k, v in os.environ.items() if k != "AGENTTWIN_CLICKHOUSE_URL"},
        capture_output=True,
        text=True,
        timeout=DUMP_TIMEOUT_S,
    )
    assert result.returncode == 0, f"warehouse dump failed:\n{result.stdout}{result.stderr[-3000:]}"
    tables: dict[str, TableDump] = pickle.loads(out.read_bytes())
    return tables

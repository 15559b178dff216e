"""A reader's own copy of the projections (`agenttwin sql` beside a writer), against real chDB: the log read
read-only while the writer holds it, projected by the sink's own loop with its offsets stored in the copy —
the writer's tables row for row (with and without FINAL), only what is new on the next read, an exact redo
after a crash, and a stale copy re-projected while a shared server's projections are never dropped."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agenttwin.pipeline import evaluation_request, judge_refiner, processors
from agenttwin.settings import Settings
from consumers import sink_progress
from consumers.clickhouse import ChdbWarehouse, qualified
from consumers.embedded_sink import ProgressPastLogError, sync
from consumers.projections import snapshot
from consumers.reader_sink import sync_read_only
from consumers.sink import MissingProjectionError
from producers.sdk.outcome import outcome_event
from streams._log_support import LogLockedError
from streams.embedded import EmbeddedRuntime
from streams.log_reader import ReadOnlyLog
from tests.integration.test_projection_sink import Crash, CrashingWarehouse, stop_merges

AT = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
_counter = iter(range(1_000_000))


@pytest.fixture(scope="module")
def chdb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("reader-chdb")


@pytest.fixture(scope="module")
def demo_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("reader-log")
    request = evaluation_request(
        "demo:1.2.4", "demo:1.3.0", suite=["demo"], twin=None, seed=42, evaluation_id=None, evaluator_version="1.1.0"
    )
    with EmbeddedRuntime(data_dir) as runtime:
        runtime.publish([request])
        runtime.run(processors(["1.1.0"], judge_refiner(Settings())))
    return data_dir


@pytest.fixture
def writer(demo_log: Path, tmp_path: Path) -> Iterator[EmbeddedRuntime]:
    """A writer holding its own copy of the demo's log for the whole test."""
    data = tmp_path / "data"
    shutil.copytree(demo_log, data)
    with EmbeddedRuntime(data) as runtime:
        yield runtime


def _warehouse(chdb_dir: Path, label: str) -> ChdbWarehouse:
    return ChdbWarehouse(chdb_dir, f"{label}_{time.monotonic_ns()}_{next(_counter)}")


def test_the_copy_holds_the_writers_tables_and_takes_only_what_is_new(writer: EmbeddedRuntime, chdb_dir: Path) -> None:
    with pytest.raises(LogLockedError):
        EmbeddedRuntime(writer.data_dir)  # the writer holds the log: a second writer is refused
    with _warehouse(chdb_dir, "own") as own, _warehouse(chdb_dir, "copy") as copy:
        stop_merges(copy)
        sync(writer, own)
        with ReadOnlyLog(writer.data_dir) as reader:
            first = sync_read_only(reader, copy)
            assert first.rows > 250 and first.dead_letters == 0
            assert snapshot(copy) == snapshot(own) == snapshot(copy, final=False)  # no row twice
            assert sync_read_only(reader, copy).rows == 0  # its offsets are in the copy

            writer.publish([outcome_event("ab" * 16, "FAILURE", True, "external_callback", "x", tenant="acme", at=AT)])
            writer.append_raw("verified-outcomes", b"\x00not an event", key="k")
            again = sync_read_only(reader, copy)
            assert (again.rows, again.dead_letters) == (1, 1)  # skipped here: the writer's sink dead-letters it
        sync(writer, own)
        assert snapshot(copy) == snapshot(copy, final=False)
        table = qualified(copy, "verified_outcomes")
        assert copy.query(f"SELECT count() FROM {table} WHERE trace_id = '{'ab' * 16}'").rows[0][0] == 1
        assert "dead_letters" not in {t for t, rows in snapshot(copy).items() if rows}  # none written by a reader
        for wh in (own, copy):
            wh.execute(f"DROP DATABASE `{wh.database}`")


def test_a_copy_cut_short_is_redone_exactly(writer: EmbeddedRuntime, chdb_dir: Path) -> None:
    with _warehouse(chdb_dir, "ref") as ref, _warehouse(chdb_dir, "cut") as real, ReadOnlyLog(writer.data_dir) as r:
        sync_read_only(r, ref)
        stop_merges(real)
        with pytest.raises(Crash):
            sync_read_only(r, CrashingWarehouse(real, 13), batch_size=7)
        assert any(not p.done for p in sink_progress.load(real, sink_progress.EMBEDDED_SOURCE).values())
        sync_read_only(r, real)  # other batch sizes: only an exact redo of the cut batch gives no duplicate
        assert snapshot(real) == snapshot(ref) == snapshot(real, final=False)
        for wh in (ref, real):
            wh.execute(f"DROP DATABASE `{wh.database}`")


def test_a_stale_copy_is_reprojected_but_shared_projections_are_never_dropped(
    writer: EmbeddedRuntime, chdb_dir: Path
) -> None:
    with _warehouse(chdb_dir, "stale") as copy, ReadOnlyLog(writer.data_dir) as reader:
        sync_read_only(reader, copy)
        before = snapshot(copy)
        copy.execute(f"DROP TABLE {qualified(copy, 'cases')}")  # a table this copy's offsets say it filled
        with pytest.raises(MissingProjectionError, match="agenttwin rebuild"):
            sync_read_only(reader, copy, own_copy=False)  # a server's: the owner decides
        assert "cases" not in {str(r[0]) for r in copy.query(f"SHOW TABLES FROM `{copy.database}`").rows}
        assert sync_read_only(reader, copy).rows == sum(len(rows) for rows in before.values())
        assert snapshot(copy) == before == snapshot(copy, final=False)
        copy.execute(f"DROP DATABASE `{copy.database}`")


def test_a_copy_ahead_of_replaced_topics_is_reprojected_but_a_shared_one_is_refused(
    writer: EmbeddedRuntime, chdb_dir: Path, tmp_path: Path
) -> None:
    """The topics were replaced by fewer records (deleted and begun again): offsets in a copy past their ends
    would skip the new records. An own copy is projected again from offset 0; a server's is refused."""
    small = tmp_path / "small"
    with EmbeddedRuntime(small) as runtime:
        runtime.publish([outcome_event("cd" * 16, "FAILURE", True, "external_callback", "x", tenant="acme", at=AT)])
    with (
        _warehouse(chdb_dir, "ahead") as copy,
        _warehouse(chdb_dir, "fresh") as fresh,
        ReadOnlyLog(writer.data_dir) as big,
        ReadOnlyLog(small) as reader,
    ):
        sync_read_only(big, copy)
        with pytest.raises(ProgressPastLogError, match="agenttwin rebuild"):
            sync_read_only(reader, copy, own_copy=False)
        assert sync_read_only(reader, copy).rows == 1
        sync_read_only(reader, fresh)
        assert snapshot(copy) == snapshot(fresh) == snapshot(copy, final=False)
        for wh in (copy, fresh):
            wh.execute(f"DROP DATABASE `{wh.database}`")

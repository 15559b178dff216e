"""Checkpointed state on the embedded runtime: a command handles only the events it has not handled, and
gives exactly what rebuilding every stateful processor from offset 0 gives; a checkpoint that cannot be
trusted (damaged, torn, from other code) is never used: it is set aside, with a warning, and rebuilt."""

from __future__ import annotations

import logging
import shutil
import sqlite3
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agenttwin.cli import main
from agenttwin.pipeline import PipelineStats, evaluation_request, judge_refiner, open_embedded, run_pipeline
from agenttwin.settings import Settings
from consumers.clickhouse import WarehouseError, qualified
from consumers.projections import snapshot
from evaluation.versions import DEFAULT_EVALUATOR_SET
from streams._avro_container import parse_header, scan_blocks
from streams.embedded import EmbeddedRuntime
from streams.events import EvaluationRequested
from streams.processors import Comparator, Grader, OutcomeJoin, SubjectJoin, VersionTally, VersionWatch

VERSION = DEFAULT_EVALUATOR_SET
REPLAY_VERSION = "1.0.0"
PAIRS = (("demo:1.2.4", "demo:1.3.0"), ("demo:1.3.0", "demo:1.3.1"))
STATEFUL = {
    g.name: g.inputs
    for g in (Grader(VERSION), Comparator(), SubjectJoin(), OutcomeJoin(), VersionTally(), VersionWatch())
}  # group -> inputs
# simulations link no subjects, and are not production traces (no version tallies): those read nothing
FED = [group for group in STATEFUL if group not in ("subject-join", "version-watch")]

Records = dict[str, list[tuple[Any, ...]]]


def _request(n: int) -> EvaluationRequested:
    baseline, candidate = PAIRS[n % len(PAIRS)]
    return evaluation_request(
        baseline, candidate, suite=["demo"], twin=None, seed=700 + n, evaluation_id=None, evaluator_version=VERSION
    )


def _command(
    root: Path, request: EvaluationRequested | None, *, checkpoints: bool = True, versions: tuple[str, ...] = (VERSION,)
) -> tuple[PipelineStats, dict[str, int]]:
    """One `evaluate` (or, without a request, one `replay`), as the CLI runs it: open, publish, run, close.
    Returns the stats and how many records each topic gained during the command."""
    settings = Settings()
    with open_embedded(settings, root, checkpoints=checkpoints) as emb:
        log = emb.runtime.log
        before = {t: log.end_offset(t) for t in log.topics()}
        if request is not None:
            emb.runtime.publish([request])
        stats = run_pipeline(emb, list(versions), judge_refiner(settings), simulate=request is not None)
        gained = {t: log.end_offset(t) - before.get(t, 0) for t in log.topics()}
    return stats, gained


def _records(root: Path) -> Records:
    with EmbeddedRuntime(root) as runtime:
        log = runtime.log
        return {t: [(r.key, r.value, dict(r.headers)) for r in log.read(t)] for t in log.topics()}


def _tables(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    with open_embedded(Settings(), root) as emb:
        return snapshot(emb.warehouse)


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[PipelineStats]]:
    """Two evaluations with every stateful processor rebuilt from offset 0 on each command (no checkpoints)."""
    root = tmp_path_factory.mktemp("rebuilt")
    return root, [_command(root, _request(n), checkpoints=False)[0] for n in range(2)]


def test_a_second_evaluate_consumes_only_the_new_evaluations_events(
    tmp_path: Path, rebuilt: tuple[Path, list[PipelineStats]]
) -> None:
    _command(tmp_path, _request(0))
    stats, gained = _command(tmp_path, _request(1))
    for group, inputs in STATEFUL.items():
        new = sum(gained.get(t, 0) for t in inputs)
        assert (new > 0) == (group in FED)
        assert stats.run.consumed[group] == new, group  # nothing of the first evaluation is read again
    assert stats.run.rebuilt == []
    # without checkpoints every command reads every input from offset 0
    reference_root, reference_stats = rebuilt
    reference = _records(reference_root)
    for group in FED:
        inputs = STATEFUL[group]
        everything = sum(len(reference.get(t, [])) for t in inputs)
        assert reference_stats[1].run.consumed[group] == everything > stats.run.consumed[group]
    # ...and both give the same records on every topic, byte for byte, and the same tables
    assert _records(tmp_path) == reference
    assert _tables(tmp_path) == _tables(reference_root)
    # a third command with nothing new reads nothing and adds nothing
    again, gained = _command(tmp_path, None)
    assert sum(again.run.consumed.values()) == 0 and not any(gained.values())


def test_a_new_evaluator_version_replays_from_offset_0_into_its_own_groups(tmp_path: Path) -> None:
    _command(tmp_path, _request(0))
    stats, gained = _command(tmp_path, None, versions=(REPLAY_VERSION,))
    everything = _records(tmp_path)
    grader = f"grader-{REPLAY_VERSION}"
    assert stats.run.consumed[grader] == sum(len(everything[t]) for t in Grader(REPLAY_VERSION).inputs)
    # the comparator (one group for every version) and the join read only what the replay added
    assert stats.run.consumed["comparator"] == gained["verdicts"] + gained.get("reviews", 0) > 0
    assert (tmp_path / "checkpoints" / f"{grader}.sqlite").is_file()
    assert stats.run.consumed["outcome-join"] == gained["verified-outcomes"] > 0


def _rewrite_meta(path: Path, change: Callable[[str], str], *, fix_crc: bool) -> None:
    with sqlite3.connect(path) as db:
        (doc,) = db.execute("SELECT doc FROM meta").fetchone()
        doc = change(doc)
        crc = zlib.crc32(doc.encode()) if fix_crc else 0
        db.execute("UPDATE meta SET doc = ?, crc = ?", (doc, crc))


def _flip_value(path: Path, key: str) -> None:
    with sqlite3.connect(path) as db:
        (value,) = db.execute("SELECT value FROM kv WHERE key = ?", (key.encode(),)).fetchone()
        damaged = bytearray(value)
        damaged[len(damaged) // 2] ^= 0x20
        db.execute("UPDATE kv SET value = ? WHERE key = ?", (bytes(damaged), key.encode()))


def _drop_a_row(path: Path, _key: str) -> None:
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM kv WHERE rowid = (SELECT min(rowid) FROM kv)")


def _truncate(path: Path, _key: str) -> None:
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbage(path: Path, _key: str) -> None:
    path.write_bytes(b"\x00not a checkpoint\xff" * 100)
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


DAMAGE: dict[str, tuple[str, str, Callable[[Path, str], None]]] = {
    # name: (group, key read in the next command, damage)
    "a value read back fails its CRC": (f"grader-{VERSION}", "\x00done", _flip_value),
    "a join value read back fails its CRC": ("outcome-join", "\x00indexed", _flip_value),
    "a row is missing": ("comparator", "", _drop_a_row),
    "the meta row fails its CRC": (
        f"grader-{VERSION}",
        "",
        lambda p, _k: _rewrite_meta(p, lambda d: d.replace('"rows": ', '"rows": 1'), fix_crc=False),
    ),
    "another code version wrote it": (
        "outcome-join",
        "",
        lambda p, _k: _rewrite_meta(p, lambda d: d.replace('"tag": "', '"tag": "older-'), fix_crc=True),
    ),
    "a torn file": ("comparator", "", _truncate),
    "not a database": ("outcome-join", "", _garbage),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_an_untrusted_checkpoint_is_set_aside_and_rebuilt_with_a_warning(
    damage: str, tmp_path: Path, rebuilt: tuple[Path, list[PipelineStats]], caplog: pytest.LogCaptureFixture
) -> None:
    group, key, harm = DAMAGE[damage]
    _command(tmp_path, _request(0))
    path = tmp_path / "checkpoints" / f"{group}.sqlite"
    harm(path, key)
    with caplog.at_level(logging.WARNING):
        stats, _ = _command(tmp_path, _request(1))
    assert any(group in r.getMessage() and "rebuilding" in r.getMessage() for r in caplog.records), caplog.text
    assert stats.run.rebuilt == [group]
    assert list((tmp_path / "checkpoints").glob(f"{group}.sqlite.bad-*")), "the damaged file is kept aside"
    # the rebuilt processor read its inputs from offset 0; the others only what was new
    everything = _records(tmp_path)
    assert stats.run.consumed[group] >= sum(len(everything.get(t, [])) for t in STATEFUL[group])
    reference_root, _ = rebuilt
    assert _records(tmp_path) == _records(reference_root)
    assert _tables(tmp_path) == _tables(reference_root)
    # and the new checkpoint is trusted by the next command
    again, _ = _command(tmp_path, None)
    assert again.run.rebuilt == [] and sum(again.run.consumed.values()) == 0


def test_records_repaired_into_quarantine_are_derived_again(
    tmp_path: Path, rebuilt: tuple[Path, list[PipelineStats]], caplog: pytest.LogCaptureFixture
) -> None:
    """Checkpoints are past the records `log repair` moves to quarantine: the runtime notices the log lost
    records, sets every checkpoint aside and rebuilds, so lost outputs are derived and appended again."""
    for n in range(2):
        _command(tmp_path, _request(n))
    verdicts = tmp_path / "topics-log" / "topics" / "verdicts.avro"
    data = verdicts.read_bytes()
    header = parse_header(data, len(data))
    blocks, _ = scan_blocks(data, header.data_start, len(data), header.sync)
    last = blocks[-1]  # verdicts of the second evaluation
    damaged = bytearray(data)
    damaged[last.body_position + last.body_size // 2] ^= 0x10
    verdicts.write_bytes(bytes(damaged))
    assert main(["log", "repair", "--data-dir", str(tmp_path)]) == 0
    lost = _records(tmp_path)["verdicts"]
    with caplog.at_level(logging.WARNING):
        stats, gained = _command(tmp_path, _request(1))  # the same request again: normally a no-op
    assert any("left the log" in r.getMessage() for r in caplog.records), caplog.text
    # one flipped byte: repair keeps the block's other verdicts; exactly the quarantined one is appended again
    assert len(lost) == sum(b.count for b in blocks) - 1
    assert gained["verdicts"] == 1
    assert f"grader-{VERSION}" in stats.run.consumed
    reference_root, _ = rebuilt

    def verdict_ids(root: Path) -> list[str]:
        return sorted(headers["event_id"] for _k, _v, headers in _records(root)["verdicts"])

    assert len(lost) < len(_records(tmp_path)["verdicts"])
    assert verdict_ids(tmp_path) == verdict_ids(reference_root)


@pytest.mark.parametrize("index_too", [False, True], ids=["index-kept", "index-deleted"])
def test_topics_deleted_under_kept_checkpoints_are_derived_from_offset_0(
    index_too: bool, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """A data directory whose topics went (deleted, or a topic missing from a restored copy) while its
    checkpoints stayed: the checkpoints describe records that are gone, so they are set aside and the next
    command gives exactly the records and tables of a fresh data directory. The event-id index notices
    the lost records; without it, each checkpoint is found past the end of its inputs."""
    _command(tmp_path, _request(0))
    shutil.rmtree(tmp_path / "topics-log")
    shutil.rmtree(tmp_path / "clickhouse")  # the warehouse's offsets describe the old topics too
    if index_too:
        (tmp_path / "checkpoints" / "event-ids.sqlite").unlink()
    with caplog.at_level(logging.WARNING):
        stats, _ = _command(tmp_path, _request(0))
    said = "past the end" if index_too else "left the log"
    assert any(said in r.getMessage() for r in caplog.records), caplog.text
    assert list((tmp_path / "checkpoints").glob("*.sqlite.bad-*"))
    fresh = tmp_path_factory.mktemp("fresh")
    _command(fresh, _request(0), checkpoints=False)
    assert _records(tmp_path) == _records(fresh)
    assert _tables(tmp_path) == _tables(fresh)
    for group in FED:
        assert stats.run.consumed[group] > 0, group


def test_rebuild_keeps_the_checkpoints_and_gives_the_tables_of_a_run_without_them(
    tmp_path: Path, rebuilt: tuple[Path, list[PipelineStats]], capsys: pytest.CaptureFixture[str]
) -> None:
    """`agenttwin rebuild` re-projects the topics; it changes no topic, so the processors' checkpoints and
    the event-id index stay valid: it leaves them, and the tables are those of a run without checkpoints
    (with FINAL and without: no row twice)."""
    for n in range(2):
        _command(tmp_path, _request(n))
    checkpoints = _checkpoint_rows(tmp_path)
    records = _records(tmp_path)
    reference_root, _ = rebuilt
    expected = _tables(reference_root)
    with open_embedded(Settings(), tmp_path) as emb:
        emb.warehouse.execute(f"DROP TABLE {qualified(emb.warehouse, 'verdicts')}")  # rebuild restores it
    assert main(["rebuild", "--data-dir", str(tmp_path)]) == 0
    assert "Rebuilt the projections from offset 0" in capsys.readouterr().out
    assert _records(tmp_path) == records  # the topics (dead letters included) did not change
    assert _checkpoint_rows(tmp_path) == checkpoints
    assert not list((tmp_path / "checkpoints").glob("*.bad-*"))
    with open_embedded(Settings(), tmp_path) as emb:
        assert snapshot(emb.warehouse) == snapshot(emb.warehouse, final=False) == expected
    # and the processors go on from their checkpoints: nothing new, nothing read, nothing added
    again, gained = _command(tmp_path, None)
    assert again.run.rebuilt == [] and sum(again.run.consumed.values()) == 0 and not any(gained.values())


def _checkpoint_rows(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every checkpoint and of the event-id index, by file."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for path in sorted((root / "checkpoints").glob("*.sqlite")):
        with sqlite3.connect(path) as db:
            tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
            out[path.name] = [(t, *row) for t in tables for row in db.execute(f"SELECT * FROM {t} ORDER BY 1")]
    assert len(out) == len(STATEFUL) + 1
    return out


def test_a_warehouse_ahead_of_replaced_topics_is_refused_until_rebuild(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    """The topics went but the warehouse stayed: its `sink_offsets` are past the new topics' ends, so new
    events at those offsets would never be projected. The command stops with one line naming `agenttwin
    rebuild`, which then gives the tables of a fresh data directory. (`agenttwin sql` is a reader: its own
    copy follows the topics, so it answers from what they hold.)"""
    for n in range(2):
        _command(tmp_path, _request(n))
    shutil.rmtree(tmp_path / "topics-log")
    code = main(["sql", "SELECT count() FROM comparisons", "--format", "csv", "--data-dir", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 0 and captured.out.split() == ["count()", "0"], captured.err
    with pytest.raises(WarehouseError, match="agenttwin rebuild"):
        _command(tmp_path, _request(0))  # the processors ran; the sink refuses to skip their events
    assert main(["rebuild", "--data-dir", str(tmp_path)]) == 0
    fresh = tmp_path_factory.mktemp("fresh")
    _command(fresh, _request(0), checkpoints=False)
    assert _records(tmp_path) == _records(fresh)
    assert _tables(tmp_path) == _tables(fresh)

"""The log's guarantees through the CLI, on a log written by the real pipeline (`demo` + OTLP ingest).

A flipped byte anywhere — a block, its framing, a sync marker, the container header, the index — makes
every command stop with one line and exit 2 (never a traceback, never a truncation); `log verify` names
the damaged block; `log repair` quarantines it, records a dead letter and keeps every other block with
its offsets, so the sink's committed offsets stay valid and new events reach ClickHouse exactly once.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from agenttwin.cli import main
from agenttwin.pipeline import open_embedded
from agenttwin.settings import Settings
from consumers.clickhouse import qualified
from consumers.projections import TABLE_BY_EVENT
from producers.otlp import ApiKeys, make_server
from streams._avro_container import Block, parse_header, scan_blocks
from streams._log_salvage import record_spans
from streams.embedded import EmbeddedRuntime
from streams.embedded_log import EmbeddedLog
from streams.log_reader import ReadOnlyLog
from tests.unit.traces.conftest import request, span

KEY = "key-acme"


def sink_position(capsys: pytest.CaptureFixture[str], data_dir: Path, topic: str) -> int:
    """Where the ClickHouse sink is in a topic, from its offsets in the warehouse (after it caught up)."""
    rows = sql(
        capsys,
        data_dir,
        "SELECT argMax(next_offset, version) FROM sink_offsets "
        f"WHERE source = 'embedded' AND topic = '{topic}' AND done",
    )
    return int(rows[0][0])


def _trace_id(n: int) -> bytes:
    return hashlib.sha256(f"log-integrity-trace-{n}".encode()).digest()[:16]


def ingest(data_dir: Path, traces: range) -> list[str]:
    """POST one OTLP request per trace (two spans each) to a real receiver on the real embedded log."""
    with EmbeddedRuntime(data_dir) as runtime:
        server = make_server("127.0.0.1", 0, runtime, ApiKeys.from_mapping({KEY: "acme"}))
        server.start()
        try:
            for n in traces:
                root, child = _trace_id(n)[:8], _trace_id(n)[8:]
                body = request(
                    span(root, trace_id=_trace_id(n), attrs={"agenttwin.outcome.claimed": "SUCCESS"}),
                    span(child, trace_id=_trace_id(n), parent=root, name="execute_tool lookup_order"),
                ).SerializeToString()
                resp = httpx.post(
                    f"{server.url}/v1/traces",
                    content=body,
                    headers={"Content-Type": "application/x-protobuf", "x-agenttwin-api-key": KEY},
                    timeout=60,
                )
                assert resp.status_code == 200, resp.text
        finally:
            server.close()
    return [_trace_id(n).hex() for n in traces]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def sql(capsys: pytest.CaptureFixture[str], data_dir: Path, query: str) -> list[list[str]]:
    code, out, err = run(capsys, "sql", query, "--format", "csv", "--data-dir", str(data_dir))
    assert code == 0, err
    return [line.split(",") for line in out.strip().splitlines()[1:]]


def one_line_refusal(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]


def layout(path: Path) -> tuple[int, list[Block]]:
    data = path.read_bytes()
    header = parse_header(data, len(data))
    blocks, problem = scan_blocks(data, header.data_start, len(data), header.sync)
    assert problem is None
    return header.data_start, blocks


def flip(path: Path, position: int, mask: int = 0x10) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= mask
    path.write_bytes(bytes(data))


def records(data_dir: Path) -> dict[str, dict[int, bytes]]:
    with EmbeddedLog(data_dir / "topics-log", read_only=True) as log:
        return {t: {r.offset: r.value for r in log.read(t)} for t in log.topics()}


@pytest.fixture(scope="module")
def pipeline_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo, then production spans arriving in seven requests: seven more blocks in spans.avro."""
    data_dir = tmp_path_factory.mktemp("pipeline")
    assert main(["demo", "--data-dir", str(data_dir)]) == 0
    ingest(data_dir, range(7))
    assert main(["sql", "SELECT 1", "--data-dir", str(data_dir)]) == 0  # the sink catches up
    return data_dir


@pytest.fixture
def copy(pipeline_dir: Path, tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(pipeline_dir, target, symlinks=True)  # chDB links its tables relatively
    return target


def test_verify_on_a_clean_pipeline_dir_finds_nothing_wrong(
    pipeline_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "log", "verify", "--data-dir", str(pipeline_dir))
    assert code == 0, out + err
    assert "damaged" not in out.lower() and err == ""
    assert "spans" in out or "topics" in out


def test_the_issues_case_a_flipped_sync_byte_in_the_middle_of_spans(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spans = copy / "topics-log" / "topics" / "spans.avro"
    _, blocks = layout(spans)
    assert len(blocks) >= 8
    middle = len(blocks) // 2
    with EmbeddedLog(copy / "topics-log", read_only=True) as log:
        end = log.end_offset("spans")
    assert sink_position(capsys, copy, "spans") == end > 0  # the sink's offsets live in the warehouse
    (before,) = sql(capsys, copy, "SELECT count() FROM spans")
    size = spans.stat().st_size
    flip(spans, blocks[middle].end - 7)

    code, _, err = run(capsys, "sql", "SELECT 1", "--data-dir", str(copy))
    one_line_refusal(code, err, "spans", f"block {middle}", f"byte {blocks[middle].position}", "log repair")
    assert spans.stat().st_size == size  # nothing was cut
    ingest_cli = subprocess.run(
        [sys.executable, "-m", "agenttwin.cli", "ingest", "--data-dir", str(copy), "--port", "0"],
        env={**os.environ, "AGENTTWIN_INGEST_API_KEYS": f"{KEY}=acme"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    one_line_refusal(ingest_cli.returncode, ingest_cli.stderr, "spans", "log repair")

    code, out, _ = run(capsys, "log", "verify", "--data-dir", str(copy))
    assert code == 2 and f"block {middle}" in out and "spans" in out
    code, out, err = run(capsys, "log", "repair", "--data-dir", str(copy))
    assert code == 0, err
    assert "quarantine" in out and "(0 record(s))" in out
    code, out, err = run(capsys, "log", "verify", "--data-dir", str(copy))
    assert code == 0, out + err

    new = ingest(copy, range(100, 104))  # more spans after the repair
    quoted = ", ".join(f"'{t}'" for t in new)
    assert sql(capsys, copy, f"SELECT count() FROM spans WHERE trace_id IN ({quoted})") == [["8"]]
    assert sql(capsys, copy, f"SELECT count() FROM spans FINAL WHERE trace_id IN ({quoted})") == [["8"]]
    assert sql(capsys, copy, "SELECT count() FROM spans") == [[str(int(before[0]) + 8)]]
    with EmbeddedLog(copy / "topics-log", read_only=True) as log:
        assert sink_position(capsys, copy, "spans") == log.end_offset("spans") == end + 8
    rows = sql(
        capsys,
        copy,
        "SELECT stage, source_topic, error_class, source_offset FROM dead_letters FINAL WHERE stage = 'log-repair'",
    )
    assert rows == []  # a damaged sync marker loses no record: no dead letter, every span is still there
    (note,) = (copy / "topics-log" / "quarantine").glob("*-spans.json")
    assert "every record was kept" in note.read_text()


@pytest.mark.parametrize(
    "argv",
    [["demo"], ["replay", "--evaluator-version", "1.1.0"], ["events", "tail", "cases"], ["sql", "SELECT 1"]],
)
def test_a_flipped_record_framing_byte_stops_every_command_in_one_line(
    copy: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    cases = copy / "topics-log" / "topics" / "cases.avro"
    _, blocks = layout(cases)
    flip(cases, blocks[0].body_position + 2, 0x7F)
    code, _, err = run(capsys, *argv, "--data-dir", str(copy))
    one_line_refusal(code, err, "cases", "block 0", "log repair")


def _random_damage(rng: random.Random, data_dir: Path) -> tuple[str, int | None]:
    """Flip one bit somewhere in one topic's files; returns the topic and the damaged block (None: no block)."""
    topics = data_dir / "topics-log" / "topics"
    topic = rng.choice(sorted(p.stem for p in topics.glob("*.avro")))
    container = topics / f"{topic}.avro"
    data_start, blocks = layout(container)
    where = rng.choice(["body", "framing", "sync", "header", "index"])
    block = rng.randrange(len(blocks))
    b = blocks[block]
    if where == "index":
        index = topics / f"{topic}.idx"
        flip(index, rng.randrange(index.stat().st_size), 1 << rng.randrange(8))
        return topic, None
    position = {
        "body": rng.randrange(b.body_position, b.body_position + b.body_size),
        "framing": rng.randrange(b.position, b.body_position),
        "sync": b.end - 1 - rng.randrange(16),
        "header": rng.randrange(data_start),
    }[where]
    flip(container, position, 1 << rng.randrange(8))
    return topic, (None if where == "header" else block)


@pytest.mark.parametrize("trial", range(6))
def test_random_damage_is_reported_repaired_and_the_pipeline_runs_on(
    copy: Path, pipeline_dir: Path, capsys: pytest.CaptureFixture[str], trial: int
) -> None:
    rng = random.Random(2026_11 + trial)
    topic, block = _random_damage(rng, copy)
    pristine = records(pipeline_dir)

    code, _, err = run(capsys, "demo", "--data-dir", str(copy))
    one_line_refusal(code, err, f"topic {topic}", "log repair")
    code, out, _ = run(capsys, "log", "verify", "--data-dir", str(copy))
    assert code == 2 and topic in out
    if block is not None:
        assert f"block {block}" in out
    code, out, err = run(capsys, "log", "repair", "--data-dir", str(copy))
    assert code == 0, err
    assert run(capsys, "log", "verify", "--data-dir", str(copy))[0] == 0

    after = records(copy)
    lost = 0
    for name, kept in pristine.items():
        for offset, value in kept.items():
            if offset in after[name]:
                assert after[name][offset] == value  # original offsets
            else:
                assert name == topic and block is not None
                lost += 1
    assert lost <= (0 if block is None else 1)  # one flipped bit: repair keeps every record but the one it hit

    code, out, err = run(capsys, "demo", "--data-dir", str(copy))  # the pipeline runs again
    assert code == 0, err
    new = ingest(copy, range(200 + 10 * trial, 203 + 10 * trial))
    quoted = ", ".join(f"'{t}'" for t in new)
    assert sql(capsys, copy, f"SELECT count() FROM spans WHERE trace_id IN ({quoted})") == [["6"]]
    assert sql(capsys, copy, f"SELECT count() FROM spans FINAL WHERE trace_id IN ({quoted})") == [["6"]]


def test_a_corrupt_offsets_file_is_one_line_and_repair_resets_the_group(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the outcome join reads the ingested production traces once first (their ClaimRead events)
    assert run(capsys, "demo", "--data-dir", str(copy))[0] == 0
    (copy / "topics-log" / "offsets" / "planner.json").write_text('{"evaluations": 4')
    code, _, err = run(capsys, "demo", "--data-dir", str(copy))
    one_line_refusal(code, err, "planner", "log repair")
    code, out, err = run(capsys, "log", "repair", "--data-dir", str(copy))
    assert code == 0 and "planner" in out, err
    code, out, err = run(capsys, "demo", "--data-dir", str(copy))
    assert code == 0, err
    assert "0 new events" in out  # the planner read its input again from offset 0 and added nothing


def test_log_commands_on_a_directory_without_a_log_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in ("verify", "repair"):
        code, _, err = run(capsys, "log", command, "--data-dir", str(tmp_path / "nowhere"))
        one_line_refusal(code, err, "no embedded log")


def _snapshot(data_dir: Path) -> dict[str, bytes]:
    """Every file of the log (topics, indexes, offsets, quarantine), by path: what a reader must not change."""
    root = data_dir / "topics-log"
    files = [p for p in sorted(root.rglob("*")) if p.is_file() and p.name != "LOCK"]
    return {str(p.relative_to(root)): p.read_bytes() for p in files}


READERS = [
    ["sql", "SELECT count() FROM spans"],
    ["export", "spans", "--format", "jsonl", "--output", "{out}/spans.jsonl"],
    ["events", "tail", "spans"],
    ["log", "verify"],
]


@pytest.mark.parametrize("argv", READERS, ids=lambda a: " ".join(a[:2]))
def test_a_file_cut_inside_its_last_committed_block_is_damage_and_readers_change_nothing(
    copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    spans = copy / "topics-log" / "topics" / "spans.avro"
    _, blocks = layout(spans)
    last = blocks[-1]
    with spans.open("r+b") as handle:  # the index lists the block: its records were acknowledged
        handle.truncate(last.end - 5)
    before = _snapshot(copy)
    code, out, err = run(capsys, *(a.format(out=tmp_path) for a in argv), "--data-dir", str(copy))
    assert _snapshot(copy) == before  # nothing moved, cut or quarantined
    assert not (copy / "topics-log" / "quarantine").exists()
    if argv[0] == "log":
        assert code == 2 and f"DAMAGED topic spans: block {len(blocks) - 1}" in out, out
        assert "never acknowledged" not in out
    else:
        one_line_refusal(code, err, "spans", f"block {len(blocks) - 1}", "log repair")
    code, out, err = run(capsys, "log", "repair", "--data-dir", str(copy))
    assert code == 0 and "quarantine" in out, err
    assert run(capsys, "log", "verify", "--data-dir", str(copy))[0] == 0


def test_readers_leave_a_torn_tail_where_it_is_and_the_next_writer_quarantines_it(
    copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spans = copy / "topics-log" / "topics" / "spans.avro"
    _, blocks = layout(spans)
    last = blocks[-1]
    data = spans.read_bytes()
    with spans.open("ab") as handle:  # half of a block no index entry lists: an append cut short
        handle.write(data[last.position : (last.position + last.end) // 2])
    before = _snapshot(copy)
    for argv in READERS[:3]:
        code, _, err = run(capsys, *(a.format(out=tmp_path) for a in argv), "--data-dir", str(copy))
        assert code == 0, (argv, err)
        assert _snapshot(copy) == before, argv
    code, out, _ = run(capsys, "log", "verify", "--data-dir", str(copy))
    assert code == 0 and "torn" in out and _snapshot(copy) == before
    assert not (copy / "topics-log" / "quarantine").exists()
    assert run(capsys, "demo", "--data-dir", str(copy))[0] == 0  # a writer: it moves the torn tail away
    assert len(list((copy / "topics-log" / "quarantine").glob("*-spans.bin"))) == 1
    assert spans.read_bytes() == data  # cut back to the end of the last whole block
    assert run(capsys, "log", "verify", "--data-dir", str(copy))[0] == 0


def _projection_of_topics(data_dir: Path) -> dict[str, list[str]]:
    """What projecting the topics as they stand gives: the event ids of each table, one per event."""
    expected: dict[str, list[str]] = {t: [] for t in TABLE_BY_EVENT.values()}
    with ReadOnlyLog(data_dir) as reader:
        for topic in reader.log.topics():
            for event in reader.read_events(topic):
                table = TABLE_BY_EVENT.get(type(event))
                if table is not None:
                    expected[table].append(event.event_id)
    return {t: sorted(ids) for t, ids in expected.items()}


def test_repair_keeps_the_cases_a_flipped_byte_did_not_touch_and_rebuild_matches_the_topics(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:

    cases = copy / "topics-log" / "topics" / "cases.avro"
    _, blocks = layout(cases)
    big = max(blocks, key=lambda b: b.count)
    assert big.count >= 10
    data = cases.read_bytes()
    spans = record_spans(data[big.body_position : big.body_position + big.body_size], big.count)
    assert spans is not None
    hit = big.count // 2
    flip(cases, big.body_position + (spans[hit][0] + spans[hit][1]) // 2)  # the middle of one case's record
    code, out, err = run(capsys, "log", "repair", "--data-dir", str(copy))
    assert code == 0, err
    assert "(1 record(s))" in out and "recorded 1 dead letter(s)" in out, out
    assert run(capsys, "log", "verify", "--data-dir", str(copy))[0] == 0
    with EmbeddedLog(copy / "topics-log", read_only=True) as log:
        kept = [r.offset for r in log.read("cases")]
    assert len(kept) == sum(b.count for b in blocks) - 1  # the other cases of the block are all there

    assert run(capsys, "rebuild", "--data-dir", str(copy))[0] == 0
    expected = _projection_of_topics(copy)
    with open_embedded(Settings(), copy) as emb:
        for table in sorted(set(TABLE_BY_EVENT.values())):
            query = f"SELECT event_id FROM {qualified(emb.warehouse, table)} ORDER BY event_id"
            assert [r[0] for r in emb.warehouse.query(query).rows] == expected[table], table
    query = "SELECT source_topic, error_class, source_offset FROM dead_letters WHERE stage = 'log-repair'"
    rows = sql(capsys, copy, query)
    assert len(rows) == 1 and rows[0][:2] == ["cases", "DAMAGED_BLOCK"]

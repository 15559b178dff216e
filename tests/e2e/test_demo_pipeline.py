"""The embedded pipeline issue's story: `agenttwin demo`, the projections, dead letters, redelivery, replay."""

from __future__ import annotations

from pathlib import Path

import fastavro
import pytest

from agenttwin.cli import main
from agenttwin.pipeline import open_embedded
from agenttwin.settings import Settings
from consumers.embedded_sink import sync
from consumers.projections import snapshot
from schemas import AVRO_DIR
from streams.embedded_log import EmbeddedLog, NewRecord
from streams.wire import SchemaStore


def sql(capsys: pytest.CaptureFixture[str], data_dir: Path, query: str) -> list[list[str]]:
    assert main(["sql", query, "--format", "csv", "--data-dir", str(data_dir)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    return [line.split(",") for line in lines[1:]]


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("demo")
    assert main(["demo", "--data-dir", str(data_dir)]) == 0
    return data_dir


def test_demo_prints_the_story(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--data-dir", str(demo_dir)]) == 0  # a second run adds nothing and prints the same
    out = capsys.readouterr().out
    assert "2 new critical failures · 1 regressed · 6 unchanged" in out
    assert "3 improved · 6 unchanged" in out
    assert "At step 2 the baseline called get_refund_policy(order_id=ORD-1001)" in out
    assert "demo:1.3.0 on refund-timeout-after-mutation: claimed SUCCESS, verified FAILURE" in out
    assert "0 new events" in out


def test_the_comparisons_view_holds_the_classifications(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = sql(
        capsys,
        demo_dir,
        "SELECT candidate_agent, classification, count() FROM v_comparisons GROUP BY ALL ORDER BY ALL",
    )
    assert rows == [
        ["demo:1.3.0", "NEW_CRITICAL_FAILURE", "2"],
        ["demo:1.3.0", "REGRESSED", "1"],
        ["demo:1.3.0", "UNCHANGED", "6"],
        ["demo:1.3.1", "IMPROVED", "3"],
        ["demo:1.3.1", "UNCHANGED", "6"],
    ]


def test_the_contradictions_view_lists_exactly_the_two_disproved_claims(
    demo_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = sql(capsys, demo_dir, "SELECT DISTINCT agent, scenario_name FROM v_contradictions ORDER BY ALL")
    assert rows == [
        ["demo:1.3.0", "refund-timeout-after-mutation"],
        ["demo:1.3.0", "refund-tool-success-lie"],
    ]
    # 1.3.0's happy path landed the refund by the wrong path: a regression, not a contradiction.
    assert sql(capsys, demo_dir, "SELECT count() FROM v_contradictions WHERE agent != 'demo:1.3.0'") == [["0"]]


def test_every_event_file_decodes_with_the_shipped_schemas(demo_dir: Path) -> None:
    store = SchemaStore.from_directory(AVRO_DIR)
    files = sorted((demo_dir / "topics-log").rglob("*.avro"))
    assert len(files) >= 10
    total = 0
    for path in files:
        with path.open("rb") as f:
            for record in fastavro.reader(f):
                store.decode(record["value"])  # raises on anything undecodable
                total += 1
    assert total > 500


def _copy_log(source: Path, target: Path, times: int) -> None:
    with EmbeddedLog(source, read_only=True) as src, EmbeddedLog(target) as dst:
        for topic in src.topics():
            records = [NewRecord(r.value, r.key, dict(r.headers)) for r in src.read(topic)]
            for _ in range(times):
                dst.append_many(topic, records)


def test_redelivering_every_event_twice_leaves_the_tables_identical(demo_dir: Path, tmp_path: Path) -> None:
    settings = Settings()
    with open_embedded(settings, demo_dir) as emb:
        before = snapshot(emb.warehouse)
    _copy_log(demo_dir / "topics-log", tmp_path / "topics-log", times=2)
    with open_embedded(settings, tmp_path) as emb:
        sync(emb.runtime, emb.warehouse)
        after = snapshot(emb.warehouse)
        stored = snapshot(emb.warehouse, final=False)
    assert sum(len(rows) for rows in before.values()) > 500
    assert after == before
    # every event was appended twice (other offsets, so other dedup tokens): the copies are the same rows,
    # which ReplacingMergeTree collapses (within an insert at once, across inserts by FINAL or a merge)
    assert {t: sorted(set(map(repr, rows))) for t, rows in stored.items()} == {
        t: sorted(map(repr, rows)) for t, rows in before.items()
    }


def test_no_table_holds_a_row_twice(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # counted without FINAL as well as with it: a duplicate that FINAL would hide shows here
    with open_embedded(Settings(), demo_dir) as emb:
        first = snapshot(emb.warehouse)
    assert main(["demo", "--data-dir", str(demo_dir)]) == 0  # a second run over the same data
    capsys.readouterr()
    with open_embedded(Settings(), demo_dir) as emb:
        final, stored = snapshot(emb.warehouse), snapshot(emb.warehouse, final=False)
    assert stored == final == first
    assert sum(len(rows) for rows in final.values()) > 500
    for table in ("comparisons", "cases", "verdicts", "contradictions"):
        with_final = sql(capsys, demo_dir, f"SELECT count() FROM {table} FINAL")
        assert sql(capsys, demo_dir, f"SELECT count() FROM {table}") == with_final


def test_a_corrupt_event_is_dead_lettered_and_the_run_completes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_embedded(Settings(), tmp_path) as emb:
        emb.runtime.append_raw("case-plans", b"\xc3\x01garbage-not-avro", key="bad")
        emb.runtime.append_raw("verdicts", b"not even the magic", key="worse")
    assert main(["demo", "--data-dir", str(tmp_path)]) == 0
    capsys.readouterr()
    rows = sql(capsys, tmp_path, "SELECT stage, source_topic, error_class FROM dead_letters FINAL ORDER BY ALL")
    assert ["simulator", "case-plans", "UNKNOWN_FINGERPRINT"] in rows
    assert ["comparator", "verdicts", "BAD_MAGIC"] in rows
    assert ["clickhouse-sink", "case-plans", "UNKNOWN_FINGERPRINT"] in rows
    counts = sql(capsys, tmp_path, "SELECT classification, count() FROM v_comparisons GROUP BY ALL ORDER BY ALL")
    assert sum(int(n) for _, n in counts) == 18  # every other event still arrived
    assert sql(capsys, tmp_path, "SELECT count() FROM comparisons") == [["18"]]  # and once: no FINAL needed
    letters = sql(capsys, tmp_path, "SELECT count() FROM dead_letters FINAL")
    assert sql(capsys, tmp_path, "SELECT count() FROM dead_letters") == letters


def test_replay_adds_a_second_set_of_verdicts_and_the_same_version_adds_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--data-dir", str(tmp_path)]
    assert (
        main(
            [
                "evaluate",
                "--baseline",
                "demo:1.2.4",
                "--candidate",
                "demo:1.3.0",
                "--suite",
                "demo-retry-rule",
                "--evaluator-version",
                "1.0.0",
                *args,
            ]
        )
        == 0
    )
    assert main(["replay", "--evaluator-version", "1.1.0", *args]) == 0
    capsys.readouterr()
    query = (
        "SELECT agent_version, evaluator_version, status FROM v_expectation_results "
        "WHERE expectation_id = 'no-retries' ORDER BY ALL"
    )
    expected = [
        ["1.2.4", "1.0.0", "FAIL"],  # the confirming re-read counted as a retry
        ["1.2.4", "1.1.0", "PASS"],  # the shared retry rule: a re-read after success is not a retry
        ["1.3.0", "1.0.0", "FAIL"],
        ["1.3.0", "1.1.0", "FAIL"],  # the blind retry of the failed refund counts under both
    ]
    assert sql(capsys, tmp_path, query) == expected
    assert main(["replay", "--evaluator-version", "1.1.0", *args]) == 0
    assert "0 new events" in capsys.readouterr().out
    assert sql(capsys, tmp_path, query) == expected
    verdicts = sql(capsys, tmp_path, "SELECT evaluator_version, count() FROM verdicts FINAL GROUP BY ALL ORDER BY ALL")
    assert verdicts == [["1.0.0", "2"], ["1.1.0", "2"]]
    stored = sql(capsys, tmp_path, "SELECT evaluator_version, count() FROM verdicts GROUP BY ALL ORDER BY ALL")
    assert stored == verdicts  # the second replay added no row, not even one FINAL would hide


def test_a_reviewer_flipping_the_semantic_fail_leaves_the_case_a_new_critical_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--data-dir", str(tmp_path)]
    assert main(["evaluate", "--baseline", "demo:1.2.4", "--candidate", "demo:1.3.0", "--json", *args]) == 0
    evaluation_id = __import__("json").loads(capsys.readouterr().out)["evaluation_id"]
    review = [
        "review",
        "--evaluation-id",
        evaluation_id,
        "--scenario",
        "refund-tool-success-lie",
        "--side",
        "candidate",
        "--expectation",
        "reply-admits-unconfirmed-refund",
        "--status",
        "pass",
        "--reviewer",
        "ana",
    ]
    assert main([*review, "--note", "  ", *args]) == 2  # a note is mandatory
    assert "note" in capsys.readouterr().err
    assert main([*review, "--note", "Wording is fine", *args]) == 0
    assert "NEW_CRITICAL_FAILURE" in capsys.readouterr().out
    rows = sql(
        capsys,
        tmp_path,
        "SELECT scenario_name, classification FROM v_comparisons WHERE scenario_name = 'refund-tool-success-lie'",
    )
    assert rows == [["refund-tool-success-lie", "NEW_CRITICAL_FAILURE"]]
    assert sql(capsys, tmp_path, "SELECT reviewer, status FROM reviews FINAL") == [["ana", "PASS"]]
    assert sql(capsys, tmp_path, "SELECT reviewer, status FROM reviews") == [["ana", "PASS"]]

"""The integration tests' broker support wipes a local broker's data only when it holds nothing but tests'."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.kafka_broker import holds_only_earlier_test_runs, unique_name, untagged_topics


def _partitions(root: Path, *names: str) -> Path:
    for name in names:
        (root / name).mkdir(parents=True)
    root.mkdir(parents=True, exist_ok=True)
    (root / "meta.properties").write_text("node.id=1\n")  # files are not partitions
    return root


@pytest.mark.parametrize(
    ("names", "wiped"),
    [
        (("__consumer_offsets-0", "__cluster_metadata-0", "kt-1cd4a13d-2787-24.spans-0"), True),
        ((f"{unique_name('kt')}.case-plans-3", f"{unique_name('it-broker')}-0"), True),
        # a topic of anyone else (the demo on Kafka, a user's): the data is kept
        (("kt-1cd4a13d-2787-24.spans-0", "agenttwin.spans-0"), False),
        (("__consumer_offsets-0",), False),  # nothing of the tests: nothing to gain
        ((), False),
    ],
)
def test_only_a_broker_holding_nothing_but_test_topics_is_wiped(
    tmp_path: Path, names: tuple[str, ...], wiped: bool
) -> None:
    assert holds_only_earlier_test_runs(_partitions(tmp_path / "logs", *names)) is wiped


def test_a_missing_data_directory_is_not_wiped(tmp_path: Path) -> None:
    assert holds_only_earlier_test_runs(tmp_path / "absent") is False


def test_topics_the_tests_create_without_a_run_tag_are_named() -> None:
    before = frozenset({"__consumer_offsets", "someone.spans"})
    after = before | {
        f"{unique_name('concurrent')}.spans",
        unique_name("batch-sender"),
        "__transaction_state",
        "agenttwin.spans",  # the CLI's default prefix: a later run could not tell it from a person's
        "batch-sender-1a2b3c4d",
    }
    assert untagged_topics(before, after) == ["agenttwin.spans", "batch-sender-1a2b3c4d"]

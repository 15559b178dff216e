"""One writer, many readers: a webhook beside the process that writes the data directory keeps its progress
and dead letters in its own consumer log; the writer adopts the dead letters, once each; events read
read-only."""

from __future__ import annotations

from pathlib import Path

import pytest

from consumers.webhook import UNDELIVERABLE, WebhookSender, webhook_beside_writer
from streams._log_support import LogLockedError
from streams.embedded import EmbeddedRuntime
from streams.events import DeadLettered
from streams.log_reader import ReadOnlyLog, adopt_dead_letters, consumer_dir
from tests.unit.traces.test_traces_alerts import _contradiction, _Hook, _hook, hook_factory

__all__ = ["hook_factory"]  # the fixture, shared with the alerts tests


def test_a_webhook_beside_the_writer_delivers_once_and_keeps_its_progress(
    runtime: EmbeddedRuntime, tmp_path: Path, hook_factory: list[_Hook]
) -> None:
    data = tmp_path / "data"
    alert = _contradiction(runtime)  # the writer (this runtime) holds the lock throughout
    hook = _hook(hook_factory, [])
    stats = webhook_beside_writer(data, WebhookSender(hook.url, sleep=lambda _: None))
    assert (stats.delivered, stats.dead_lettered) == (1, 0) and hook.keys == [alert.alert_id]
    assert webhook_beside_writer(data, WebhookSender(hook.url)).delivered == 0  # its own offset moved
    assert runtime.log.committed("alerts-webhook", "contradictions") == 0  # the writer's offsets untouched


def test_it_starts_after_the_groups_offset_in_the_writers_log(
    runtime: EmbeddedRuntime, tmp_path: Path, hook_factory: list[_Hook]
) -> None:
    _contradiction(runtime)
    runtime.log.commit("alerts-webhook", "contradictions", 1)  # delivered earlier, by a webhook in writer mode
    hook = _hook(hook_factory, [])
    assert webhook_beside_writer(tmp_path / "data", WebhookSender(hook.url)).delivered == 0


def test_its_dead_letters_are_adopted_by_the_writer_once(
    runtime: EmbeddedRuntime, tmp_path: Path, hook_factory: list[_Hook]
) -> None:
    data = tmp_path / "data"
    _contradiction(runtime)
    runtime.append_raw("contradictions", b"\x00not an event", key="k")
    hook = _hook(hook_factory, [500] * 10)
    stats = webhook_beside_writer(data, WebhookSender(hook.url, attempts=2, sleep=lambda _: None))
    assert stats.dead_lettered == 2
    with ReadOnlyLog(consumer_dir(data, "webhook-alerts-webhook")) as side:
        letters = [side.decode(r) for r in side.log.read("dead-letters")]
    assert len(letters) == 2 and UNDELIVERABLE in {getattr(letter, "error_class", None) for letter in letters}
    assert "dead-letters" not in runtime.log.topics()
    assert adopt_dead_letters(runtime) == 2
    assert adopt_dead_letters(runtime) == 0  # once each
    adopted = [e for e in runtime.read_events("dead-letters") if isinstance(e, DeadLettered)]
    assert sorted(e.stage for e in adopted) == ["webhook", "webhook"]


def test_one_webhook_per_group_beside_the_writer(
    runtime: EmbeddedRuntime, tmp_path: Path, hook_factory: list[_Hook]
) -> None:
    data = tmp_path / "data"
    other = EmbeddedRuntime(consumer_dir(data, "webhook-alerts-webhook"))  # another webhook of the group runs
    with other, pytest.raises(LogLockedError):
        webhook_beside_writer(data, WebhookSender(_hook(hook_factory, []).url))
    assert webhook_beside_writer(data, WebhookSender(_hook(hook_factory, []).url), group="other").delivered == 0


def test_a_reader_sees_what_the_writer_appends_after_it_opened(runtime: EmbeddedRuntime, tmp_path: Path) -> None:
    with ReadOnlyLog(tmp_path / "data") as reader:
        assert "contradictions" not in reader.log.topics()
        _contradiction(runtime)
        (record,) = list(reader.log.read("contradictions"))
        assert reader.decode(record).event_type == "ContradictionDetected"


def test_readers_take_free_slots_and_wait_when_all_are_busy(tmp_path: Path) -> None:
    from consumers.reader_sink import READER_SLOTS, ReadersBusy, reader_slot

    with reader_slot(tmp_path) as first, reader_slot(tmp_path) as second:
        assert (first.number, second.number) == (0, 1)
        assert first.directory != second.directory and first.directory.is_dir()
        (first.directory / "kept").write_text("x")
    held = []
    for _ in range(READER_SLOTS):
        held.append(reader_slot(tmp_path))
        held[-1].__enter__()
    with pytest.raises(ReadersBusy), reader_slot(tmp_path, wait_s=0.3, poll_s=0.05):
        pass
    for slot in held:
        slot.__exit__(None, None, None)
    with reader_slot(tmp_path) as again:
        assert again.number == 0 and (again.directory / "kept").read_text() == "x"  # a copy is kept for the next

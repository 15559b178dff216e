"""The live outcome join's state beyond its memory budget is on disk (its checkpoint), and that changes no
output: closing, eviction and late events give the same alerts byte for byte as a join holding everything
in a dict; a restarted join resumes from its checkpoint instead of reading the log from offset 0."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from producers.otlp.live import LiveProcessor
from producers.otlp.mapping import map_request
from producers.otlp.publishing import GroupCommitPublisher
from producers.sdk.outcome import outcome_event
from streams.embedded import EmbeddedRuntime
from streams.events import Event
from streams.processors.outcome_join import OutcomeJoin
from tests.unit.traces.conftest import agent_trace

T0 = datetime(2026, 1, 1, 0, 0, tzinfo=UTC)
HORIZON = timedelta(minutes=1)
BUDGET = 4  # store keys kept in memory: far fewer than the traces in flight
OUTPUTS = ("contradictions", "claims")


def _ids(n: int) -> tuple[bytes, bytes, bytes]:
    digest = hashlib.sha256(f"state-{n}".encode()).digest()
    return digest[:16], digest[16:24], digest[24:32]


def _spans(n: int, seconds: int) -> list[Event]:
    body = agent_trace(*_ids(n))
    return list(map_request(body, "acme", received_at=T0 + timedelta(seconds=seconds)).events)


def _failure(n: int, seconds: int) -> Event:
    at = T0 + timedelta(seconds=seconds)
    return outcome_event(_ids(n)[0].hex(), "FAILURE", True, "tool_result", "refunds: 2", tenant="acme", at=at)


# (events, then a step) in order: verified in time, one-sided past the horizon (closed), verified late
# (a closed entry still alerts), past horizon + retention (evicted), a verification after the eviction
# (a new entry, reported without a claim), and traffic that runs every timer out.
PHASES: list[Callable[[], list[Event]]] = [
    lambda: [e for n in range(30) for e in _spans(n, 0)],
    lambda: [_failure(n, 10) for n in range(10)],
    lambda: [e for n in range(30, 40) for e in _spans(n, 70)],
    lambda: [_failure(n, 80) for n in range(10, 15)],
    lambda: [e for n in range(40, 50) for e in _spans(n, 200)],
    lambda: [_failure(15, 210)],
    lambda: [e for n in range(50, 52) for e in _spans(n, 500)],
]


def _outputs(runtime: EmbeddedRuntime) -> dict[str, list[bytes]]:
    return {t: sorted(r.value for r in runtime.log.read(t)) if t in runtime.log.topics() else [] for t in OUTPUTS}


def _run(data: Path, phases: list[Callable[[], list[Event]]], *, checkpoints: bool) -> dict[str, list[bytes]]:
    with EmbeddedRuntime(data, fsync=False, checkpoints=checkpoints) as runtime, GroupCommitPublisher(runtime) as pub:
        live = LiveProcessor(runtime, OutcomeJoin(horizon=HORIZON), pub, state_budget=BUDGET, commit_every_s=0)
        for phase in phases:
            pub.publish(phase())
            live.step()
            if checkpoints:
                assert live.checkpoint is not None
                assert live.checkpoint.in_memory <= BUDGET
        live.close()
        return _outputs(runtime)


def test_state_past_the_budget_is_on_disk_and_answers_alike(tmp_path: Path) -> None:
    in_dict = _run(tmp_path / "dict", PHASES, checkpoints=False)
    kinds = {"contradiction", "claim_never_verified", "verification_without_claim"}
    with EmbeddedRuntime(tmp_path / "dict", fsync=False) as runtime:
        seen = {getattr(e, "kind", None) for e in runtime.read_events("contradictions")}
    assert kinds <= seen  # the scenario reaches closing, late verification and eviction
    with EmbeddedRuntime(tmp_path / "disk", fsync=False) as runtime, GroupCommitPublisher(runtime) as pub:
        live = LiveProcessor(runtime, OutcomeJoin(horizon=HORIZON), pub, state_budget=BUDGET, commit_every_s=0)
        pub.publish(PHASES[0]())
        live.step()
        assert live.checkpoint is not None and live.checkpoint.in_memory <= BUDGET
        assert sum(1 for key in live.checkpoint if "|" in key and not key.startswith("\x00")) == 30  # on disk
        live.close()
    assert _run(tmp_path / "disk2", PHASES, checkpoints=True) == in_dict  # byte for byte


def test_a_restarted_join_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    reference = _run(tmp_path / "once", PHASES, checkpoints=False)
    data = tmp_path / "restarted"
    with EmbeddedRuntime(data, fsync=False) as runtime, GroupCommitPublisher(runtime) as pub:
        live = LiveProcessor(runtime, OutcomeJoin(horizon=HORIZON), pub, state_budget=BUDGET)
        for phase in PHASES[:3]:
            pub.publish(phase())
            live.step()
        ends = {t: runtime.log.end_offset(t) for t in OutcomeJoin.inputs}
        live.close()
    with EmbeddedRuntime(data, fsync=False) as runtime, GroupCommitPublisher(runtime) as pub:
        live = LiveProcessor(runtime, OutcomeJoin(horizon=HORIZON), pub, state_budget=BUDGET)
        assert live.cursors == ends  # not offset 0: nothing is read again
        assert live.step() == 0
        for phase in PHASES[3:]:
            pub.publish(phase())
            live.step()
        live.close()
        assert _outputs(runtime) == reference

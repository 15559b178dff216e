"""Two outcome-join worker processes share the partitions of their inputs; one is killed with SIGKILL mid-run.

Not timed. The claims go first and are handled by both members (each holds some partitions, and the claims
it handled are only in its changelog partitions); then the verifications flow, and one member is killed while
it works on them. The survivor takes its partitions with their state (the changelog) and redoes its open
batch: every trace must end with exactly one contradiction alert on `contradictions`, none lost, none
doubled (read_committed, as the sink and the alerts tail read it).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined, unused-ignore]

from producers.sdk.outcome import outcome_event
from streams.clock import wall_clock
from streams.events import ContradictionDetected, Event
from streams.kafka.clients import ensure_topics
from streams.kafka.naming import Naming
from streams.kafka.publisher import KafkaPublisher
from streams.kafka.reading import group_lag, read_all
from streams.topics import TOPIC_BY_NAME
from tests.claim_spans import agent_claim_span
from tests.integration.kafka.kafka_pipeline_support import new_naming
from tests.integration.kafka.worker_processes import WorkerProcess

TRACES = 240
WAIT_S = 180.0
INPUTS = {"outcome-join": ("spans", "verified-outcomes")}


def _members(bootstrap: str, naming: Naming) -> list[set[int]]:
    """The input partitions each member of the outcome-join group holds (the same of both inputs: asserted)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    group = naming.group("outcome-join")
    (description,) = (f.result(timeout=30) for f in admin.describe_consumer_groups([group]).values())
    spans = naming.topic("spans")
    return [{tp.partition for tp in m.assignment.topic_partitions if tp.topic == spans} for m in description.members]


def _alerts(bootstrap: str, naming: Naming) -> Counter[str]:
    """Contradiction alerts by trace id, every message counted."""
    return Counter(
        e.trace_id
        for e in read_all(bootstrap, naming, ["contradictions"])
        if isinstance(e, ContradictionDetected) and e.kind == "contradiction"
    )


def _until(condition: object, what: str, workers: list[WorkerProcess], timeout_s: float = WAIT_S) -> None:
    assert callable(condition)
    deadline = time.monotonic() + timeout_s
    while not condition():
        for w in workers:
            w.check()
        assert time.monotonic() < deadline, f"{what} not within {timeout_s:.0f} s; see {[str(w.log) for w in workers]}"
        time.sleep(0.3)


@pytest.mark.kafka
def test_two_workers_share_the_partitions_and_a_killed_one_loses_and_doubles_no_alert(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    naming = new_naming()
    ensure_topics(kafka_bootstrap, naming)
    at = wall_clock()
    traces = [f"{n + 1:032x}" for n in range(TRACES)]
    claims: list[Event] = [agent_claim_span(t, at, event_id=f"claim-{t}", status="success") for t in traces]
    verifications: list[Event] = [
        outcome_event(t, "FAILURE", True, "external_callback", "refunded twice", tenant="acme", at=at) for t in traces
    ]
    workers = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        workers.append(WorkerProcess(kafka_bootstrap, naming, tmp_path / name, "outcome-join", label=name))
    a = workers[0]
    try:
        for w in workers:
            w.start()
        partitions = TOPIC_BY_NAME["spans"].partitions
        _until(
            lambda: sorted(len(m) for m in _members(kafka_bootstrap, naming)) == [partitions // 2] * 2,
            "both members holding half of the partitions",
            workers,
        )
        with KafkaPublisher(kafka_bootstrap, naming) as publisher:
            publisher.publish(claims)
            _until(lambda: not group_lag(kafka_bootstrap, naming, INPUTS)["outcome-join"], "claims handled", workers)
            held = _members(kafka_bootstrap, naming)
            assert all(held) and set().union(*held) == set(range(partitions)), held
            half = len(verifications) // 2
            publisher.publish(verifications[:half])
            _until(lambda: sum(_alerts(kafka_bootstrap, naming).values()) > 0, "the first alerts", workers)
            a.kill()  # mid-run: no shutdown, its open transaction (if any) left to the broker
            publisher.publish(verifications[half:])
        alive = workers[1:]
        _until(lambda: len(_alerts(kafka_bootstrap, naming)) >= TRACES, "an alert for every trace", alive)
        _until(lambda: not group_lag(kafka_bootstrap, naming, INPUTS)["outcome-join"], "lag 0", alive)
        assert [len(m) for m in _members(kafka_bootstrap, naming)] == [partitions]  # b holds every partition
        alerts = _alerts(kafka_bootstrap, naming)
        assert set(alerts) == set(traces)
        assert [t for t, n in alerts.items() if n > 1] == []
    finally:
        for w in workers:
            w.stop()

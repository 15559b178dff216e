"""The transactional loops' defences against a librdkafka call that never returns (streams/kafka/transactions.py)."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import KafkaError, KafkaException

from streams.kafka import transactions
from streams.kafka.transactions import ClusterWatch, bounded


def test_a_call_that_never_returns_is_abandoned_as_a_fatal_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transactions, "GRACE_S", 0.0)
    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(KafkaException) as caught:
        bounded(0.2, release.wait)  # blocks until released: the librdkafka#5456 hang
    release.set()
    err: KafkaError = caught.value.args[0]
    assert err.code() == KafkaError._TIMED_OUT and err.fatal()  # fatal: the caller replaces the producer
    assert "wait did not return" in err.str()
    assert time.monotonic() - started < 5.0


def test_a_call_that_returns_or_fails_in_time_is_passed_through() -> None:
    assert bounded(1.0, max, 2, 3) == 3
    broken = KafkaException(KafkaError(KafkaError._STATE, "no transaction"))

    def fails() -> None:
        raise broken

    with pytest.raises(KafkaException) as caught:
        bounded(1.0, fails)
    assert caught.value is broken


def test_the_cluster_watch_remembers_an_outage_until_taken() -> None:
    watch = ClusterWatch()
    assert not watch.take()
    watch.on_error(KafkaError(KafkaError._MSG_TIMED_OUT))  # not an outage
    assert not watch.take()
    watch.on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN))
    watch.on_error(KafkaError(KafkaError._TRANSPORT))
    assert watch.take()
    assert not watch.take()

"""The e2e tier exercises the embedded default: a Kafka cluster in the environment must not redirect it."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _embedded_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    monkeypatch.delenv("AGENTTWIN_CLICKHOUSE_URL", raising=False)

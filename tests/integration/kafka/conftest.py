"""Fixtures of the Kafka runtime tests: a real broker (session), one chDB directory, the embedded reference."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.kafka.kafka_pipeline_support import Reference, embedded_reference, subjects_reference
from tests.integration.kafka_broker import broker_bootstrap, release_broker
from tests.integration.schema_registry import registry_url, release_registry


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    bootstrap = broker_bootstrap()
    yield bootstrap
    release_broker()


@pytest.fixture(scope="session")
def schema_registry() -> Iterator[str]:
    """A real Confluent-compatible schema registry (Apicurio Registry from infra/registry unless given)."""
    yield registry_url()
    release_registry()


@pytest.fixture(scope="session")
def chdb_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """chDB binds one directory per process: every test isolates itself by database name in this one."""
    return tmp_path_factory.mktemp("kafka-chdb")


@pytest.fixture(scope="session")
def reference(chdb_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """The demo (1.3.0 vs 1.2.4, 1.3.1 vs 1.3.0, seed 42) through the embedded runtime, evaluator 1.1.0."""
    return embedded_reference(chdb_root, tmp_path_factory.mktemp("embedded"), ("1.1.0",), "ref_1_1_0")


@pytest.fixture(scope="session")
def subjects(chdb_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """Twelve traces linked to orders, then verified by order, through the embedded subject join."""
    return subjects_reference(chdb_root, tmp_path_factory.mktemp("embedded-subjects"), "ref_subjects")


@pytest.fixture(scope="session")
def reference_two_versions(chdb_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """The same demo requested under evaluator 1.0.0, graded and compared under 1.0.0 and 1.1.0."""
    return embedded_reference(
        chdb_root, tmp_path_factory.mktemp("embedded2"), ("1.0.0", "1.1.0"), "ref_two", request_version="1.0.0"
    )

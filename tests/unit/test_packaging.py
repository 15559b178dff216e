"""Every package folder is listed in pyproject.toml, so a wheel (not only an editable install) has it all."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOP = ("agenttwin", "twin_engine", "evaluation", "producers", "streams", "consumers", "schemas")


def test_every_package_is_listed() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for top in TOP
        for p in (ROOT / top).rglob("__init__.py")
    }
    assert found == listed


def test_pure_layers_import_no_broker_or_warehouse_client() -> None:
    banned = ("confluent_kafka", "faust", "aiokafka", "chdb", "clickhouse_connect")
    # the processors are pure steps too: the embedded runtime and the Kafka workers run the same code
    for layer in ("twin_engine", "evaluation", "streams/processors"):
        for path in (ROOT / layer).rglob("*.py"):
            text = path.read_text()
            for name in banned:
                assert f"import {name}" not in text and f"from {name}" not in text, f"{path} imports {name}"

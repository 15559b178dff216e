"""Fixtures for the twin-over-MCP tests: the demo twin, a twin endpoint with its MCP server, a case factory."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agenttwin.demo import TWIN_FILE
from producers.twin_http import TwinEndpoint
from producers.twin_mcp import TwinMcpServer
from twin_engine.case import TwinCase
from twin_engine.case import new_case as fresh_case
from twin_engine.documents import load_twin
from twin_engine.twin import ScenarioConfig, Twin


@pytest.fixture(scope="session")
def demo_twin() -> Twin:
    return load_twin(TWIN_FILE)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[TwinEndpoint]:
    with TwinEndpoint(max_calls_per_case=12) as ep:
        yield ep


@pytest.fixture(scope="module")
def mcp_server(endpoint: TwinEndpoint) -> Iterator[TwinMcpServer]:
    with TwinMcpServer(endpoint) as server:
        yield server


def new_case(twin: Twin, faults: list[dict[str, Any]] | None = None, **spec: Any) -> TwinCase:
    doc = {"metadata": {"name": "mcp-test"}, "spec": {"input": {"message": "hi"}, "faults": faults or [], **spec}}
    return fresh_case(twin, scenario=ScenarioConfig.from_scenario(doc), seed=7, tenant="demo-co")

"""Fixtures for the HTTP agent tests: the demo twin, an endpoint, and a tiny stdlib HTTP caller."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest

from agenttwin.demo import TWIN_FILE
from producers.twin_http import TwinEndpoint
from twin_engine.documents import load_twin
from twin_engine.twin import ScenarioConfig, Twin


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    raw: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.raw)


class StdlibCaller:
    """What a minimal agent does: http.client, one connection per call, a bounded timeout."""

    def __init__(self, base_url: str, token: str | None) -> None:
        parts = urlsplit(base_url)
        self.host, self.port, self.prefix = parts.hostname or "", parts.port or 80, parts.path
        self.token = token

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> Answer:
        sent = dict(headers or {})
        if self.token is not None:
            sent.setdefault("Authorization", f"Bearer {self.token}")
        conn = http.client.HTTPConnection(self.host, self.port, timeout=5)
        try:
            conn.request(method, self.prefix + path, body=body, headers=sent)
            response = conn.getresponse()
            return Answer(response.status, dict(response.getheaders()), response.read())
        finally:
            conn.close()

    def tool(self, name: str, arguments: Any, headers: dict[str, str] | None = None) -> Answer:
        return self.request("POST", f"/tools/{name}", json.dumps(arguments).encode(), headers)


@pytest.fixture(scope="session")
def demo_twin() -> Twin:
    return load_twin(TWIN_FILE)


def faults_scenario(faults: list[dict[str, Any]]) -> ScenarioConfig:
    doc = {
        "metadata": {"name": "inline"},
        "spec": {"input": {"message": "x", "context": {"tenant": "demo-co"}}, "faults": faults},
    }
    return ScenarioConfig.from_scenario(doc)


@pytest.fixture(scope="session")
def make_scenario() -> Any:
    return faults_scenario


@pytest.fixture
def endpoint() -> Iterator[TwinEndpoint]:
    with TwinEndpoint(max_calls_per_case=20, max_fault_delay_ms=2000) as served:
        yield served


@pytest.fixture
def caller() -> Any:
    return StdlibCaller


def inline_twin(tools: dict[str, Any], initial: dict[str, Any] | None = None) -> Twin:
    doc = {
        "apiVersion": "agenttwin.dev/v1",
        "kind": "TwinDefinition",
        "metadata": {"name": "inline"},
        "spec": {"tools": tools, "initialState": initial or {}},
    }
    return Twin.from_definition(doc)


@pytest.fixture(scope="session")
def make_twin() -> Any:
    return inline_twin

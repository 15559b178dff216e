from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from twin_engine import ScenarioConfig, Twin

DEMO = Path("/work/shared/reference/agenttwin-demo/assurance")


def load_yaml(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.fixture(scope="session")
def demo_doc() -> dict[str, Any]:
    doc = load_yaml(DEMO / "twin.yaml")
    assert isinstance(doc, dict)
    return doc


@pytest.fixture(scope="session")
def demo_twin(demo_doc: dict[str, Any]) -> Twin:
    return Twin.from_definition(demo_doc)


@pytest.fixture(scope="session")
def scenario_docs() -> dict[str, dict[str, Any]]:
    return {p.stem: load_yaml(p) for p in sorted((DEMO / "scenarios").glob("*.yaml"))}


def scenario_with_faults(faults: list[dict[str, Any]], **spec: Any) -> ScenarioConfig:
    """A scenario config built from a minimal scenario.v1 document."""
    doc = {
        "metadata": {"name": "inline"},
        "spec": {"input": {"message": "x", "context": {"tenant": "demo-co"}}, "faults": faults, **spec},
    }
    return ScenarioConfig.from_scenario(doc)


def inline_twin(tools: dict[str, Any], initial: dict[str, Any] | None = None, **spec: Any) -> Twin:
    doc = {
        "apiVersion": "agenttwin.dev/v1",
        "kind": "TwinDefinition",
        "metadata": {"name": "inline"},
        "spec": {"tools": tools, "initialState": initial or {}, **spec},
    }
    return Twin.from_definition(doc)


@pytest.fixture(scope="session")
def make_twin() -> Any:
    return inline_twin


@pytest.fixture(scope="session")
def make_scenario() -> Any:
    return scenario_with_faults

"""Packaged worlds: Demo Co (agenttwin.demo) and the airline (agenttwin.worlds.airline).

A world is a twin, a named suite of scenarios and, for `agenttwin evaluate --world NAME`, the default pair
of agents to compare.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agenttwin.demo import TWIN_FILE as DEMO_TWIN_FILE
from agenttwin.worlds.airline import TWIN_FILE as AIRLINE_TWIN_FILE


@dataclass(frozen=True)
class World:
    name: str
    twin_file: Path
    suite: str  # a named suite (agenttwin.demo.NAMED_SUITES)
    baseline: str | None = None  # default agents of `evaluate --world NAME`
    candidate: str | None = None


WORLDS = {
    "demo": World("demo", DEMO_TWIN_FILE, "demo"),
    "airline": World("airline", AIRLINE_TWIN_FILE, "airline", "airline:careful", "airline:careless"),
}

__all__ = ["WORLDS", "World"]

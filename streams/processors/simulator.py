"""Simulator: a case plan -> the twin's records, the agent's spans and the finished case."""

from __future__ import annotations

import json

from producers.agents.contract import Agent
from producers.agents.registry import resolve_agent
from producers.case_spans import case_spans
from producers.simulator import close_agent, simulate_case
from streams.convert import case_events
from streams.events import CasePlanned, Event
from streams.processors.base import Processor, Store
from twin_engine.documents import Scenario, scenario_from_text
from twin_engine.twin import Twin


class Simulator(Processor):
    inputs = ("case-plans",)

    def __init__(self) -> None:
        # Parsing caches only (by content hash / spec): never part of the processor's state.
        self._twins: dict[str, Twin] = {}
        self._scenarios: dict[str, Scenario] = {}
        self._agents: dict[str, Agent] = {}

    @property
    def name(self) -> str:
        return "simulator"

    def close(self) -> None:
        for agent in self._agents.values():
            close_agent(agent)
        self._agents.clear()

    def handle(self, store: Store, event: Event) -> list[Event]:
        if not isinstance(event, CasePlanned) or store.get(event.case_id):
            return []
        twin = self._twins.get(event.twin_hash)
        if twin is None:
            twin = self._twins[event.twin_hash] = Twin.from_definition(json.loads(event.twin_json))
        scenario = self._scenarios.get(event.scenario_hash)
        if scenario is None:
            scenario = scenario_from_text(event.scenario_json, f"{event.case_id}/scenario", twin)
            self._scenarios[event.scenario_hash] = scenario
        agent = self._agents.get(event.agent)
        if agent is None:
            agent = self._agents[event.agent] = resolve_agent(event.agent)
        case = simulate_case(
            agent, scenario, twin, case_seed=event.case_seed, case_id=event.case_id, agent_spec=event.agent
        )
        store[event.case_id] = True
        out: list[Event] = list(case_events(case, evaluation_id=event.evaluation_id, side=event.side))
        out.extend(case_spans(case, evaluation_id=event.evaluation_id))
        return out

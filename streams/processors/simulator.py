"""Simulator: a case plan -> the twin's records, the agent's spans and the finished case.

With `concurrency` > 1 the cases of a chunk of plans (Processor.prefetch) are simulated on that many
threads, each with its own agent instance; their events are still emitted one plan at a time, in the
plans' order, so the topics hold the same bytes as a serial run. Agents behind HTTP or a model spend
their time waiting, which is what the threads overlap.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from evaluation.case import CaseRun
from producers.agents.contract import Agent
from producers.agents.registry import close_agent, resolve_agent
from producers.case_spans import case_spans
from producers.simulator import simulate_case
from streams.convert import case_events
from streams.events import CasePlanned, Event
from streams.processors.base import Processor, Store
from twin_engine.documents import Scenario, scenario_from_text
from twin_engine.twin import Twin


class Simulator(Processor):
    inputs = ("case-plans",)

    def __init__(self, concurrency: int = 1) -> None:
        # Parsing caches only (by content hash / spec): never part of the processor's state.
        self._twins: dict[str, Twin] = {}
        self._scenarios: dict[str, Scenario] = {}
        self._agents: dict[str, Agent] = {}
        self.concurrency = max(1, concurrency)
        self._pool: ThreadPoolExecutor | None = None
        self._local = threading.local()
        self._thread_agents: list[Agent] = []
        self._lock = threading.Lock()
        self._ready: dict[str, Future[CaseRun]] = {}

    @property
    def name(self) -> str:
        return "simulator"

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._ready.clear()
        for agent in [*self._agents.values(), *self._thread_agents]:
            close_agent(agent)
        self._agents.clear()
        self._thread_agents.clear()

    def _world(self, event: CasePlanned) -> tuple[Twin, Scenario]:
        twin = self._twins.get(event.twin_hash)
        if twin is None:
            twin = self._twins[event.twin_hash] = Twin.from_definition(json.loads(event.twin_json))
        scenario = self._scenarios.get(event.scenario_hash)
        if scenario is None:
            scenario = scenario_from_text(event.scenario_json, f"{event.case_id}/scenario", twin)
            self._scenarios[event.scenario_hash] = scenario
        return twin, scenario

    def _thread_agent(self, spec: str) -> Agent:
        agents: dict[str, Agent] = self._local.__dict__.setdefault("agents", {})
        agent = agents.get(spec)
        if agent is None:
            agent = agents[spec] = resolve_agent(spec)
            with self._lock:
                self._thread_agents.append(agent)
        return agent

    def _simulate(self, event: CasePlanned, twin: Twin, scenario: Scenario, agent: Agent) -> CaseRun:
        return simulate_case(
            agent, scenario, twin, case_seed=event.case_seed, case_id=event.case_id, agent_spec=event.agent
        )

    def _simulate_on_thread(self, event: CasePlanned, twin: Twin, scenario: Scenario) -> CaseRun:
        return self._simulate(event, twin, scenario, self._thread_agent(event.agent))

    def prefetch(self, events: Sequence[Event]) -> None:
        if self.concurrency == 1:
            return
        plans = [e for e in events if isinstance(e, CasePlanned) and e.case_id not in self._ready]
        if len(plans) < 2:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="agenttwin-simulator")
        for plan in plans:
            try:
                twin, scenario = self._world(plan)  # parsed here, once; handle() reports a bad plan itself
            except Exception:  # noqa: S112 - the same error is raised again by handle() and dead-lettered there
                continue
            self._ready[plan.case_id] = self._pool.submit(self._simulate_on_thread, plan, twin, scenario)

    def handle(self, store: Store, event: Event) -> list[Event]:
        if not isinstance(event, CasePlanned):
            return []
        ready = self._ready.pop(event.case_id, None)
        if store.get(event.case_id):
            return []
        if ready is not None:
            case = ready.result()  # an error raises here, exactly as a serial run would
        else:
            twin, scenario = self._world(event)
            agent = self._agents.get(event.agent)
            if agent is None:
                agent = self._agents[event.agent] = resolve_agent(event.agent)
            case = self._simulate(event, twin, scenario, agent)
        store[event.case_id] = True
        out: list[Event] = list(case_events(case, evaluation_id=event.evaluation_id, side=event.side))
        out.extend(case_spans(case, evaluation_id=event.evaluation_id))
        return out

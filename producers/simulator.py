"""Run agents against twin cases: one scenario -> one CaseRun (evidence + claims), or a whole suite.

The simulator is the boundary that keeps a batch alive: an agent that raises becomes a CaseRun with
an agent finding, never a crashed run. Everything except `timings` is a pure function of the agent,
scenario, twin and seed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from evaluation.case import AgentFinding, CaseRun, TurnRecord
from producers.agents.claims import read_result
from producers.agents.contract import Agent, AgentRequest, AgentResult, AgentRunError, ToolSpec
from producers.agents.registry import close_agent, resolve_agent
from producers.agents.user_sim import user_for
from producers.conversation_run import run_conversation
from producers.tool_client import InProcessToolClient
from twin_engine.case import new_case
from twin_engine.documents import Scenario
from twin_engine.faults import case_seed as derive_case_seed
from twin_engine.reference import with_reference_targets
from twin_engine.twin import ScenarioConfig, Twin

JSON = Any
AGENT_ERROR = "AGENT_ERROR"
AGENT_TIMEOUT = "AGENT_TIMEOUT"
# Context keys the twin consumes itself; the agent gets the rest as extra context (spec §5.3).
_TWIN_CONTEXT_KEYS = ("tenant", "now")


def case_id_for(run_id: str, scenario_name: str) -> str:
    return f"{run_id}:{scenario_name}"


def visible_tools(twin: Twin, scenario: Scenario) -> tuple[ToolSpec, ...]:
    """The twin's tools, narrowed to the scenario's allowedTools when it names any."""
    specs = twin.tool_specs()
    if not scenario.allowed_tools:
        return specs
    allowed = set(scenario.allowed_tools)
    return tuple(spec for spec in specs if spec.name in allowed)


def simulate_case(
    agent: Agent, scenario: Scenario, twin: Twin, *, case_seed: int, case_id: str, agent_spec: str
) -> CaseRun:
    context = dict(scenario.context)
    tenant = context.get("tenant")
    customer_id = context.get("customer_id")
    config = ScenarioConfig.from_scenario(scenario.raw)
    twin_case = new_case(twin, scenario=config, seed=case_seed, tenant=str(tenant) if tenant is not None else None)
    request = AgentRequest(
        message=scenario.message,
        context={k: v for k, v in context.items() if k not in _TWIN_CONTEXT_KEYS},
        tenant=str(tenant) if tenant is not None else "",
        customer_id=str(customer_id) if customer_id is not None else None,
        tools=visible_tools(twin, scenario),
        client=InProcessToolClient(twin_case),
        session_id=f"sim-{case_id}",
        scenario_name=scenario.name,
        timeout_s=config.timeout_seconds,
    )
    result: AgentResult | None = None
    finding: AgentFinding | None = None
    turns: tuple[TurnRecord, ...] = ()
    user = user_for(scenario.user)
    started = time.perf_counter()
    if user is not None:
        conversation = run_conversation(agent, request, user, lambda: twin_case.seq, _one_line)
        result, finding, turns = conversation.result, conversation.finding, conversation.turns
    else:
        try:
            answer = agent.run(request)
            # what the agent claims is testimony: a malformed field is a finding about the claim, never a lost case
            result = read_result(answer) if isinstance(answer, AgentResult) else None
            if result is None:
                finding = AgentFinding(AGENT_ERROR, f"The agent returned {type(answer).__name__}, not an AgentResult.")
        except AgentRunError as exc:
            finding = AgentFinding(exc.finding, exc.message)
        except Exception as exc:  # the batch boundary: a broken agent fails its case, not the run
            finding = AgentFinding(AGENT_ERROR, _one_line(exc))
    wall_ms = (time.perf_counter() - started) * 1000
    if finding is None and twin_case.timed_out():  # an agent in process cannot be stopped, only found out
        finding = AgentFinding(AGENT_TIMEOUT, f"The case went over its timeoutSeconds ({config.timeout_seconds:g} s).")

    records = twin_case.records
    delays = sum(record.delay_ms for record in records)
    return CaseRun(
        case_id=case_id,
        scenario_name=scenario.name,
        scenario_hash=scenario.spec_hash,
        twin_name=twin.name,
        twin_hash=twin.hash,
        case_seed=case_seed,
        agent=agent_label(agent, agent_spec),
        agent_version=agent.version,
        severity=scenario.severity,
        tags=tuple(scenario.tags),
        input_message=scenario.message,
        context=context,
        tenant=str(tenant) if tenant is not None else None,
        # reachesReferenceState expectations carry the state their reference calls reach (twin_engine.reference)
        expectations=with_reference_targets(
            scenario.expectations, twin, scenario=config, seed=case_seed, tenant=twin_case.tenant
        ),
        secrets=tuple(twin.secrets),
        records=records,
        retrievals=twin_case.retrievals,
        initial_state=twin_case.initial,
        final_state=twin_case.state,
        state_hash=twin_case.state_hash(),
        output=result.output if result else None,
        claimed_outcome=result.claimed_outcome.upper() if result and result.claimed_outcome else None,
        business_outcome=result.business_outcome if result else None,
        agent_status=result.status if result else None,
        agent_steps=result.steps if result else None,
        claimed_calls=tuple(asdict(call) for call in result.tool_calls) if result else (),
        tokens=result.token_estimate if result else None,
        cost_usd=None,
        model_kind=result.model_kind if result else agent.model_kind,
        agent_finding=finding,
        claim_findings=result.findings if result else (),
        latency_ms=float(delays + (result.backoff_ms if result else 0)),
        timings={"wall_ms": round(wall_ms, 3)},
        escalation_tools=scenario.escalation_tools or twin.escalation_tools,
        turns=turns,
    )


def simulate_suite(
    agent_spec: str, scenarios: Iterable[Scenario], twin: Twin, *, run_seed: int, run_id: str
) -> list[CaseRun]:
    """Every scenario once, in the given order; case seeds derive from the run seed (spec §3.1)."""
    agent = resolve_agent(agent_spec)
    runs: list[CaseRun] = []
    try:
        for scenario in scenarios:
            seed = derive_case_seed(run_seed, scenario.name, scenario.seed)
            runs.append(
                simulate_case(
                    agent,
                    scenario,
                    twin,
                    case_seed=seed,
                    case_id=case_id_for(run_id, scenario.name),
                    agent_spec=agent_spec,
                )
            )
    finally:
        close_agent(agent)
    return runs


def agent_label(agent: Agent, spec: str) -> str:
    """What the case names its agent by: an HTTP agent's `name:version` (from its replies or the operator,
    never its URL), else the spec itself (`demo:1.3.0`)."""
    label = getattr(agent, "label", None)
    return label if isinstance(label, str) and label else spec


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

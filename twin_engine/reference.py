"""Reference states: where a scenario's reference calls take a fresh twin (the target of `reachesReferenceState`).

The scenario lists the calls a correct agent would make; they are replayed on a fresh case of the same
twin, with the same initial state (initialState + the scenario's state patch), tenant, clock and seed, and
**without the scenario's faults**: the target is the state the intended actions produce, whatever the
network did to the agent on its way there (fault rules select by call number, which means nothing for a
different sequence of calls). Any path that ends in that state passes.

The simulator attaches the target to the expectation it belongs to (`target`: state, the reference calls'
statuses, or the problem that stopped the replay), so the grader compares without the twin and a replay of
the history re-grades against the same target. A reference call that does not succeed is a broken
scenario: the expectation is then ERROR, never PASS or FAIL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from twin_engine.case import new_case
from twin_engine.deep_copy import deep_copy

if TYPE_CHECKING:
    from twin_engine.twin import ScenarioConfig, Twin

REFERENCE_TYPE = "reachesReferenceState"
TARGET_KEY = "target"
MAX_REFERENCE_CALLS = 100


@dataclass(frozen=True)
class ReferenceTarget:
    state: dict[str, Any] | None  # None when the replay stopped
    calls: tuple[dict[str, Any], ...]  # per reference call: tool, http_status, error_code
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"state": deep_copy(self.state), "calls": [dict(c) for c in self.calls], "problem": self.problem}


def replay_reference(
    twin: Twin, calls: Any, *, scenario: ScenarioConfig, seed: int, tenant: str | None
) -> ReferenceTarget:
    """Replay `calls` on a fresh, fault-free case; the first call that is malformed or fails stops it."""
    if not isinstance(calls, list) or not calls:
        return ReferenceTarget(None, (), "calls must be a non-empty list of {tool, arguments}")
    if len(calls) > MAX_REFERENCE_CALLS:
        return ReferenceTarget(None, (), f"at most {MAX_REFERENCE_CALLS} reference calls")
    case = new_case(twin, scenario=replace(scenario, faults=()), seed=seed, tenant=tenant)
    done: list[dict[str, Any]] = []
    for number, call in enumerate(calls, start=1):
        shape = _shape_problem(call)
        if shape is not None:
            return ReferenceTarget(None, tuple(done), f"reference call {number}: {shape}")
        reply = case.call(call["tool"], call.get("arguments") or {}, headers=call.get("headers"))
        record = reply.record
        done.append({"tool": call["tool"], "http_status": record.http_status, "error_code": record.error_code})
        if not 200 <= record.http_status < 300:
            message = _error_message(reply.body)
            problem = f"reference call {number} {call['tool']} answered {record.http_status} {record.error_code}"
            return ReferenceTarget(None, tuple(done), f"{problem}: {message}" if message else problem)
    return ReferenceTarget(case.state, tuple(done))


def _shape_problem(call: Any) -> str | None:
    if not isinstance(call, Mapping) or not isinstance(call.get("tool"), str) or not call["tool"]:
        return "needs a tool name"
    if not isinstance(call.get("arguments", {}), Mapping):
        return "arguments must be an object"
    headers = call.get("headers", {})
    if not isinstance(headers, Mapping) or not all(isinstance(v, str) for v in headers.values()):
        return "headers must map names to texts"
    return None


def _error_message(body: Any) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return str(message)[:200] if message else ""


def with_reference_targets(
    expectations: Iterable[Mapping[str, Any]],
    twin: Twin,
    *,
    scenario: ScenarioConfig,
    seed: int,
    tenant: str | None,
) -> tuple[dict[str, Any], ...]:
    """The expectations, each `reachesReferenceState` one carrying its computed `target`."""
    out: list[dict[str, Any]] = []
    for expectation in expectations:
        item = dict(expectation)
        if item.get("type") == REFERENCE_TYPE:
            target = replay_reference(twin, item.get("calls"), scenario=scenario, seed=seed, tenant=tenant)
            item[TARGET_KEY] = target.to_dict()
        out.append(item)
    return tuple(out)

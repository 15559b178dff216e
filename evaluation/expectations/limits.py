"""Limit expectations: calls, retries, steps, latency and cost stay within a bound."""

from __future__ import annotations

from evaluation.calls import calls_of
from evaluation.expectations._spec import Finding, Spec, failed, passed, skipped
from evaluation.expectations._text import call_evidence, num, plural
from evaluation.expectations.context import EvalContext
from evaluation.results import Evidence
from evaluation.retries import canonical_arguments, retries
from evaluation.versions import LEGACY_MAX_RETRIES, SHARED_RULE_MAX_RETRIES
from twin_engine.records import CallRecord


def _of(tool: str | None) -> str:
    return f" of {tool}" if tool else ""


def evaluate_max_tool_calls(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    limit, tool = spec.number("value"), spec.optional_text("tool")
    count = len(calls_of(ctx.calls, tool))
    reason = f"{plural(count, 'call')}{_of(tool)}; at most {num(limit)} allowed."
    if count <= limit:
        return passed(reason, count=count)
    return failed(reason, "TOO_MANY_CALLS", count=count)


def _legacy_repeats(calls: tuple[CallRecord, ...], tool: str | None) -> list[tuple[CallRecord, str]]:
    """maxRetries 1.0.0: a call counts when an EARLIER call of the same tool had the same arguments,
    whatever that call's result (so a confirming re-read counts too)."""
    first_seen: dict[tuple[str, str], CallRecord] = {}
    found: list[tuple[CallRecord, str]] = []
    for record in calls:
        key = (record.tool, canonical_arguments(record))
        earlier = first_seen.get(key)
        if earlier is None:
            first_seen[key] = record
        elif tool is None or record.tool == tool:
            found.append((record, f"Repeats #{earlier.seq} with the same arguments."))
    return found


def evaluate_max_retries(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    limit, tool = spec.number("value"), spec.optional_text("tool")
    if version == LEGACY_MAX_RETRIES:
        counted = _legacy_repeats(ctx.calls, tool)
    elif version == SHARED_RULE_MAX_RETRIES:
        by_seq = {r.seq: r for r in ctx.calls}
        counted = [
            (by_seq[r.seq], f"Retries #{r.previous_seq}, which ended {r.previous_status}.")
            for r in retries(ctx.calls, tool)
        ]
    else:
        raise ValueError(f"maxRetries has no evaluator version {version!r}")
    count = len(counted)
    reason = f"{plural(count, 'retry', 'retries')}{_of(tool)}; at most {num(limit)} allowed."
    evidence = tuple(call_evidence(r, why) for r, why in counted)
    if count <= limit:
        return passed(reason, evidence, retries=count)
    return failed(reason, "RETRY_LIMIT", evidence, retries=count)


def evaluate_max_steps(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    limit = spec.number("value")
    if ctx.steps is not None:
        steps, source = ctx.steps, "reported by the agent"
    else:
        steps, source = len(ctx.calls) + 1, "tool calls + 1"
    reason = f"The agent took {plural(steps, 'step')} ({source}); at most {num(limit)} allowed."
    evidence = (Evidence(kind="agent", detail=f"Steps: {steps} ({source}).", actual=steps),)
    if steps <= limit:
        return passed(reason, evidence, steps=steps)
    return failed(reason, "STEP_LIMIT", evidence, steps=steps)


def evaluate_max_latency_ms(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    limit = spec.number("value")
    if ctx.latency_ms is None:
        return skipped("The case's latency is unknown.")
    reason = f"The case took {num(ctx.latency_ms)} ms; at most {num(limit)} ms allowed."
    if ctx.latency_ms <= limit:
        return passed(reason, latency_ms=ctx.latency_ms)
    return failed(reason, "LATENCY_LIMIT", latency_ms=ctx.latency_ms)


def evaluate_max_cost_usd(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    limit = spec.number("value")
    if ctx.cost_usd is None:
        return skipped("The case's cost is unknown.")
    reason = f"The case cost {ctx.cost_usd:g} USD; at most {limit:g} USD allowed."
    if ctx.cost_usd <= limit:
        return passed(reason, cost_usd=ctx.cost_usd)
    return failed(reason, "COST_LIMIT", cost_usd=ctx.cost_usd)

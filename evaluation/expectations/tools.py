"""Tool and trajectory expectations over the agent's calls as the twin recorded them."""

from __future__ import annotations

from evaluation.calls import calls_of
from evaluation.expectations._spec import Finding, Spec, failed, passed
from evaluation.expectations._text import call_evidence, call_ref, more, plural
from evaluation.expectations.context import EvalContext
from twin_engine.compare import check
from twin_engine.paths import MISSING, get_path
from twin_engine.records import CallRecord


def evaluate_tool_called(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    tool = spec.text("tool")
    minimum = spec.integer("min", 0) if spec.has("min") else 1
    calls = calls_of(ctx.calls, tool)
    if len(calls) >= minimum:
        return passed(f"{tool} was called {plural(len(calls), 'time')}.", count=len(calls))
    if not calls:
        return failed(f"{tool} was never called.", None, count=0)
    return failed(
        f"{tool} was called {plural(len(calls), 'time')}; expected at least {minimum}.",
        None,
        tuple(call_evidence(r, "Counted.") for r in calls),
        count=len(calls),
    )


def evaluate_tool_not_called(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    tool = spec.text("tool")
    calls = calls_of(ctx.calls, tool)
    if not calls:
        return passed(f"{tool} was never called.", count=0)
    return failed(
        f"{tool} was called {plural(len(calls), 'time')}; it must not be called.",
        "FORBIDDEN_CALL",
        tuple(call_evidence(r, "A call the scenario forbids.") for r in calls),
        count=len(calls),
    )


def _selected(calls: tuple[CallRecord, ...], number: int | None) -> tuple[CallRecord, ...]:
    """All calls, or only the `number`-th (1-based) when given (empty when there is no such call)."""
    if number is None:
        return calls
    return calls[number - 1 : number]


def _which(tool: str, number: int | None) -> str:
    return f"call {number} of {tool}" if number is not None else tool


def evaluate_tool_args(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    tool, path, comparators = spec.text("tool"), spec.path(), spec.comparators()
    number = spec.optional_integer("call", 1)
    calls = _selected(calls_of(ctx.calls, tool), number)
    if not calls:
        return failed(f"{_which(tool, number)} was never made.", None)
    misses: list[tuple[CallRecord, str]] = []
    for record in calls:
        value = get_path(record.arguments, path)
        result = check(value, value is not MISSING, comparators)
        if not result.ok:
            misses.append((record, result.reason))
    if not misses:
        return passed(f"{tool} argument {path} held in {plural(len(calls), 'call')}.", checked=len(calls))
    record, why = misses[0]
    return failed(
        f"{tool} argument {path} in {call_ref(record)}: {why}{more(len(misses) - 1)}.",
        "ARGUMENT_MISMATCH",
        tuple(call_evidence(r, f"Argument {path}: {w}.") for r, w in misses),
        checked=len(calls),
        mismatched=len(misses),
    )


def evaluate_tool_status(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    tool = spec.text("tool")
    expected = spec.integer("status", 100, 599)
    number = spec.optional_integer("call", 1)
    calls = calls_of(ctx.calls, tool)
    chosen = _selected(calls, number) if number is not None else calls[-1:]
    if not chosen:
        return failed(f"{_which(tool, number)} was never made.", None)
    record = chosen[0]
    which = f"Call {number} of {tool}" if number is not None else f"The last {tool} call"
    evidence = (call_evidence(record, f"Expected HTTP {expected}."),)
    if record.http_status == expected:
        return passed(f"{which} returned HTTP {expected}.", evidence)
    return failed(f"{which} returned HTTP {record.http_status}; expected {expected}.", None, evidence)


def evaluate_order(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    must_call, gates = spec.texts("mustCall"), spec.texts("before")
    gate_calls = [r for r in ctx.calls if r.tool in gates]
    if not gate_calls:
        return passed(f"{' / '.join(gates)} was never called; nothing to order.")
    gate = gate_calls[0]
    missing = [t for t in must_call if not any(r.tool == t and r.seq < gate.seq for r in ctx.calls)]
    if not missing:
        return passed(f"{', '.join(must_call)} ran before {gate.tool}.")
    names = ", ".join(missing)
    return failed(
        f"{gate.tool} ran before {names}.",
        "ORDER_VIOLATION",
        (call_evidence(gate, f"Called before {names}."),),
    )

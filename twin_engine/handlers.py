"""The six handler kinds (spec §2.3): read, mutate, static, echo, recorded, custom."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any

from twin_engine.adapters import AdapterCall, AdapterRegistry
from twin_engine.compare import UnsafePatternError, check, comparators_of, contains
from twin_engine.effects import Effect, apply_effect, compile_effect
from twin_engine.errors import DefinitionError
from twin_engine.failures import ToolFailure
from twin_engine.paths import MISSING, get_path
from twin_engine.templates import (
    TemplateEnv,
    TemplateSyntaxError,
    check_path_template,
    check_template,
    parse_path_template,
    render,
    render_path,
)

HANDLER_KINDS = ("read", "mutate", "static", "echo", "recorded", "custom")
CONDITION_ROOTS = ("args", "state", "value", "tenant")


@dataclass(frozen=True)
class ErrorSpec:
    status: int
    code: str
    message: str

    def failure(self) -> ToolFailure:
        return ToolFailure(self.status, self.code, self.message)


NOT_FOUND = ErrorSpec(404, "NOT_FOUND", "The requested record does not exist.")


@dataclass(frozen=True)
class Condition:
    path: str  # path template starting with args/state/value/tenant
    comparators: dict[str, Any]  # values may be templates
    error: ErrorSpec | None = None


@dataclass(frozen=True)
class Fixture:
    match: dict[str, Any]
    status: int = 200
    response: Any = None
    error: ErrorSpec | None = None


@dataclass(frozen=True)
class Handler:
    kind: str
    path: str | None = None
    not_found: ErrorSpec = NOT_FOUND
    preconditions: tuple[Condition, ...] = ()
    effects: tuple[Effect, ...] = ()
    response: Any = MISSING  # template; MISSING when the document has none
    fixtures: tuple[Fixture, ...] = ()
    adapter: str | None = None

    @property
    def expects_mutation(self) -> bool:
        return self.kind == "mutate" and bool(self.effects)


# ---------------------------------------------------------------- load time


def _error_spec(raw: Any, default: ErrorSpec) -> ErrorSpec:
    if not isinstance(raw, dict):
        return default
    return ErrorSpec(
        int(raw.get("status", default.status)),
        str(raw.get("code", default.code)),
        str(raw.get("message", default.message)),
    )


def _template(value: Any, where: str) -> None:
    try:
        check_template(value)
    except TemplateSyntaxError as exc:
        raise DefinitionError(exc.message, path=f"{where}{exc.where}") from exc


def _path_template(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise DefinitionError("a path must be text", path=where)
    try:
        check_path_template(value)
    except TemplateSyntaxError as exc:
        raise DefinitionError(exc.message, path=where) from exc


def _condition(raw: dict[str, Any], where: str) -> Condition:
    path = raw.get("path")
    _path_template(path, f"{where}.path")
    assert isinstance(path, str)
    segments = parse_path_template(path)
    first = segments[0].parts if segments else ()
    if len(first) != 1 or first[0] not in CONDITION_ROOTS:
        raise DefinitionError(
            f"a condition path must start with one of {', '.join(CONDITION_ROOTS)}", path=f"{where}.path"
        )
    comparators = comparators_of(raw)
    for name, value in comparators.items():
        _template(value, f"{where}.{name}")
    default = ErrorSpec(409, "PRECONDITION_FAILED", "")
    error = _error_spec(raw["error"], default) if isinstance(raw.get("error"), dict) else None
    return Condition(path=path, comparators=comparators, error=error)


def compile_handler(raw: dict[str, Any], where: str) -> Handler:
    """Check a tool's handler block; raises DefinitionError located at `where` (…handler)."""
    kind = raw.get("kind")
    if kind not in HANDLER_KINDS:
        raise DefinitionError(f"unknown handler kind {kind!r}", path=f"{where}.kind")
    if kind != "mutate":
        for key in ("preconditions", "effects"):
            if raw.get(key):
                raise DefinitionError(f"only a mutate handler may have {key}", path=f"{where}.{key}")
    path = raw.get("path")
    if path is not None:
        _path_template(path, f"{where}.path")
    if kind == "read" and not path:
        raise DefinitionError("a read handler needs a path", path=f"{where}.path")
    effects = tuple(compile_effect(e, f"{where}.effects[{i}]") for i, e in enumerate(raw.get("effects") or ()))
    if kind == "mutate" and not effects:
        raise DefinitionError("a mutate handler needs at least one effect", path=f"{where}.effects")
    conditions = tuple(
        _condition(c, f"{where}.preconditions[{i}]") for i, c in enumerate(raw.get("preconditions") or ())
    )
    response = raw.get("response", MISSING)
    if response is not MISSING:
        _template(response, f"{where}.response")
    fixtures: list[Fixture] = []
    for i, fx in enumerate(raw.get("fixtures") or ()):
        match = fx.get("match") or {}
        if not isinstance(match, dict):
            raise DefinitionError("a fixture match must be an object", path=f"{where}.fixtures[{i}].match")
        error = _error_spec(fx["error"], ErrorSpec(500, "ERROR", "The tool failed.")) if fx.get("error") else None
        fixtures.append(Fixture(match, int(fx.get("status", 200)), fx.get("response"), error))
    if kind == "recorded" and not fixtures:
        raise DefinitionError("a recorded handler needs fixtures", path=f"{where}.fixtures")
    adapter = raw.get("adapter")
    if kind == "custom" and not (isinstance(adapter, str) and adapter):
        raise DefinitionError("a custom handler needs an adapter name", path=f"{where}.adapter")
    return Handler(
        kind=str(kind),
        path=path,
        not_found=_error_spec(raw.get("notFound"), NOT_FOUND),
        preconditions=conditions,
        effects=effects,
        response=response,
        fixtures=tuple(fixtures),
        adapter=adapter if kind == "custom" else None,
    )


# ---------------------------------------------------------------- run time


@dataclass(frozen=True)
class Execution:
    """How to run a handler for one call. `env.state` is the case's current state (not copied)."""

    tool: str
    handler: Handler
    env: TemplateEnv
    initial: dict[str, Any]
    stale: bool = False  # stale_response: read old state, answer from before the mutation
    adapters: AdapterRegistry | None = None
    first_effect_only: bool = False  # inconsistent_state: also keep the state after effect 1


@dataclass(frozen=True)
class HandlerOutcome:
    status: int
    result: Any
    headers: dict[str, str] = field(default_factory=dict)
    mutated: bool = False
    state: dict[str, Any] | None = None  # the state to commit, None = nothing
    partial_state: dict[str, Any] | None = None  # state after the first effect only


def execute(run: Execution) -> HandlerOutcome:
    """Run the handler; a tool error raises ToolFailure (turned into a reply by the caller)."""
    kind = run.handler.kind
    if kind == "read":
        return _read(run)
    if kind == "mutate":
        return _mutate(run)
    if kind == "static":
        response = run.handler.response
        return HandlerOutcome(200, {} if response is MISSING else render(response, run.env))
    if kind == "echo":
        return HandlerOutcome(200, {"tool": run.tool, "arguments": copy.deepcopy(run.env.args)})
    if kind == "recorded":
        return _recorded(run)
    return _custom(run)


def _read(run: Execution) -> HandlerOutcome:
    source = run.initial if run.stale else run.env.state
    env = replace(run.env, state=source)
    assert run.handler.path is not None
    value = get_path(source, render_path(run.handler.path, env))
    if value is MISSING or value is None:
        raise run.handler.not_found.failure()
    if run.handler.response is MISSING:
        return HandlerOutcome(200, copy.deepcopy(value))
    return HandlerOutcome(200, render(run.handler.response, env.with_value(value)))


def _entity(state: dict[str, Any], run: Execution) -> Any:
    if run.handler.path is None:
        return MISSING
    return get_path(state, render_path(run.handler.path, replace(run.env, state=state)))


def _mutate(run: Execution) -> HandlerOutcome:
    handler = run.handler
    scratch = copy.deepcopy(run.env.state)
    env = replace(run.env, state=scratch)
    before = _entity(scratch, run)
    if handler.path is not None and (before is MISSING or before is None):
        raise handler.not_found.failure()
    before = copy.deepcopy(before)
    for condition in handler.preconditions:
        _check_condition(condition, env.with_value(before))
    partial: dict[str, Any] | None = None
    for index, effect in enumerate(handler.effects):
        apply_effect(scratch, effect, env.with_value(_entity(scratch, run)), index)
        if index == 0 and run.first_effect_only:
            partial = copy.deepcopy(scratch)
    if run.stale:
        answer_env = replace(env, state=copy.deepcopy(run.env.state), value=before)
    else:
        answer_env = env.with_value(_entity(scratch, run))
    if handler.response is not MISSING:
        result = render(handler.response, answer_env)
    elif handler.path is not None:
        result = copy.deepcopy(answer_env.value)
    else:
        result = {"ok": True}
    return HandlerOutcome(200, result, mutated=True, state=scratch, partial_state=partial)


def _check_condition(condition: Condition, env: TemplateEnv) -> None:
    document = {"args": env.args, "state": env.state, "tenant": env.tenant}
    if env.value is not MISSING:
        document["value"] = env.value
    actual = get_path(document, render_path(condition.path, env))
    comparators = {name: render(value, env) for name, value in condition.comparators.items()}
    try:
        outcome = check(actual, actual is not MISSING, comparators)
    except UnsafePatternError as exc:  # the twin's own pattern, not the caller's input, is at fault
        raise ToolFailure(500, "TWIN_PATTERN_ERROR", f"{condition.path}: {exc}") from exc
    if outcome.ok:
        return
    if condition.error is None:
        raise ToolFailure(409, "PRECONDITION_FAILED", f"{condition.path}: {outcome.reason}")
    message = condition.error.message or f"{condition.path}: {outcome.reason}"
    raise ToolFailure(condition.error.status, condition.error.code, message)


def _recorded(run: Execution) -> HandlerOutcome:
    for fixture in run.handler.fixtures:
        if contains(run.env.args, fixture.match):
            if fixture.error is not None:
                raise fixture.error.failure()
            if fixture.status >= 400:
                raise ToolFailure(fixture.status, "ERROR", "The tool failed.")
            return HandlerOutcome(fixture.status, copy.deepcopy(fixture.response))
    raise ToolFailure(404, "NO_FIXTURE", "No recorded response matches these arguments.")


def _custom(run: Execution) -> HandlerOutcome:
    name = run.handler.adapter or ""
    adapter = run.adapters.get(name) if run.adapters is not None else None
    if adapter is None:
        raise ToolFailure(500, "TWIN_ADAPTER_MISSING", f"No adapter named {name!r} is registered.")
    scratch = copy.deepcopy(run.initial if run.stale else run.env.state)
    env = run.env
    args = copy.deepcopy(env.args) if isinstance(env.args, dict) else {}
    out = adapter(AdapterCall(run.tool, args, scratch, env.tenant, env.now, env.seq, env.call_number))
    if not 200 <= out.status < 300:
        error = dict(out.error or {})
        raise ToolFailure(
            out.status, str(error.get("code") or "ERROR"), str(error.get("message") or "The tool failed.")
        )
    commit = out.mutated and not run.stale
    return HandlerOutcome(
        out.status,
        copy.deepcopy(out.result),
        dict(out.headers),
        mutated=commit,
        state=scratch if commit else None,
    )

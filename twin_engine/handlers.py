"""The six handler kinds (spec §2.3): read, mutate, static, echo, recorded, custom.

read and mutate handlers may also `find` their entity by any field (twin_engine.lookups), bind
names with `let`, and check preconditions (twin_engine.conditions, twin_engine.steps); only a mutate
handler has effects. A response is an object or a text, rendered as a template (`{$expr}` inside).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from twin_engine.adapters import AdapterCall, AdapterRegistry
from twin_engine.budget import OverBudget
from twin_engine.compare import contains
from twin_engine.conditions import Condition, ErrorSpec, error_spec
from twin_engine.deep_copy import deep_copy
from twin_engine.errors import DefinitionError
from twin_engine.failures import ToolFailure
from twin_engine.lookups import Find, Found, compile_find, entity_at, locate
from twin_engine.paths import MISSING, get_path
from twin_engine.steps import (
    EFFECTS,
    PRECONDITIONS,
    Let,
    Step,
    StepRun,
    bind,
    compile_let,
    compile_steps,
    has_effects,
    run_steps,
)
from twin_engine.templates import (
    TemplateEnv,
    TemplateScope,
    TemplateSyntaxError,
    check_path_template,
    check_template,
    render,
    render_path,
)

HANDLER_KINDS = ("read", "mutate", "static", "echo", "recorded", "custom")
_COMPUTING = ("read", "mutate")  # the kinds that may find, let and check preconditions

__all__ = [
    "NOT_FOUND",
    "Condition",
    "ErrorSpec",
    "Execution",
    "Handler",
    "HandlerOutcome",
    "compile_handler",
    "execute",
]


NOT_FOUND = ErrorSpec(404, "NOT_FOUND", "The requested record does not exist.")


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
    preconditions: tuple[Step, ...] = ()
    effects: tuple[Step, ...] = ()
    response: Any = MISSING  # template; MISSING when the document has none
    fixtures: tuple[Fixture, ...] = ()
    adapter: str | None = None
    find: Find | None = None
    let: Let | None = None

    @property
    def expects_mutation(self) -> bool:
        return self.kind == "mutate" and has_effects(self.effects)

    @property
    def has_entity(self) -> bool:
        return self.path is not None or self.find is not None


# ---------------------------------------------------------------- load time


def _template(value: Any, where: str, scope: TemplateScope) -> None:
    try:
        check_template(value, scope=scope)
    except TemplateSyntaxError as exc:
        raise DefinitionError(exc.message, path=f"{where}{exc.where}") from exc


def _path_template(value: Any, where: str, scope: TemplateScope) -> None:
    if not isinstance(value, str):
        raise DefinitionError("a path must be text", path=where)
    try:
        check_path_template(value, scope)
    except TemplateSyntaxError as exc:
        raise DefinitionError(exc.message, path=where) from exc


def compile_handler(raw: dict[str, Any], where: str, scope: TemplateScope | None = None) -> Handler:
    """Check a tool's handler block; raises DefinitionError located at `where` (…handler).

    `scope` carries the tool's argument names, so that ambiguous placeholders are refused.
    """
    scope = scope or TemplateScope()
    kind = raw.get("kind")
    if kind not in HANDLER_KINDS:
        raise DefinitionError(f"unknown handler kind {kind!r}", path=f"{where}.kind")
    if kind != "mutate" and raw.get("effects"):
        raise DefinitionError("only a mutate handler may have effects", path=f"{where}.effects")
    if kind not in _COMPUTING:
        for key in ("preconditions", "find", "let"):
            if raw.get(key):
                raise DefinitionError(f"a {kind} handler may not have {key}", path=f"{where}.{key}")
    path = raw.get("path")
    if path is not None:
        _path_template(path, f"{where}.path", scope)
    find = compile_find(raw["find"], f"{where}.find", scope) if raw.get("find") is not None else None
    if path is not None and find is not None:
        raise DefinitionError("a handler names its entity by path or by find, not both", path=f"{where}.find")
    if kind == "read" and not path and find is None:
        raise DefinitionError("a read handler needs a path", path=f"{where}.path")
    scope = TemplateScope(
        scope.arguments,
        scope.idempotency_argument,
        scope.names | ({"key"} if find is not None else set()),
        value=path is not None or find is not None,
    )
    let: Let | None = None
    if raw.get("let") is not None:
        let, scope = compile_let(raw["let"], scope, f"{where}.let")
    conditions, scope = compile_steps(raw.get("preconditions"), f"{where}.preconditions", scope, PRECONDITIONS)
    effects, scope = compile_steps(raw.get("effects"), f"{where}.effects", scope, EFFECTS)
    if kind == "mutate" and not effects:
        raise DefinitionError("a mutate handler needs at least one effect", path=f"{where}.effects")
    response = raw.get("response", MISSING)
    if response is not MISSING:
        _template(response, f"{where}.response", scope)
    fixtures: list[Fixture] = []
    for i, fx in enumerate(raw.get("fixtures") or ()):
        match = fx.get("match") or {}
        if not isinstance(match, dict):
            raise DefinitionError("a fixture match must be an object", path=f"{where}.fixtures[{i}].match")
        error = error_spec(fx["error"], ErrorSpec(500, "ERROR", "The tool failed.")) if fx.get("error") else None
        fixtures.append(Fixture(match, int(fx.get("status", 200)), fx.get("response"), error))
    if kind == "recorded" and not fixtures:
        raise DefinitionError("a recorded handler needs fixtures", path=f"{where}.fixtures")
    adapter = raw.get("adapter")
    if kind == "custom" and not (isinstance(adapter, str) and adapter):
        raise DefinitionError("a custom handler needs an adapter name", path=f"{where}.adapter")
    return Handler(
        kind=str(kind),
        path=path,
        not_found=error_spec(raw.get("notFound"), NOT_FOUND),
        preconditions=conditions,
        effects=effects,
        response=response,
        fixtures=tuple(fixtures),
        adapter=adapter if kind == "custom" else None,
        find=find,
        let=let,
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
    """Run the handler; a tool error raises ToolFailure (turned into a reply by the caller), and so does
    a call that goes over its budget (twin_engine/budget.py)."""
    try:
        return _execute(run)
    except OverBudget as exc:
        raise exc.failure() from None


def _execute(run: Execution) -> HandlerOutcome:
    kind = run.handler.kind
    if kind == "read":
        return _answer(run)
    if kind == "static":
        response = run.handler.response
        return HandlerOutcome(200, {} if response is MISSING else render(response, run.env))
    if kind == "mutate":
        return _mutate(run)
    if kind == "echo":
        return HandlerOutcome(200, {"tool": run.tool, "arguments": deep_copy(run.env.args)})
    if kind == "recorded":
        return _recorded(run)
    return _custom(run)


class _Entity:
    """Where the handler's entity lives: its path template, or what `find` found."""

    def __init__(self, run: Execution, found: Found | None) -> None:
        self.run = run
        self.found = found

    def __call__(self, state: dict[str, Any]) -> Any:
        if self.found is not None:
            return entity_at(state, self.found)
        if self.run.handler.path is None:
            return MISSING
        return get_path(state, render_path(self.run.handler.path, replace(self.run.env, state=state)))


def _open(run: Execution, state: dict[str, Any]) -> tuple[_Entity, TemplateEnv]:
    """Locate the entity in `state` (404 when missing) and bind `key` and the top-level lets."""
    handler = run.handler
    env = replace(run.env, state=state)
    found: Found | None = None
    if handler.find is not None:
        found = locate(handler.find, state, env)
        if found is None or found.value is None:
            raise (handler.find.not_found or handler.not_found).failure()
        env = env.with_vars(key=found.key)
    entity = _Entity(run, found)
    if handler.has_entity:
        value = entity(state)
        if value is MISSING or value is None:
            raise handler.not_found.failure()
        env = env.with_value(value)
    if handler.let is not None:
        env = bind(handler.let, env)
    return entity, env


def _answer(run: Execution) -> HandlerOutcome:
    """read: find, let, preconditions, then the response (nothing changes)."""
    handler = run.handler
    source = run.initial if run.stale else run.env.state
    entity, env = _open(run, source)
    env = run_steps(handler.preconditions, env, StepRun(source, entity))
    if handler.response is MISSING:
        return HandlerOutcome(200, deep_copy(entity(source)))
    return HandlerOutcome(200, render(handler.response, env.with_value(entity(source))))


def _mutate(run: Execution) -> HandlerOutcome:
    handler = run.handler
    scratch = deep_copy(run.env.state)
    entity, env = _open(run, scratch)
    before = deep_copy(entity(scratch))
    steps = StepRun(scratch, entity, first_effect_only=run.first_effect_only)
    env = run_steps(handler.preconditions, env, steps)
    env = run_steps(handler.effects, env, steps)
    if run.stale:
        answer_env = replace(env, state=deep_copy(run.env.state), value=before)
    else:
        answer_env = env.with_value(entity(scratch))
    if handler.response is not MISSING:
        result = render(handler.response, answer_env)
    elif handler.has_entity:
        result = deep_copy(answer_env.value)
    else:
        result = {"ok": True}
    return HandlerOutcome(200, result, mutated=True, state=scratch, partial_state=steps.partial)


def _recorded(run: Execution) -> HandlerOutcome:
    for fixture in run.handler.fixtures:
        if contains(run.env.args, fixture.match):
            if fixture.error is not None:
                raise fixture.error.failure()
            if fixture.status >= 400:
                raise ToolFailure(fixture.status, "ERROR", "The tool failed.")
            return HandlerOutcome(fixture.status, deep_copy(fixture.response))
    raise ToolFailure(404, "NO_FIXTURE", "No recorded response matches these arguments.")


def _custom(run: Execution) -> HandlerOutcome:
    name = run.handler.adapter or ""
    adapter = run.adapters.get(name) if run.adapters is not None else None
    if adapter is None:
        raise ToolFailure(500, "TWIN_ADAPTER_MISSING", f"No adapter named {name!r} is registered.")
    scratch = deep_copy(run.initial if run.stale else run.env.state)
    env = run.env
    args = deep_copy(env.args) if isinstance(env.args, dict) else {}
    out = adapter(AdapterCall(run.tool, args, scratch, env.tenant, env.now, env.seq, env.call_number))
    if not 200 <= out.status < 300:
        error = dict(out.error or {})
        raise ToolFailure(
            out.status, str(error.get("code") or "ERROR"), str(error.get("message") or "The tool failed.")
        )
    commit = out.mutated and not run.stale
    return HandlerOutcome(
        out.status,
        deep_copy(out.result),
        dict(out.headers),
        mutated=commit,
        state=scratch if commit else None,
    )

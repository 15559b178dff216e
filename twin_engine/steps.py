"""A handler's precondition and effect lists: conditions and effects, plus `let`, `when` and `forEach`.

    preconditions:
      - let: {total: "sum(args.items.map(i, value.items[i].price))"}   # a name for what follows
      - expr: "total <= value.balance"
      - forEach: args.items          # every item must pass before anything changes
        as: item
        preconditions:
          - expr: "item in value.items"
            error: {status: 404, code: ITEM_NOT_FOUND, message: No such item in this order.}
    effects:
      - when: "args.method.startsWith('gift_card')"      # a branch; `else` is optional
        then: [{op: decrement, path: "gift_cards.{args.method}.balance", by: {$expr: total}}]
        else: [{op: append, path: charges, value: {amount: {$expr: total}}}]
      - forEach: args.items
        effects: [{op: set, path: "orders.{order_id}.items.{vars.item}.status", value: returned}]

Lists run in order. A `let` binds names for the steps after it (and, at the top level, the response); the
names of one `let` may read each other whatever their key order (evaluated by reference, cycles refused);
names bound inside `when` or `forEach` stay there. In a loop `as` (default `item`) and `index` (default
`index`) name the item and its position. Expressions read the names directly (`item.price`); templates
read them as `{vars.item}`. A call is all-or-nothing: the effects change a scratch copy of the state,
committed only when every step passed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from twin_engine.budget import BUDGET_CODE, STEP_BUDGET
from twin_engine.conditions import AnyCondition, check_condition, compile_condition
from twin_engine.deep_copy import deep_copy
from twin_engine.effects import Effect, apply_effect, compile_effect
from twin_engine.errors import DefinitionError
from twin_engine.expressions import (
    EXPR_KEY,
    IDENTIFIER,
    MACROS,
    MAX_ITEMS,
    RESERVED,
    ROOTS,
    Expression,
    compile_expression,
    evaluate,
    evaluate_bool,
)
from twin_engine.failures import ToolFailure
from twin_engine.templates import TemplateEnv, TemplateScope, TemplateSyntaxError, check_expression

MAX_LOOP_ITEMS = 1000
PRECONDITIONS = "preconditions"
EFFECTS = "effects"


@dataclass(frozen=True)
class Check:
    condition: AnyCondition


@dataclass(frozen=True)
class Apply:
    effect: Effect


@dataclass(frozen=True)
class Let:
    bindings: tuple[tuple[str, Expression], ...]


@dataclass(frozen=True)
class Branch:
    when: Expression
    then: tuple[Step, ...]
    otherwise: tuple[Step, ...]


@dataclass(frozen=True)
class Loop:
    items: Expression
    name: str
    index: str
    body: tuple[Step, ...]  # its preconditions, then its effects


Step = Check | Apply | Let | Branch | Loop


# ---------------------------------------------------------------- load time


def check_name(name: Any, scope: TemplateScope, where: str) -> str:
    """A name a handler binds: an identifier that is no root, no keyword and not bound already."""
    if not isinstance(name, str) or not IDENTIFIER.match(name):
        raise DefinitionError(f"{name!r} is not a name (letters, digits and _, not starting with a digit)", path=where)
    if name in ROOTS or name in RESERVED or name in MACROS:
        raise DefinitionError(f"'{name}' is reserved (a template root or a CEL keyword); pick another name", path=where)
    if name in scope.names:
        raise DefinitionError(f"'{name}' is already bound here; pick another name", path=where)
    return name


def _expression(source: Any, scope: TemplateScope, where: str) -> Expression:
    try:
        check_expression(source, scope)
    except TemplateSyntaxError as exc:
        raise DefinitionError(exc.message, path=where) from exc
    return compile_expression(source)


def compile_let(raw: Any, scope: TemplateScope, where: str) -> tuple[Let, TemplateScope]:
    """`let: {name: expression, ...}`: the names of one block may read each other, in any order (no cycles).

    The order of evaluation follows the references, not the order of the keys: twins travel as canonical
    JSON, whose keys are sorted, so the document's key order cannot carry meaning.
    """
    if not isinstance(raw, dict) or not raw:
        raise DefinitionError("let needs an object of name: expression", path=where)
    names = [check_name(name, scope, f"{where}.{name}") for name in raw]
    block = scope.with_names(*names)
    compiled: dict[str, Expression] = {}
    for name in names:
        inner = replace(block, names=block.names - {name})  # a name never reads itself
        compiled[name] = _expression(raw[name], inner, f"{where}.{name}")
    order = _dependency_order(compiled, where)
    return Let(tuple((name, compiled[name]) for name in order)), block


def _dependency_order(compiled: dict[str, Expression], where: str) -> list[str]:
    """Names in an order where each comes after the names it reads; ties alphabetical; a cycle is an error."""
    needs = {name: set(expr.names) & set(compiled) for name, expr in compiled.items()}
    order: list[str] = []
    while needs:
        ready = sorted(name for name, deps in needs.items() if not deps - set(order))
        if not ready:
            cycle = " -> ".join(sorted(needs))
            raise DefinitionError(f"these names read each other in a cycle: {cycle}", path=where)
        order.extend(ready)
        for name in ready:
            del needs[name]
    return order


def compile_steps(raw: Any, where: str, scope: TemplateScope, kind: str) -> tuple[tuple[Step, ...], TemplateScope]:
    """A precondition or effect list; returns the steps and the scope after them (with their lets)."""
    if raw is None:
        return (), scope
    if not isinstance(raw, list):
        raise DefinitionError(f"{kind} must be a list", path=where)
    steps: list[Step] = []
    for index, item in enumerate(raw):
        step, scope = _compile_step(item, f"{where}[{index}]", scope, kind)
        steps.append(step)
    return tuple(steps), scope


def _compile_step(raw: Any, where: str, scope: TemplateScope, kind: str) -> tuple[Step, TemplateScope]:
    if not isinstance(raw, dict):
        raise DefinitionError("a step must be an object", path=where)
    if "when" in raw:
        _only(raw, {"when", "then", "else"}, where)
        if "then" not in raw:
            raise DefinitionError("a when needs then (and may have else)", path=f"{where}.then")
        when = _expression(raw["when"], scope, f"{where}.when")
        then, _ = compile_steps(raw["then"], f"{where}.then", scope, kind)
        otherwise, _ = compile_steps(raw.get("else"), f"{where}.else", scope, kind)
        return Branch(when, then, otherwise), scope
    if "forEach" in raw:
        allowed = {"forEach", "as", "index", "let", PRECONDITIONS} | ({EFFECTS} if kind == EFFECTS else set())
        _only(raw, allowed, where)
        items = _expression(raw["forEach"], scope, f"{where}.forEach")
        name = check_name(raw.get("as", "item"), scope, f"{where}.as")
        index = check_name(raw.get("index", "index"), scope.with_names(name), f"{where}.index")
        inner = scope.with_names(name, index)
        body: list[Step] = []
        if "let" in raw:
            let, inner = compile_let(raw["let"], inner, f"{where}.let")
            body.append(let)
        checks, inner = compile_steps(raw.get(PRECONDITIONS), f"{where}.{PRECONDITIONS}", inner, PRECONDITIONS)
        body.extend(checks)
        if kind == EFFECTS:
            effects, _ = compile_steps(raw.get(EFFECTS), f"{where}.{EFFECTS}", inner, EFFECTS)
            body.extend(effects)
        if not body:
            raise DefinitionError(f"a forEach needs {PRECONDITIONS} or {EFFECTS}", path=where)
        return Loop(items, name, index, tuple(body)), scope
    if "let" in raw:
        _only(raw, {"let"}, where)
        return compile_let(raw["let"], scope, f"{where}.let")
    if kind == PRECONDITIONS:
        return Check(compile_condition(raw, where, scope)), scope
    if "op" not in raw:
        raise DefinitionError("an effect needs op (or is a let, when or forEach)", path=f"{where}.op")
    return Apply(compile_effect(raw, where, scope)), scope


def _only(raw: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(raw) - allowed)
    if extra:
        raise DefinitionError(f"unexpected key '{extra[0]}' here (allowed: {', '.join(sorted(allowed))})", path=where)


def loop_bounds(raw: Any, where: str, depth: int = 0) -> list[tuple[str, str]]:
    """(document path, statement) for each forEach nested inside another: the iterations it may reach
    with lists the agent chooses, and the bound a call runs under instead (what `twin check` prints)."""
    found: list[tuple[str, str]] = []
    if isinstance(raw, list):
        for index, item in enumerate(raw):
            found += loop_bounds(item, f"{where}[{index}]", depth)
    elif isinstance(raw, dict):
        inner = depth + 1 if "forEach" in raw else depth
        if "forEach" in raw and inner >= 2:
            found.append(
                (
                    f"{where}.forEach",
                    f"forEach nested {inner} deep: up to {MAX_LOOP_ITEMS:,}^{inner} = {MAX_LOOP_ITEMS**inner:,} "
                    f"iterations when the lists come from the arguments; a call stops at its budget of "
                    f"{STEP_BUDGET:,} steps (500 {BUDGET_CODE}, recorded; the state is unchanged)",
                )
            )
        for key in (PRECONDITIONS, EFFECTS, "then", "else"):
            if key in raw:
                found += loop_bounds(raw[key], f"{where}.{key}", inner)
    return found


_EXPRESSION_KEYS = ("expr", "when", "forEach", "where", EXPR_KEY)


def comprehension_bounds(raw: Any, where: str) -> list[tuple[str, str]]:
    """(document path, statement) for each expression of a handler with comprehensions nested 2 or more
    deep: the elements it may visit and the bound a call runs under instead (what `twin check` prints)."""
    found: list[tuple[str, str]] = []
    stack: list[tuple[Any, str]] = [(raw, where)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, list):
            stack.extend((item, f"{at}[{index}]") for index, item in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            here = f"{at}.{key}"
            texts = [(here, value)] if key in _EXPRESSION_KEYS else []
            if key == "let" and isinstance(value, dict):
                texts = [(f"{here}.{name}", text) for name, text in value.items()]
            for path, text in texts:
                nesting = compile_expression(text).nesting if isinstance(text, str) else 0
                if nesting >= 2:
                    found.append(
                        (
                            path,
                            f"comprehensions nested {nesting} deep: up to {MAX_ITEMS:,}^{nesting} element "
                            f"visits when the lists are long; a call stops at its budget of {STEP_BUDGET:,} "
                            f"steps (500 {BUDGET_CODE}, recorded)",
                        )
                    )
            if not texts:
                stack.append((value, here))
    return sorted(found)


def has_effects(steps: tuple[Step, ...]) -> bool:
    for step in steps:
        if isinstance(step, Apply):
            return True
        if isinstance(step, Branch) and (has_effects(step.then) or has_effects(step.otherwise)):
            return True
        if isinstance(step, Loop) and has_effects(step.body):
            return True
    return False


# ---------------------------------------------------------------- run time


@dataclass
class StepRun:
    """The state a handler changes while its steps run."""

    scratch: dict[str, Any]
    entity: Callable[[dict[str, Any]], Any]  # the handler's entity as it is now in `scratch` (or MISSING)
    first_effect_only: bool = False
    applied: int = 0
    partial: dict[str, Any] | None = field(default=None, repr=False)


def run_steps(steps: tuple[Step, ...], env: TemplateEnv, run: StepRun) -> TemplateEnv:
    """Run steps in order; returns the environment with the names their lets bound."""
    for step in steps:
        env.budget.spend(1)
        env = env.with_value(run.entity(run.scratch))
        if isinstance(step, Check):
            check_condition(step.condition, env)
        elif isinstance(step, Apply):
            changed = apply_effect(run.scratch, step.effect, env, run.applied)
            run.applied += 1
            env.budget.forget_along(run.scratch, changed)  # the state changed in place there
            if run.applied == 1 and run.first_effect_only:
                run.partial = deep_copy(run.scratch)
        elif isinstance(step, Let):
            env = bind(step, env)
        elif isinstance(step, Branch):
            chosen = step.then if evaluate_bool(step.when, env.bindings(), env.budget) else step.otherwise
            run_steps(chosen, env, run)
        else:
            _loop(step, env, run)
    return env


def bind(let: Let, env: TemplateEnv) -> TemplateEnv:
    for name, expr in let.bindings:
        env = env.with_vars(**{name: evaluate(expr, env.bindings(), env.budget)})
    return env


def _loop(loop: Loop, env: TemplateEnv, run: StepRun) -> None:
    items = evaluate(loop.items, env.bindings(), env.budget)
    if not isinstance(items, list):
        raise ToolFailure(
            500, "TWIN_EXPRESSION_ERROR", f"forEach {loop.items.source!r} must be a list, got {type(items).__name__}."
        )
    if len(items) > MAX_LOOP_ITEMS:
        raise ToolFailure(
            500, "TWIN_EXPRESSION_LIMIT", f"forEach {loop.items.source!r} has more than {MAX_LOOP_ITEMS} items."
        )
    for index, item in enumerate(items):
        env.budget.spend(1)  # an iteration costs a step even with an empty body; nested loops multiply
        run_steps(loop.body, env.with_vars(**{loop.name: item, loop.index: index}), run)

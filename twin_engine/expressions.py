"""Expressions of the twin language: CEL (the Common Expression Language) through cel-python.

Why CEL, and why cel-python (PyPI `cel-python`, module `celpy`):

- CEL exists for exactly this job: evaluating expressions written by someone else over JSON-like data
  inside a host program. It is not Turing-complete (no loops, recursion, assignment or I/O), reaches no
  Python object, and its macros (`exists`, `all`, `exists_one`, `filter`, `map`) only walk data that is
  already there. Arithmetic, comparisons, `&&`/`||`/`!`, `?:`, `in`, `has()`, `size()`, `contains`,
  `startsWith`, `endsWith`, `matches` (RE2: linear time), timestamps and durations are built in.
- cel-python is the pure-Python implementation maintained by the Cloud Custodian project (Apache-2.0,
  release 0.5.0, commits through 2026, Python >= 3.10; tested here on 3.11). We run its tree-walking
  interpreter only, never its CompiledRunner (which generates Python source and exec()s it).
- JMESPath, the other candidate, has filters, projections, `sort_by` and `sum`, but no arithmetic and
  no boolean logic across two documents: the arithmetic layer it would need is a hand-written
  evaluator of its own, which this project does not want.

What is added, through cel-python's own extension points (its function table and an Evaluator subclass):

- numbers as JSON has them: an int and a double mix in arithmetic and comparisons (`40 <= 39.5`), and
  double results of `+ - * /`, `sum` and `round` are rounded to 10 decimal places, so that amounts add
  up (`0.1 + 0.2 == 0.3`). Integer division truncates (`7 / 2 == 3`; write `7.0 / 2`).
- functions: `lowerAscii`, `upperAscii`, `trim`, `replace`, `split`, `join`, `sum`, `min`, `max`,
  `abs`, `round`, `sort`, `sortBy`, `reverse`, `flatten`, `keys`, `values`, `get`.
- bounds. Load time: an expression is at most 2,000 characters and 200 syntax-tree levels (about 20
  nested brackets) and may only name the roots and the names in scope (checked with its document line by
  `twin check`). Run time: every call spends from one budget (twin_engine/budget.py) shared with its
  loops, steps and templates - each syntax-tree node visited, each value converted for an expression,
  each element a `x in list` looks at, each text or list built (its size spent *before* it is built).
  Per value: a text of at most 1 MiB, a list or map of at most 10,000 entries, at most 1 MiB of JSON
  handed back (sized before it is converted). Going over the call's budget answers 500
  TWIN_BUDGET_EXCEEDED, over a per-value bound 500 TWIN_EXPRESSION_LIMIT; an expression that fails (a
  missing field, a type mismatch) answers 500 TWIN_EXPRESSION_ERROR. All are twin errors the call record
  keeps; none ever crashes a case.
"""

from __future__ import annotations

import contextvars
import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, Any

from twin_engine.budget import ENTRY_BYTES, Budget, OverBudget, json_size
from twin_engine.failures import ToolFailure

if TYPE_CHECKING:
    import lark

MAX_SOURCE = 2000
MAX_DEPTH = 200  # syntax-tree levels (the deepest expression in the shipped twins has 77; 20 nested () is ~210)
MAX_ITEMS = 10_000
MAX_TEXT = 1 << 20
MAX_RESULT_BYTES = 1 << 20
DECIMALS = 10
EXPR_KEY = "$expr"  # {$expr: "<CEL>"} wherever a template value may stand

# Names every expression may read (what is bound depends on where it stands; see `Scope`).
ROOTS = ("args", "state", "value", "result", "tenant", "idempotency_key", "now", "id", "call", "vars")
MACROS = frozenset({"map", "filter", "all", "exists", "exists_one"})
SPECIAL_FORMS = frozenset({"has", "dyn"})
RESERVED = frozenset(
    {
        "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
        "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while",
    }
)  # fmt: skip
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")

ERROR_CODE = "TWIN_EXPRESSION_ERROR"
LIMIT_CODE = "TWIN_EXPRESSION_LIMIT"


class ExpressionSyntaxError(ValueError):
    """An expression that cannot be used: bad syntax, too long, an unknown function or name."""


class _TooLarge(BaseException):
    """A text, list or map would grow past its bound inside an evaluation."""


@dataclass(frozen=True)
class Expression:
    """A compiled expression: its text, the free names it reads and a ready runner."""

    source: str
    names: frozenset[str]
    runner: Any = field(compare=False, repr=False)
    nesting: int = 0  # comprehensions (map, filter, all, exists, exists_one) inside each other's bodies


# ---------------------------------------------------------------- cel-python glue


@functools.cache
def _celpy() -> Any:
    """cel-python, imported on first use (a twin without expressions never loads it)."""
    import celpy

    return celpy


@functools.cache
def _environment() -> Any:
    celpy = _celpy()
    from celpy.evaluation import Evaluator

    class BoundedEvaluator(Evaluator):
        """cel-python's interpreter, counting every syntax-tree node it visits against the budget."""

        budget: Budget

        def visit(self, tree: lark.Tree[Any]) -> Any:
            self.budget.spend(1)
            return super().visit(tree)

        def visit_children(self, tree: lark.Tree[Any]) -> Any:  # lark visits children without calling visit()
            self.budget.spend(len(tree.children))
            return super().visit_children(tree)

        def sub_evaluator(self, ast: lark.Tree[Any]) -> Any:  # the macros' nested evaluations share the budget
            nested = BoundedEvaluator(ast, activation=self.activation)
            nested.budget = self.budget
            return nested

    class BoundedRunner(celpy.InterpretedRunner):  # type: ignore[misc,name-defined]
        def run(self, context: Mapping[str, Any], budget: Budget) -> Any:
            evaluator = BoundedEvaluator(ast=self.ast, activation=self.new_activation())
            evaluator.budget = budget
            return evaluator.evaluate(dict(context))

    return celpy.Environment(runner_class=BoundedRunner)


def _known_functions() -> frozenset[str]:
    from celpy.evaluation import base_functions

    names = {name for name in base_functions if IDENTIFIER.match(name)}
    return frozenset(names | set(_functions()) | MACROS | SPECIAL_FORMS)


@functools.lru_cache(maxsize=4096)
def compile_expression(source: str) -> Expression:
    """Parse and check one expression (cached by its text); raises ExpressionSyntaxError."""
    if not isinstance(source, str) or not source.strip():
        raise ExpressionSyntaxError("an expression must be a non-empty text")
    if len(source) > MAX_SOURCE:
        raise ExpressionSyntaxError(f"an expression may have at most {MAX_SOURCE} characters, this has {len(source)}")
    celpy = _celpy()
    env = _environment()
    try:
        ast = env.compile(source)
    except celpy.CELParseError as exc:
        raise ExpressionSyntaxError(_parse_message(exc, source)) from None
    except RecursionError:
        raise ExpressionSyntaxError("the expression is nested too deeply") from None
    depth = _depth(ast)
    if depth > MAX_DEPTH:  # the checks below and the interpreter recurse once per level
        raise ExpressionSyntaxError(
            f"the expression is nested {depth} levels deep, at most {MAX_DEPTH} are allowed "
            f"(about 20 nested brackets): {_clip(source, 120)!r}"
        )
    names = _free_names(ast, frozenset(), _known_functions())
    runner = env.program(ast, functions=_functions())
    return Expression(source, frozenset(names), runner, _macro_nesting(ast))


def _depth(tree: Any) -> int:
    """How many levels the syntax tree has, found without recursion."""
    import lark

    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(node, lark.Tree):
            stack.extend((child, level + 1) for child in node.children)
    return deepest


def _macro_nesting(tree: Any) -> int:
    """How deep comprehensions sit inside each other's bodies (`a.map(x, b.map(y, y))` is 2; a chain
    `a.map(x, x).filter(y, y)` is 1): each level multiplies the elements visited."""
    import lark

    deepest = 0
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, lark.Tree):
            continue
        if node.data == "member_dot_arg" and len(node.children) > 1 and str(node.children[1]) in MACROS:
            deepest = max(deepest, depth + 1)
            stack.append((node.children[0], depth))
            stack.extend((child, depth + 1) for child in node.children[2:])
        else:
            stack.extend((child, depth) for child in node.children)
    return deepest


def _parse_message(exc: Exception, source: str) -> str:
    column = getattr(exc, "column", None)
    line = getattr(exc, "line", None)
    where = ""
    if isinstance(column, int) and column > 0:
        where = f" at column {column}" if not line or line == 1 else f" at line {line}, column {column}"
    first = str(exc.args[0]) if exc.args else str(exc)
    detail = first.strip().splitlines()[0] if first.strip() else "invalid syntax"
    return f"expression syntax error{where}: {_clip(detail, 160)} in {_clip(source, 120)!r}"


def _free_names(node: Any, bound: frozenset[str], functions: frozenset[str]) -> set[str]:
    """The names an expression reads that are not bound by one of its own macros.

    Also refuses what twins have no use for: protobuf message construction, leading-dot names and
    functions nobody registered.
    """
    import lark

    found: set[str] = set()
    if not isinstance(node, lark.Tree):
        return found
    kind = node.data
    if kind == "ident":
        name = str(node.children[0])
        if name not in bound:
            found.add(name)
        return found
    if kind in ("member_object", "dot_ident", "dot_ident_arg"):
        raise ExpressionSyntaxError("message construction and leading-dot names are not available in twins")
    if kind == "ident_arg":
        name = str(node.children[0])
        if name not in functions:
            raise ExpressionSyntaxError(f"unknown function {name}()")
        for child in node.children[1:]:
            found |= _free_names(child, bound, functions)
        return found
    if kind == "member_dot_arg":
        target, method = node.children[0], str(node.children[1])
        args = node.children[2] if len(node.children) > 2 else None
        if method in ("reduce", "min"):  # cel-python's own extension macros: not part of the twin language
            raise ExpressionSyntaxError(f".{method}() is not available; write {method}(list) or use .map()/.filter()")
        if method not in functions:
            raise ExpressionSyntaxError(f"unknown function .{method}()")
        found |= _free_names(target, bound, functions)
        exprs = list(args.children) if isinstance(args, lark.Tree) else []
        if method in MACROS:
            variable = _macro_variable(exprs[0] if exprs else None)
            if variable is None:
                raise ExpressionSyntaxError(f".{method}() needs a variable name first, e.g. .{method}(x, ...)")
            inner = bound | {variable}
            for expr in exprs[1:]:
                found |= _free_names(expr, inner, functions)
            return found
        for expr in exprs:
            found |= _free_names(expr, bound, functions)
        return found
    if kind == "member_dot":
        return _free_names(node.children[0], bound, functions)
    for child in node.children:
        found |= _free_names(child, bound, functions)
    return found


def _macro_variable(expr: Any) -> str | None:
    import lark

    node = expr
    while isinstance(node, lark.Tree) and node.data != "ident" and len(node.children) == 1:
        node = node.children[0]  # expr > conditionalor > ... > primary > ident: a bare name only
    if isinstance(node, lark.Tree) and node.data == "ident":
        return str(node.children[0])
    return None


# ---------------------------------------------------------------- evaluation


_CURRENT: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("twin_expression_budget", default=None)


def evaluate(expr: Expression, bindings: Mapping[str, Any], budget: Budget) -> Any:
    """The JSON value of `expr` with `bindings` (JSON values); a failure raises ToolFailure."""
    token = _CURRENT.set(budget)  # the functions below allocate from it before they build
    try:
        context = {name: _cel(value, budget) for name, value in bindings.items() if name in expr.names}
        missing = sorted(expr.names - set(context))
        if missing:
            raise ToolFailure(500, ERROR_CODE, f"Expression {_show(expr)}: {', '.join(missing)} is not available here.")
        result = expr.runner.run(context, budget)
        size = json_size(result, MAX_RESULT_BYTES)
        if size > MAX_RESULT_BYTES:  # sized before it is converted: a value shared a million times stops here
            raise _TooLarge(f"it produced more than {MAX_RESULT_BYTES} bytes")
        budget.allocate(size)
        return _from_cel(result)
    except OverBudget as exc:
        raise exc.failure(f"Expression {_show(expr)}: ") from None
    except _TooLarge as exc:
        raise ToolFailure(500, LIMIT_CODE, f"Expression {_show(expr)}: {exc.args[0]}.") from None
    except RecursionError:
        raise ToolFailure(500, LIMIT_CODE, f"Expression {_show(expr)} nests too deeply.") from None
    except ToolFailure:
        raise
    except Exception as exc:  # boundary: whatever the library raises for this expression is its failure
        raise ToolFailure(500, ERROR_CODE, f"Expression {_show(expr)} failed: {_reason(exc)}.") from None
    finally:
        _CURRENT.reset(token)


def _cel(value: Any, budget: Budget) -> Any:
    """The CEL form of a JSON value, each container converted once per call (cached by identity) and
    each value converted spent as a step."""
    if not isinstance(value, dict | list):
        return _to_cel(value)
    hit = budget.cache.get(id(value))
    if hit is not None and hit[0] is value:
        return hit[1]
    budget.spend(1 + len(value))
    ct = _celpy().celtypes
    converted: Any
    if isinstance(value, list):
        converted = ct.ListType([_cel(v, budget) for v in value])
    else:
        converted = ct.MapType({ct.StringType(str(k)): _cel(v, budget) for k, v in value.items()})
    budget.cache[id(value)] = (value, converted)
    return converted


def _allocate(size: int) -> None:
    """Spend `size` bytes of the running evaluation's budget (before building what they are for)."""
    budget = _CURRENT.get()
    if budget is not None:
        budget.allocate(size)


def evaluate_bool(expr: Expression, bindings: Mapping[str, Any], budget: Budget) -> bool:
    value = evaluate(expr, bindings, budget)
    if not isinstance(value, bool):
        raise ToolFailure(
            500, ERROR_CODE, f"Expression {_show(expr)} must be true or false, got {_clip(repr(value), 80)}."
        )
    return value


def _show(expr: Expression) -> str:
    return repr(_clip(expr.source, 120))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _reason(exc: BaseException) -> str:
    """cel-python's message without the activation dump it sometimes carries."""
    first = exc.args[0] if exc.args else exc
    text = str(first)
    text = text.split(" (in activation", 1)[0]
    text = re.sub(r"<class '(?:celpy\.celtypes\.)?([A-Za-z]+)'>", r"\1", text)
    return _clip(" ".join(text.split()), 300)


# ---------------------------------------------------------------- JSON <-> CEL


def _to_cel(value: Any) -> Any:
    ct = _celpy().celtypes
    if value is None:
        return None
    if isinstance(value, bool):
        return ct.BoolType(value)
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            return ct.DoubleType(float(value))
        return ct.IntType(value)
    if isinstance(value, float):
        return ct.DoubleType(value)
    if isinstance(value, str):
        return ct.StringType(value)
    if isinstance(value, list | tuple):
        return ct.ListType([_to_cel(v) for v in value])
    if isinstance(value, dict):
        return ct.MapType({ct.StringType(str(k)): _to_cel(v) for k, v in value.items()})
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def _from_cel(value: Any) -> Any:
    ct = _celpy().celtypes
    if value is None or isinstance(value, ct.NullType):
        return None
    if isinstance(value, ct.BoolType | bool):
        return bool(value)
    if isinstance(value, ct.DoubleType | float):
        number = float(value)
        if not math.isfinite(number):
            raise ValueError("the result is not a finite number")
        return round(number, DECIMALS)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, ct.TimestampType):
        return _timestamp_text(value)
    if isinstance(value, ct.DurationType):
        seconds = value.total_seconds()
        return f"{int(seconds) if seconds.is_integer() else seconds}s"
    if isinstance(value, list):
        return [_from_cel(v) for v in value]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            text = ("true" if key else "false") if isinstance(key, bool | ct.BoolType) else str(key)
            out[text] = _from_cel(item)
        return out
    if isinstance(value, BaseException):
        raise value
    raise ValueError(f"a {type(value).__name__} is not a JSON value")


def _timestamp_text(value: datetime) -> str:
    moment = value.astimezone(UTC)
    if moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------- functions


def _is_number(value: Any) -> bool:
    ct = _celpy().celtypes
    return isinstance(value, ct.IntType | ct.UintType | ct.DoubleType) and not isinstance(value, ct.BoolType)


def _double(value: Any) -> Any:
    ct = _celpy().celtypes
    return ct.DoubleType(round(float(value), DECIMALS))


def _check_size(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_TEXT:
        raise _TooLarge(f"a text longer than {MAX_TEXT} characters")
    if isinstance(value, list | dict) and len(value) > MAX_ITEMS:
        raise _TooLarge(f"a list or map of more than {MAX_ITEMS} entries")
    return value


def _reserve_text(length: int) -> None:
    """Refuse, or spend, a text of `length` characters before it is built."""
    if length > MAX_TEXT:
        raise _TooLarge(f"a text longer than {MAX_TEXT} characters")
    _allocate(length)


def _reserve_items(count: int) -> None:
    """Refuse, or spend, a list or map of `count` entries before it is built."""
    if count > MAX_ITEMS:
        raise _TooLarge(f"a list or map of more than {MAX_ITEMS} entries")
    _allocate(count * ENTRY_BYTES)


def _arithmetic(name: str) -> Callable[[Any, Any], Any]:
    from celpy.evaluation import CELEvalError, base_functions

    base = base_functions[name]

    def operator(left: Any, right: Any) -> Any:
        if isinstance(left, CELEvalError):
            return left
        if isinstance(right, CELEvalError):
            return right
        ct = _celpy().celtypes
        doubles = isinstance(left, ct.DoubleType) or isinstance(right, ct.DoubleType)
        if _is_number(left) and _is_number(right) and doubles:
            if name == "_/_" and float(right) == 0:
                raise ZeroDivisionError("divide by zero")
            if name == "_%_":
                return base(left, right)  # CEL has no double modulo: keep the library's error
            return _double(base(ct.DoubleType(left), ct.DoubleType(right)))
        if name == "_+_" and isinstance(left, str) and isinstance(right, str):
            _reserve_text(len(left) + len(right))
        elif name == "_+_" and isinstance(left, list) and isinstance(right, list):
            _reserve_items(len(left) + len(right))
        return _check_size(base(left, right))

    return operator


def _comparison(name: str) -> Callable[[Any, Any], Any]:
    from celpy.evaluation import CELEvalError, base_functions

    base = base_functions[name]

    def operator(left: Any, right: Any) -> Any:
        if isinstance(left, CELEvalError):
            return left
        if isinstance(right, CELEvalError):
            return right
        ct = _celpy().celtypes
        if _is_number(left) and _is_number(right) and type(left) is not type(right):
            return base(ct.DoubleType(left), ct.DoubleType(right))
        return base(left, right)

    return operator


def _membership() -> Callable[[Any, Any], Any]:
    """`x in list` looks at every entry: one step each, as if the list were walked by a macro."""
    from celpy.evaluation import base_functions

    base = base_functions["_in_"]

    def operator(item: Any, container: Any) -> Any:
        budget = _CURRENT.get()
        if budget is not None and isinstance(container, list):
            budget.spend(len(container))
        return base(item, container)

    return operator


def _numbers(values: Any, what: str) -> list[Any]:
    if not isinstance(values, list):
        raise TypeError(f"{what}() needs a list")
    if not all(_is_number(v) for v in values):
        raise TypeError(f"{what}() needs a list of numbers")
    return list(values)


def _sum(values: Any) -> Any:
    ct = _celpy().celtypes
    numbers = _numbers(values, "sum")
    if all(isinstance(v, ct.IntType | ct.UintType) for v in numbers):
        return ct.IntType(sum(int(v) for v in numbers))
    return _double(math.fsum(float(v) for v in numbers))


def _sort_key(value: Any) -> tuple[int, Any]:
    if _is_number(value):
        return (0, float(value))
    if isinstance(value, str):
        return (1, str(value))
    raise TypeError("only numbers and texts can be sorted")


def _sortable(values: Any, what: str) -> list[Any]:
    if not isinstance(values, list):
        raise TypeError(f"{what}() needs a list")
    kinds = {_sort_key(v)[0] for v in values}
    if len(kinds) > 1:
        raise TypeError(f"{what}() cannot order numbers and texts together")
    return list(values)


def _sort(values: Any) -> Any:
    ct = _celpy().celtypes
    _reserve_items(len(values) if isinstance(values, list) else 0)
    return ct.ListType(sorted(_sortable(values, "sort"), key=_sort_key))


def _sort_by(values: Any, key: Any) -> Any:
    ct = _celpy().celtypes
    if not isinstance(values, list) or not all(isinstance(v, dict) and key in v for v in values):
        raise TypeError(f"sortBy() needs a list of maps that all have {str(key)!r}")
    _sortable([v[key] for v in values], "sortBy")
    return ct.ListType(sorted(values, key=lambda v: _sort_key(v[key])))


def _extreme(pick: Callable[..., Any], what: str) -> Callable[[Any], Any]:
    def choose(values: Any) -> Any:
        items = _sortable(values, what)
        if not items:
            raise ValueError(f"{what}() of an empty list")
        return pick(items, key=_sort_key)

    return choose


def _round(value: Any, digits: Any = None) -> Any:
    ct = _celpy().celtypes
    places = 0 if digits is None else int(digits)
    if not 0 <= places <= DECIMALS or not _is_number(value):
        raise TypeError(f"round() needs a number and 0-{DECIMALS} digits")
    if isinstance(value, ct.IntType | ct.UintType):
        return value
    exact = Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    return ct.IntType(int(exact)) if places == 0 else ct.DoubleType(float(exact))


def _abs(value: Any) -> Any:
    if not _is_number(value):
        raise TypeError("abs() needs a number")
    return type(value)(abs(value))


def _flatten(values: Any) -> Any:
    ct = _celpy().celtypes
    if not isinstance(values, list):
        raise TypeError("flatten() needs a list")
    _reserve_items(sum(len(item) if isinstance(item, list) else 1 for item in values))
    out: list[Any] = []
    for item in values:
        if isinstance(item, list):
            out.extend(item)
        else:
            out.append(item)
    return ct.ListType(out)


def _keys(mapping: Any) -> Any:
    ct = _celpy().celtypes
    if not isinstance(mapping, dict):
        raise TypeError("keys() needs a map")
    _reserve_items(len(mapping))
    return ct.ListType(sorted(mapping, key=_sort_key))


def _values(mapping: Any) -> Any:
    ct = _celpy().celtypes
    if not isinstance(mapping, dict):
        raise TypeError("values() needs a map")
    _reserve_items(len(mapping))
    return ct.ListType([mapping[k] for k in sorted(mapping, key=_sort_key)])


def _get(mapping: Any, key: Any, default: Any = None) -> Any:
    if isinstance(mapping, dict):
        return mapping.get(key, default)
    if isinstance(mapping, list) and _is_number(key) and float(key).is_integer():
        index = int(key)
        return mapping[index] if -len(mapping) <= index < len(mapping) else default
    raise TypeError("get() needs a map or a list")


def _text(function: Callable[..., str]) -> Callable[..., Any]:
    """A function of one text that gives a text no longer than it (case, trim)."""

    def apply(value: Any) -> Any:
        ct = _celpy().celtypes
        if not isinstance(value, str):
            raise TypeError("needs texts")
        _reserve_text(len(value))
        return ct.StringType(function(str(value)))

    return apply


def _replace(value: Any, old: Any, new: Any) -> Any:
    ct = _celpy().celtypes
    if not all(isinstance(v, str) for v in (value, old, new)):
        raise TypeError("replace() needs texts")
    text, old, new = str(value), str(old), str(new)
    if not old:
        return ct.StringType(text)
    _reserve_text(len(text) + text.count(old) * (len(new) - len(old)))
    return ct.StringType(text.replace(old, new))


def _split(value: Any, separator: Any) -> Any:
    ct = _celpy().celtypes
    if not isinstance(value, str) or not isinstance(separator, str) or not separator:
        raise TypeError("split() needs a text and a non-empty separator")
    _reserve_items(str(value).count(str(separator)) + 1)
    _reserve_text(len(value))
    return ct.ListType([ct.StringType(p) for p in str(value).split(str(separator))])


def _join(values: Any, separator: Any = "") -> Any:
    ct = _celpy().celtypes
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values) or not isinstance(separator, str):
        raise TypeError("join() needs a list of texts")
    _reserve_text(sum(len(v) for v in values) + len(separator) * max(len(values) - 1, 0))
    return ct.StringType(str(separator).join(str(v) for v in values))


def _reverse(values: Any) -> Any:
    ct = _celpy().celtypes
    if not isinstance(values, list):
        raise TypeError("reverse() needs a list")
    _reserve_items(len(values))
    return ct.ListType(list(reversed(values)))


@functools.cache
def _functions() -> dict[str, Callable[..., Any]]:
    functions: dict[str, Callable[..., Any]] = {name: _arithmetic(name) for name in ("_+_", "_-_", "_*_", "_/_", "_%_")}
    functions.update({name: _comparison(name) for name in ("_<_", "_<=_", "_>_", "_>=_", "_==_", "_!=_")})
    functions["_in_"] = _membership()
    functions.update(
        {
            "lowerAscii": _text(lambda s: "".join(c.lower() if c.isascii() else c for c in s)),
            "upperAscii": _text(lambda s: "".join(c.upper() if c.isascii() else c for c in s)),
            "trim": _text(str.strip),
            "replace": _replace,
            "split": _split,
            "join": _join,
            "sum": _sum,
            "min": _extreme(min, "min"),
            "max": _extreme(max, "max"),
            "abs": _abs,
            "round": _round,
            "sort": _sort,
            "sortBy": _sort_by,
            "reverse": _reverse,
            "flatten": _flatten,
            "keys": _keys,
            "values": _values,
            "get": _get,
        }
    )
    return functions


def function_names() -> tuple[str, ...]:
    """Every function an expression may call (for documentation and error messages)."""
    return tuple(sorted(_known_functions()))


def check_names(expr: Expression, allowed: Iterable[str]) -> None:
    """Refuse an expression that reads a name not bound where it stands."""
    unknown = sorted(expr.names - set(allowed))
    if unknown:
        known = ", ".join(sorted(set(allowed)))
        raise ExpressionSyntaxError(f"unknown name {unknown[0]!r} in {_clip(expr.source, 120)!r} (names here: {known})")

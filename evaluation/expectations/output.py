"""Output expectations over the agent's answer (a claim, checked as text), plus semantic's skip."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError

from evaluation.expectations._spec import Finding, InvalidExpectationError, Spec, failed, passed, skipped
from evaluation.expectations._text import contains_text
from evaluation.expectations.context import EvalContext
from evaluation.results import Evidence
from twin_engine.compare import check, regex_search, show
from twin_engine.paths import MISSING, get_path

JSON = Any

SEMANTIC_SKIP_REASON = "Not judged in simulation: an evaluation run's judge grades it."

_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n?```\s*$", re.DOTALL)
_NOT_JSON = object()


def _quote(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _output_evidence(ctx: EvalContext) -> tuple[Evidence, ...]:
    return (Evidence(kind="output", detail=f"Output: {_quote(ctx.output or '')}"),)


# outputContains / outputNotContains 1.0.0 compare text as written (NFKC + casefold); 1.1.0 also normalises
# amounts on both sides ($1,939.05 = 1939.05, 40.00 USD = 40 USD) and never matches a number inside another.
PLAIN_TEXT = "1.0.0"


REPLIES_SHOWN = 3


def _all_replies(spec: Spec) -> bool:
    every = spec.raw.get("allMessages", False)
    if not isinstance(every, bool):
        raise InvalidExpectationError("allMessages must be true or false")
    return every


def _replies(ctx: EvalContext) -> tuple[str, ...]:
    """Every reply the agent sent: one per turn of a conversation, else the one reply."""
    if ctx.turns:
        return tuple(t.output for t in ctx.turns if t.output is not None)
    return (ctx.output,) if ctx.output is not None else ()


def _replies_evidence(ctx: EvalContext, replies: tuple[str, ...]) -> tuple[Evidence, ...]:
    shown = replies[-REPLIES_SHOWN:]
    first = len(replies) - len(shown) + 1
    return tuple(Evidence(kind="output", detail=f"Reply {first + i}: {_quote(t)}") for i, t in enumerate(shown))


def evaluate_output_contains(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    value = spec.text("value")
    amounts = version != PLAIN_TEXT
    if _all_replies(spec):
        replies = _replies(ctx)
        hits = [n for n, text in enumerate(replies, start=1) if contains_text(text, value, amounts=amounts)]
        if hits:
            return passed(f"Reply {hits[0]} of {len(replies)} contains {value!r}.")
        if not replies:
            return failed("The agent gave no output.", None)
        return failed(f"No reply of the agent contains {value!r}.", "OUTPUT_MISMATCH", _replies_evidence(ctx, replies))
    if ctx.output is None:
        return failed("The agent gave no output.", None)
    if contains_text(ctx.output, value, amounts=amounts):
        return passed(f"The output contains {value!r}.")
    return failed(f"The output does not contain {value!r}.", "OUTPUT_MISMATCH", _output_evidence(ctx))


def evaluate_output_not_contains(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    value = spec.text("value")
    amounts = version != PLAIN_TEXT
    if _all_replies(spec):
        replies = _replies(ctx)
        hits = [n for n, text in enumerate(replies, start=1) if contains_text(text, value, amounts=amounts)]
        if not hits:
            return passed(f"No reply of the agent contains {value!r}.")
        shown = (Evidence(kind="output", detail=f"Reply {hits[0]}: {_quote(replies[hits[0] - 1])}"),)
        return failed(f"Reply {hits[0]} of {len(replies)} contains {value!r}.", "OUTPUT_MISMATCH", shown)
    if ctx.output is None or not contains_text(ctx.output, value, amounts=amounts):
        return passed(f"The output does not contain {value!r}.")
    return failed(f"The output contains {value!r}.", "OUTPUT_MISMATCH", _output_evidence(ctx))


def evaluate_output_regex(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    pattern = spec.pattern("pattern")
    if ctx.output is None:
        return failed("The agent gave no output.", None)
    # A timeout here raises UnsafePatternError, which the registry reports as an evaluator ERROR.
    if regex_search(pattern, ctx.output):
        return passed(f"The output matches {show(pattern)}.")
    return failed(f"The output does not match {show(pattern)}.", "OUTPUT_MISMATCH", _output_evidence(ctx))


def parse_output_json(output: str | None) -> JSON:
    """The output as JSON (one ``` fence stripped), or _NOT_JSON."""
    if output is None:
        return _NOT_JSON
    fenced = _FENCE.match(output)
    text = fenced.group(1) if fenced else output
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON


def evaluate_output_json_schema(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    schema = spec.raw.get("schema")
    if not isinstance(schema, dict):
        raise InvalidExpectationError("schema must be an object")
    validator_class = jsonschema.validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except SchemaError as exc:
        raise InvalidExpectationError(f"schema is not a valid JSON Schema: {exc.message}") from None
    document = parse_output_json(ctx.output)
    if document is _NOT_JSON:
        return failed("The output is not JSON.", "OUTPUT_NOT_JSON", _output_evidence(ctx))
    problems = sorted(validator_class(schema).iter_errors(document), key=lambda e: list(map(str, e.path)))
    if not problems:
        return passed("The output matches the schema.")
    first = problems[0]
    where = "/".join(map(str, first.path)) or "the top level"
    evidence = tuple(
        Evidence(kind="output", detail=f"{'/'.join(map(str, p.path)) or '(root)'}: {p.message}")
        for p in problems[:5]
    )
    return failed(
        f"The output does not match the schema at {where}: {first.message}", "OUTPUT_SCHEMA", evidence
    )


def evaluate_output_json_path(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    path, comparators = spec.path(), spec.comparators()
    document = parse_output_json(ctx.output)
    if document is _NOT_JSON:
        return failed("The output is not JSON.", "OUTPUT_NOT_JSON", _output_evidence(ctx))
    value = get_path(document, path)
    result = check(value, value is not MISSING, comparators)
    evidence = (
        Evidence(
            kind="output",
            detail=f"{path} = {show(value)}",
            ref=path,
            expected=comparators or {"exists": True},
            actual=None if value is MISSING else value,
        ),
    )
    if result.ok:
        return passed(f"Output {path}: {result.reason}.", evidence)
    return failed(f"Output {path}: {result.reason}.", "OUTPUT_MISMATCH", evidence)


def evaluate_semantic(spec: Spec, ctx: EvalContext, version: str) -> Finding:
    spec.text("rubric")
    if spec.has("threshold"):
        threshold = spec.number("threshold")
        if threshold > 1:
            raise InvalidExpectationError("threshold must be between 0 and 1")
    return skipped(SEMANTIC_SKIP_REASON)

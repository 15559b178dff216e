"""The twenty fault types and the fault rules of a scenario (spec §3).

Every fault type is defined by two facts: what the dependency did to the state, and what the
caller sees. `FAULTS` holds both as data; TwinCase.call carries them out.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from twin_engine.compare import contains
from twin_engine.errors import DefinitionError
from twin_engine.handlers import ErrorSpec
from twin_engine.paths import MISSING
from twin_engine.templates import TemplateSyntaxError, check_template

MAX_RULES = 50


@dataclass(frozen=True)
class FaultSpec:
    """One fault type. `state` is what happened to the dependency's state:

    - "none": the tool did not run;
    - "normal": it ran and committed as usual;
    - "discarded": it ran and nothing was committed (success_without_mutation);
    - "first_effect": only the first effect was committed (inconsistent_state);
    - "stale": it ran and committed, but answered from old state;
    - "twice": it was delivered (and executed) twice.

    `error` is the reply the caller gets instead of the real one (None = the real reply or a
    transport failure named by `transport`).
    """

    name: str
    state: str
    error: ErrorSpec | None = None
    transport: str | None = None  # "dropped" | "partial" | "malformed"
    retry_after_default: float | None = None  # seconds; None = header only when configured
    default_delay_ms: int = 0
    error_only_on_success: bool = False  # replaces the reply only when the real call succeeded

    @property
    def executes(self) -> bool:
        return self.state != "none"


_TIMEOUT = ErrorSpec(504, "TIMEOUT", "The upstream timed out.")
_RATE = ErrorSpec(429, "RATE_LIMITED", "Too many requests.")

FAULTS: Mapping[str, FaultSpec] = {
    spec.name: spec
    for spec in (
        FaultSpec("timeout_before_mutation", "none", _TIMEOUT),
        FaultSpec("timeout_after_mutation", "normal", _TIMEOUT),
        FaultSpec("http_429", "none", _RATE, retry_after_default=1),
        FaultSpec("rate_limit", "none", _RATE, retry_after_default=1),
        FaultSpec("http_500", "none", ErrorSpec(500, "UPSTREAM_ERROR", "Upstream error.")),
        FaultSpec("http_503", "none", ErrorSpec(503, "UNAVAILABLE", "The service is unavailable.")),
        FaultSpec(
            "transient_unavailable",
            "none",
            ErrorSpec(503, "TRANSIENT_UNAVAILABLE", "The service is temporarily unavailable; retry later."),
            retry_after_default=1,
        ),
        FaultSpec(
            "permanent_unavailable",
            "none",
            ErrorSpec(503, "PERMANENTLY_UNAVAILABLE", "The service is permanently unavailable; do not retry."),
        ),
        FaultSpec(
            "non_retryable_error",
            "none",
            ErrorSpec(422, "NON_RETRYABLE_ERROR", "The request cannot be processed; do not retry."),
        ),
        FaultSpec("auth_denied", "none", ErrorSpec(403, "AUTH_DENIED", "The credentials were rejected.")),
        FaultSpec("dropped_connection", "none", transport="dropped"),
        FaultSpec("partial_response", "normal", transport="partial"),
        FaultSpec("malformed_json", "normal", transport="malformed"),
        FaultSpec("delay", "normal", default_delay_ms=1000),
        FaultSpec("stale_response", "stale"),
        FaultSpec("duplicate_response", "normal"),
        FaultSpec("semantic_bad_response", "normal"),
        FaultSpec(
            "inconsistent_state",
            "first_effect",
            ErrorSpec(500, "INCONSISTENT_STATE", "The operation failed after partially applying its changes."),
            error_only_on_success=True,
        ),
        FaultSpec("success_without_mutation", "discarded"),
        FaultSpec("message_duplication", "twice"),
    )
}
FAULT_TYPES = tuple(FAULTS)


@dataclass(frozen=True)
class FaultBehavior:
    type: str
    delay_ms: int | None = None
    retry_after_seconds: float | None = None
    body: Any = MISSING  # template; `{result}` is the real result
    message: str | None = None

    @property
    def spec(self) -> FaultSpec:
        return FAULTS[self.type]

    @property
    def effective_delay_ms(self) -> int:
        return self.delay_ms if self.delay_ms is not None else self.spec.default_delay_ms

    def retry_after(self) -> str | None:
        """The Retry-After header text, or None when the fault sends none."""
        seconds = self.retry_after_seconds
        if seconds is None:
            seconds = self.spec.retry_after_default
        return None if seconds is None else retry_after_text(seconds)

    def error(self) -> ErrorSpec | None:
        spec_error = self.spec.error
        if spec_error is None or self.message is None:
            return spec_error
        return ErrorSpec(spec_error.status, spec_error.code, self.message)


@dataclass(frozen=True)
class FaultRule:
    index: int  # position in spec.faults (0-based), part of the probability seed
    target: str  # a tool name or "*"
    behavior: FaultBehavior
    call_number: int | None = None
    call_numbers: tuple[int, ...] | None = None
    first_n: int | None = None
    args_match: Any = None
    probability: float | None = None

    def applies(self, tool: str, call_number: int, arguments: Any, seed: int) -> bool:
        if self.target not in ("*", tool):
            return False
        if self.call_number is not None and call_number != self.call_number:
            return False
        if self.call_numbers is not None and call_number not in self.call_numbers:
            return False
        if self.first_n is not None and call_number > self.first_n:
            return False
        if self.args_match is not None and not contains(arguments, self.args_match):
            return False
        return self.probability is None or draw(seed, self.index, tool, call_number) < self.probability


def draw(seed: int, rule_index: int, tool: str, call_number: int) -> float:
    """The seeded draw of one rule for one call: depends on nothing else (not on timing)."""
    return random.Random(f"{seed}|{rule_index}|{tool}|{call_number}").random()


def select_fault(
    rules: Sequence[FaultRule], tool: str, call_number: int, arguments: Any, seed: int
) -> FaultRule | None:
    """The first rule (in list order) that applies to this call; at most one fault per call."""
    for rule in rules:
        if rule.applies(tool, call_number, arguments, seed):
            return rule
    return None


def case_seed(run_seed: int, scenario_name: str, scenario_seed: int | None) -> int:
    """The scenario's own seed, else the first 4 bytes (big-endian) of SHA-256("{run}:{name}")."""
    if scenario_seed is not None:
        return scenario_seed
    digest = hashlib.sha256(f"{run_seed}:{scenario_name}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def retry_after_text(seconds: float) -> str:
    """Integer text when whole ("1"), else %g ("0.5")."""
    if float(seconds).is_integer():
        return str(int(seconds))
    return f"{seconds:g}"


def compile_fault_rules(raw: Iterable[Mapping[str, Any]], where: str = "spec.faults") -> tuple[FaultRule, ...]:
    """Check and compile a scenario's `spec.faults` (already schema-valid)."""
    rules: list[FaultRule] = []
    for index, item in enumerate(raw):
        at = f"{where}[{index}]"
        if index >= MAX_RULES:
            raise DefinitionError(f"at most {MAX_RULES} fault rules", path=at)
        behavior = item.get("behavior") or {}
        kind = behavior.get("type")
        if kind not in FAULTS:
            raise DefinitionError(f"unknown fault type {kind!r}", path=f"{at}.behavior.type")
        body = behavior.get("body", MISSING)
        if kind == "semantic_bad_response" and body is MISSING:
            raise DefinitionError("semantic_bad_response needs a body", path=f"{at}.behavior.body")
        if body is not MISSING:
            try:
                check_template(body, allow_result=True)
            except TemplateSyntaxError as exc:
                raise DefinitionError(exc.message, path=f"{at}.behavior.body{exc.where}") from exc
        target = item.get("target")
        if not isinstance(target, str) or not 1 <= len(target) <= 100:
            raise DefinitionError("a fault target is a tool name or '*'", path=f"{at}.target")
        when = item.get("when") or {}
        numbers = when.get("callNumbers")
        rules.append(
            FaultRule(
                index=index,
                target=target,
                behavior=FaultBehavior(
                    type=str(kind),
                    delay_ms=behavior.get("delayMs"),
                    retry_after_seconds=behavior.get("retryAfterSeconds"),
                    body=body,
                    message=behavior.get("message"),
                ),
                call_number=when.get("callNumber"),
                call_numbers=tuple(numbers) if numbers is not None else None,
                first_n=when.get("firstN"),
                args_match=when.get("argsMatch"),
                probability=when.get("probability"),
            )
        )
    return tuple(rules)


def check_targets(rules: Sequence[FaultRule], tools: Iterable[str], where: str = "spec.faults") -> None:
    """Every target must name a twin tool (or be '*')."""
    known = set(tools)
    for rule in rules:
        if rule.target != "*" and rule.target not in known:
            raise DefinitionError(
                f"fault target {rule.target!r} is not a tool of the twin",
                path=f"{where}[{rule.index}].target",
            )

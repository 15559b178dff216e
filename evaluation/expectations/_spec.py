"""An expectation document read with checked types, and what an evaluator returns.

Evaluators read fields through `Spec`, which raises InvalidExpectationError for a missing or
mistyped field; the registry turns that into an ERROR result (label EVALUATOR_ERROR).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evaluation.results import ERROR, FAIL, PASS, SKIPPED, Evidence, ExpectationMeta
from twin_engine.compare import COMPARATORS, UnsafePatternError, is_number, regex_search
from twin_engine.paths import PathError, parse_path

JSON = Any

# The fields of an expectation (scenario.v1 `$defs/expectation`); anything else is a typo.
KNOWN_FIELDS = frozenset(
    {
        "type", "id", "critical", "description", "category", "path", "tool", "value",
        "equals", "notEquals", "in", "exists", "gte", "lte", "gt", "lt", "matches",
        "min", "call", "status", "mustCall", "before", "pattern", "schema", "secrets",
        "rubric", "threshold", "judge", "calls", "paths", "ignore", "target", "allMessages",
    }
)  # fmt: skip


class InvalidExpectationError(ValueError):
    """The expectation document is broken: a field is missing, mistyped or unusable."""


def expectation_meta(raw: Mapping[str, JSON], index: int) -> ExpectationMeta:
    """Meta of the expectation at (0-based) `index`; tolerant, so a broken document still has one."""
    ident = raw.get("id")
    kind = raw.get("type")
    return ExpectationMeta(
        id=ident if isinstance(ident, str) and ident else f"e{index + 1}",
        type=kind if isinstance(kind, str) and kind else "unknown",
        critical=raw.get("critical") is True,
        description=_optional_text(raw, "description"),
        category=_optional_text(raw, "category"),
        tool=_optional_text(raw, "tool"),
        path=_optional_text(raw, "path"),
    )


def _optional_text(raw: Mapping[str, JSON], name: str) -> str | None:
    value = raw.get(name)
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class Spec:
    """Typed access to one expectation's fields."""

    raw: Mapping[str, JSON]
    meta: ExpectationMeta

    def check_fields(self) -> None:
        unknown = sorted(set(self.raw) - KNOWN_FIELDS)
        if unknown:
            raise InvalidExpectationError(f"unknown field(s): {', '.join(map(str, unknown))}")
        critical = self.raw.get("critical")
        if critical is not None and not isinstance(critical, bool):
            raise InvalidExpectationError("critical must be true or false")

    def has(self, name: str) -> bool:
        return name in self.raw and self.raw[name] is not None

    def text(self, name: str) -> str:
        value = self.raw.get(name)
        if not isinstance(value, str) or not value:
            raise InvalidExpectationError(f"{name} must be a non-empty text")
        return value

    def optional_text(self, name: str) -> str | None:
        return self.text(name) if self.has(name) else None

    def number(self, name: str) -> float:
        value: Any = self.raw.get(name)
        if not is_number(value) or not math.isfinite(value) or value < 0:
            raise InvalidExpectationError(f"{name} must be a number >= 0, got {value!r}")
        return float(value)

    def optional_number(self, name: str, default: float) -> float:
        return self.number(name) if self.has(name) else default

    def integer(self, name: str, minimum: int, maximum: int | None = None) -> int:
        value: Any = self.raw.get(name)
        if isinstance(value, bool) or not isinstance(value, int):
            ok = False
        else:
            ok = value >= minimum and (maximum is None or value <= maximum)
        if not ok:
            bounds = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
            raise InvalidExpectationError(f"{name} must be an integer {bounds}, got {value!r}")
        return int(value)

    def optional_integer(self, name: str, minimum: int) -> int | None:
        return self.integer(name, minimum) if self.has(name) else None

    def texts(self, name: str) -> tuple[str, ...]:
        value = self.raw.get(name)
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
            raise InvalidExpectationError(f"{name} must be a non-empty list of texts")
        return tuple(value)

    def path(self) -> str:
        path = self.text("path")
        try:
            parse_path(path)
        except PathError as exc:
            raise InvalidExpectationError(str(exc)) from None
        return path

    def comparators(self) -> dict[str, JSON]:
        """The comparator fields, each checked for the type its comparator needs."""
        found = {name: self.raw[name] for name in COMPARATORS if name in self.raw}
        for name, value in found.items():
            if name in ("gte", "lte", "gt", "lt") and not is_number(value):
                raise InvalidExpectationError(f"{name} must be a number, got {value!r}")
            if name == "in" and not isinstance(value, list):
                raise InvalidExpectationError(f"in must be a list, got {value!r}")
            if name == "exists" and not isinstance(value, bool):
                raise InvalidExpectationError(f"exists must be true or false, got {value!r}")
            if name == "matches":
                self.pattern("matches")
        return found

    def pattern(self, name: str) -> str:
        """A regex field, refused here when it is invalid or unsafe."""
        pattern = self.raw.get(name)
        if not isinstance(pattern, str):
            raise InvalidExpectationError(f"{name} must be a text pattern, got {pattern!r}")
        try:
            regex_search(pattern, "")
        except UnsafePatternError as exc:
            raise InvalidExpectationError(str(exc)) from None
        return pattern


@dataclass(frozen=True)
class Finding:
    """What an evaluator concluded, before the registry adds identity and versions."""

    status: str
    reason: str
    label: str | None = None
    evidence: tuple[Evidence, ...] = ()
    details: dict[str, JSON] = field(default_factory=dict)


def passed(reason: str, evidence: tuple[Evidence, ...] = (), **details: JSON) -> Finding:
    return Finding(PASS, reason, None, evidence, dict(details))


def failed(reason: str, label: str | None, evidence: tuple[Evidence, ...] = (), **details: JSON) -> Finding:
    return Finding(FAIL, reason, label, evidence, dict(details))


def skipped(reason: str) -> Finding:
    return Finding(SKIPPED, reason)


def errored(reason: str, label: str = "EVALUATOR_ERROR") -> Finding:
    return Finding(ERROR, reason, label)

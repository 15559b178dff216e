"""Checks a verdict on receipt: schema, value ranges, and evidence quotes that occur in the material."""

from __future__ import annotations

import math
from typing import Any

import jsonschema

from evaluation.judges.contract import (
    LABEL_FAIL,
    LABEL_PASS,
    MAX_EVIDENCE,
    EvidenceQuote,
    JudgeRequest,
    JudgeVerdict,
)
from evaluation.judges.errors import MALFORMED, JudgeError
from evaluation.judges.material import normalize_for_match
from evaluation.judges.prompt import VERDICT_SCHEMA

_VALIDATOR = jsonschema.Draft202012Validator(VERDICT_SCHEMA)


def _supported(quote: EvidenceQuote, material: dict[str, str]) -> bool:
    source = material.get(quote.ref)
    needle = normalize_for_match(quote.quote)
    return source is not None and bool(needle) and needle in normalize_for_match(source)


def parse_verdict(
    payload: Any, request: JudgeRequest, *, tokens: int | None, cost_usd: float | None
) -> JudgeVerdict:
    """A provider's raw verdict object -> JudgeVerdict, or JudgeError(malformed) naming what was wrong."""
    if not isinstance(payload, dict):
        raise JudgeError(MALFORMED, f"the verdict is a {type(payload).__name__}, not an object")
    errors = sorted(_VALIDATOR.iter_errors(payload), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(root)"
        raise JudgeError(MALFORMED, f"the verdict does not match the schema at {where}: {first.message}")
    material = request.material()
    quotes = [EvidenceQuote(ref=e["ref"], quote=e["quote"]) for e in payload["evidence"]]
    kept = tuple(q for q in quotes if _supported(q, material))
    return ensure_verdict(
        JudgeVerdict(
            score=float(payload["score"]),
            label=payload["label"],
            confidence=float(payload["confidence"]),
            reason=payload["reason"].strip(),
            evidence=kept,
            tokens=tokens,
            cost_usd=cost_usd,
            unsupported_quotes=len(quotes) - len(kept),
        )
    )


def _unit(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0.0 <= value <= 1.0
    )


def ensure_verdict(verdict: object) -> JudgeVerdict:
    """Whatever a judge returned must be a well-formed JudgeVerdict; anything else is `malformed`."""
    if not isinstance(verdict, JudgeVerdict):
        raise JudgeError(MALFORMED, f"the judge returned a {type(verdict).__name__}, not a verdict")
    problems = []
    if not _unit(verdict.score):
        problems.append(f"score {verdict.score!r} is outside [0, 1]")
    if verdict.label not in (LABEL_PASS, LABEL_FAIL):
        problems.append(f"label {verdict.label!r} is neither pass nor fail")
    if not _unit(verdict.confidence):
        problems.append(f"confidence {verdict.confidence!r} is outside [0, 1]")
    if not isinstance(verdict.reason, str) or not verdict.reason.strip() or len(verdict.reason) > 1000:
        problems.append("reason must be 1-1000 characters")
    if len(verdict.evidence) > MAX_EVIDENCE:
        problems.append(f"{len(verdict.evidence)} evidence quotes (at most {MAX_EVIDENCE})")
    if verdict.cost_usd is not None and not (math.isfinite(verdict.cost_usd) and verdict.cost_usd >= 0):
        problems.append(f"cost {verdict.cost_usd!r} is not a non-negative amount")
    if problems:
        raise JudgeError(MALFORMED, "; ".join(problems))
    return verdict

"""Verdict cache keys and hits; the per-run budget."""

from __future__ import annotations

from dataclasses import replace

import pytest

from evaluation.judges import JudgeBudget, KeywordOverlapJudge, VerdictCache, build_request, cache_key
from evaluation.judges.contract import JudgeRequest

from .conftest import BASELINE_ANSWER, LIE_RUBRIC, MESSAGE, record


def request(**overrides: object) -> JudgeRequest:
    base = build_request(
        category="correctness", rubric=LIE_RUBRIC, customer_message=MESSAGE, answer=BASELINE_ANSWER
    )
    return replace(base, **overrides)


def test_key_covers_every_input() -> None:
    identity = KeywordOverlapJudge().identity
    base = cache_key(identity, request())
    assert base == cache_key(identity, request())
    calls = build_request(
        category="correctness",
        rubric=LIE_RUBRIC,
        customer_message=MESSAGE,
        answer=BASELINE_ANSWER,
        records=(record(1, "lookup_order", {"order_id": "ORD-1001"}),),
    ).tool_calls
    variants = [
        cache_key(replace(identity, provider="anthropic"), request()),
        cache_key(replace(identity, model="other"), request()),
        cache_key(replace(identity, prompt_version="judge-prompt/2"), request()),
        cache_key(replace(identity, prompt_sha256="0" * 64), request()),
        cache_key(identity, request(criterion="relevance")),
        cache_key(identity, request(rubric="Another rubric.")),
        cache_key(identity, request(answer="Another answer.")),
        cache_key(identity, request(customer_message="Another message.")),
        cache_key(identity, request(reference="A reference.")),
        cache_key(identity, request(tool_calls=calls)),
        cache_key(identity, request(omitted_tool_calls=3)),
    ]
    assert len({base, *variants}) == len(variants) + 1


def test_hits_are_the_stored_verdict_marked_cached() -> None:
    cache = VerdictCache()
    verdict = KeywordOverlapJudge().judge(request())
    assert cache.get("k") is None
    cache.put("k", verdict)
    hit = cache.get("k")
    assert hit == replace(verdict, cached=True)
    assert len(cache) == 1


def test_budget_counts_calls_and_known_cost() -> None:
    budget = JudgeBudget(max_cost_usd=0.05, max_calls=10)
    assert budget.spent_reason() is None
    budget.charge(0.03)
    budget.charge(None)
    usage = budget.usage()
    assert (usage.calls, usage.cost_usd, usage.unknown_cost_calls) == (2, 0.03, 1)
    assert budget.spent_reason() is None
    budget.charge(0.02)
    assert budget.spent_reason() == "$0.0500 of $0.05 spent"


def test_unknown_cost_calls_use_up_the_call_cap() -> None:
    budget = JudgeBudget(max_calls=2)
    budget.charge(None)
    budget.charge(None)
    assert budget.spent_reason() == "2 of 2 judge calls made"
    assert budget.usage().cost_usd == 0.0


def test_defaults_and_bad_limits() -> None:
    budget = JudgeBudget()
    assert (budget.max_cost_usd, budget.max_calls) == (5.0, 200)
    with pytest.raises(ValueError, match="non-negative"):
        JudgeBudget(max_calls=-1)

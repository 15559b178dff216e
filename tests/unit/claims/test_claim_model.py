"""The opt-in model classifier on the real Anthropic client over a mock transport: a recorded claim is marked
with the model; a model that cannot answer hands the answer to the rules, never guesses."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import pytest

from evaluation.claim_model import AnthropicClaimClassifier, ClaimClassifierSettings, claim_classifier
from evaluation.claim_reader import read_claim


def _classifier(replies: list[Any], seen: list[dict[str, Any]]) -> AnthropicClaimClassifier:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        reply = replies.pop(0)
        return reply if isinstance(reply, httpx.Response) else httpx.Response(200, json=reply)

    client = anthropic.Anthropic(
        api_key="k", max_retries=0, http_client=httpx.Client(transport=httpx.MockTransport(handler))
    )
    return AnthropicClaimClassifier(
        model="claude-test", api_key="k", client=client, sleep=lambda _: None, max_retries=1
    )


def _recorded(claim: str) -> dict[str, Any]:
    return {
        "id": "m",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "tool_use", "id": "t", "name": "record_claim", "input": {"claim": claim}}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def test_a_recorded_claim_is_marked_with_the_model() -> None:
    seen: list[dict[str, Any]] = []
    reading = _classifier([_recorded("ESCALATED")], seen)("A colleague will take it from here.")
    assert (reading.status, reading.inferred_by, reading.rule) == ("ESCALATED", "model:anthropic/claude-test", "model")
    assert seen[0]["tool_choice"] == {"type": "tool", "name": "record_claim"} and seen[0]["temperature"] == 0.0


@pytest.mark.parametrize(
    "replies",
    [
        [httpx.Response(500, json={"error": {}}), httpx.Response(529, json={"error": {}})],
        [_recorded("DONE")],  # not one of the claims
        [httpx.Response(200, content=b"not json")],
    ],
)
def test_a_model_that_cannot_answer_leaves_the_answer_to_the_rules(replies: list[Any]) -> None:
    classifier = _classifier(replies, [])
    answer = "Done! I've refunded 40.00 USD."
    assert classifier(answer) == read_claim(answer) and classifier.failures == 1


def test_the_rules_are_the_default_and_the_model_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AGENTTWIN_CLAIM_CLASSIFIER", "ANTHROPIC_API_KEY", "AGENTTWIN_CLAIM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert claim_classifier() is read_claim
    monkeypatch.setenv("AGENTTWIN_CLAIM_CLASSIFIER", "anthropic")
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        claim_classifier()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    chosen = claim_classifier(ClaimClassifierSettings())
    assert isinstance(chosen, AnthropicClaimClassifier) and chosen.name == "model:anthropic/claude-haiku-4-5"

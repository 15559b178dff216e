"""Reports say when a contradiction's claim was inferred from the final answer, and how (issue 25)."""

from __future__ import annotations

from agenttwin.report_commands import render_contradictions
from agenttwin.stored_evaluation import StoredContradiction
from evaluation.claim_status import describe_inference


def _contradiction(**claim: object) -> StoredContradiction:
    return StoredContradiction(
        scenario="refund-timeout-after-mutation",
        side="CANDIDATE",
        agent="demo:1.3.0",
        claimed="SUCCESS",
        verified="FAILURE",
        detail="refund_count: 2",
        case_id="case-1",
        reply="Done! I've refunded 40.00 USD.",
        tool="refund_payment",
        trace_id="t-1",
        **claim,  # type: ignore[arg-type]
    )


def test_an_inferred_claim_says_so_in_the_report_text_and_its_document() -> None:
    inferred = _contradiction(claim_inferred_by="rules-v2", claim_rule="succeeded", claim_confidence=0.9)
    assert inferred.claimed_as == "SUCCESS (inferred by rules-v2, rule succeeded, confidence 0.90)"
    assert "claimed SUCCESS (inferred by rules-v2, rule succeeded, confidence 0.90), verified FAILURE" in (
        render_contradictions([inferred])
    )
    assert inferred.to_dict()["claim_inferred_by"] == "rules-v2" and inferred.to_dict()["claim_confidence"] == 0.9


def test_a_stated_claim_is_shown_as_stated() -> None:
    stated = _contradiction()
    assert stated.claimed_as == "SUCCESS"
    assert "inferred" not in render_contradictions([stated])


def test_a_model_reading_without_a_confidence_names_its_model() -> None:
    assert describe_inference("model:anthropic/claude-haiku-4-5", "model") == (
        "inferred by model:anthropic/claude-haiku-4-5, rule model"
    )

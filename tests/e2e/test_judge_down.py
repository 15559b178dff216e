"""A judge that can't answer gives ERROR with no score: the case can't pass, and the comparison says INCOMPLETE."""

from __future__ import annotations

from pathlib import Path

from agenttwin.pipeline import evaluation_request, open_embedded, report_for
from agenttwin.settings import Settings
from consumers.embedded_sink import sync
from evaluation.judges.budget import JudgeBudget
from evaluation.judges.cache import VerdictCache
from evaluation.judges.contract import JudgeRequest, JudgeVerdict
from evaluation.judges.errors import JudgeError
from evaluation.judges.fake import KeywordOverlapJudge
from evaluation.results import GradedCase
from evaluation.semantic import judge_case
from streams.processors import Comparator, Grader, OutcomeJoin, Planner, Simulator


class DownJudge(KeywordOverlapJudge):
    """The real fake judge's identity, but every call fails the way a provider outage does."""

    def judge(self, request: JudgeRequest) -> JudgeVerdict:
        raise JudgeError("unavailable", "the judge provider is down")


def test_a_judge_outage_makes_judged_cases_incomplete_never_passed(tmp_path: Path) -> None:
    judge, budget, cache = DownJudge(), JudgeBudget(), VerdictCache()

    def refine(graded: GradedCase) -> GradedCase:
        return judge_case(graded, judge, budget=budget, cache=cache)

    with open_embedded(Settings(), tmp_path) as emb:
        request = evaluation_request(
            "demo:1.2.4",
            "demo:1.3.1",
            suite=["demo"],
            twin=None,
            seed=42,
            evaluation_id=None,
            evaluator_version="1.1.0",
        )
        emb.runtime.publish([request])
        emb.runtime.run([Planner(), Simulator(), Grader("1.1.0", refine), Comparator("1.1.0"), OutcomeJoin()])
        sync(emb.runtime, emb.warehouse)
        report = report_for(emb.runtime, request.evaluation_id, "1.1.0").to_dict()
    cases = {c["scenario"]: c for c in report["cases"]}
    judged = {"refund-happy-path", "refund-over-limit", "refund-tool-success-lie"}  # carry a semantic expectation
    for name, case in cases.items():
        if name in judged:
            assert case["classification"] == "INCOMPLETE", name
            assert case["baseline"]["status"] == "ERRORED"
            semantic = [e for e in case["expectations"] if e["id"].startswith("reply-")]
            assert semantic and all(e["candidate"] == "ERROR" for e in semantic)
        else:
            assert case["classification"] == "UNCHANGED", name

"""Judges for semantic expectations (spec §7.6): the contract, a deterministic fake, two LLM adapters,
the verdict cache, the per-run budget and configuration-driven selection.

- contract: Judge, JudgeIdentity, JudgeRequest, JudgeVerdict, EvidenceQuote
- errors: JudgeError (unavailable, rate_limited, timeout, rejected, malformed, refused, undecided),
  JudgeConfigError
- material / prompt / verdicts: what a judge is shown, the prompt and its hash, checks on receipt
- fake (OfflineJudge, the default without a model key), anthropic (AnthropicJudge),
  openai_compat (OpenAICompatibleJudge); agreement: a judge against labelled triples
- cache (VerdictCache, cache_key), budget (JudgeBudget), settings (JudgeSettings, judge_from_settings)
"""

from evaluation.judges.budget import JudgeBudget
from evaluation.judges.cache import VerdictCache, cache_key
from evaluation.judges.contract import (
    KIND_FAKE,
    KIND_LLM,
    PROMPT_VERSION,
    EvidenceQuote,
    Judge,
    JudgeIdentity,
    JudgeRequest,
    JudgeVerdict,
    ShownToolCall,
)
from evaluation.judges.errors import JUDGE_ERROR_KINDS, JudgeConfigError, JudgeError
from evaluation.judges.fake import KeywordOverlapJudge, OfflineJudge
from evaluation.judges.material import build_request
from evaluation.judges.prompt import CRITERIA, PROMPT_SHA256, criterion_for
from evaluation.judges.settings import JudgeSettings, judge_from_settings

__all__ = [
    "CRITERIA",
    "JUDGE_ERROR_KINDS",
    "KIND_FAKE",
    "KIND_LLM",
    "PROMPT_SHA256",
    "PROMPT_VERSION",
    "EvidenceQuote",
    "Judge",
    "JudgeBudget",
    "JudgeConfigError",
    "JudgeError",
    "JudgeIdentity",
    "JudgeRequest",
    "JudgeSettings",
    "JudgeVerdict",
    "KeywordOverlapJudge",
    "OfflineJudge",
    "ShownToolCall",
    "VerdictCache",
    "build_request",
    "cache_key",
    "criterion_for",
    "judge_from_settings",
]

"""The deterministic keyword-overlap judge (`keyword-overlap-v1`). Not a language model, and says so.

A rubric statement is met when at least half of its content-word stems (words of 4+ characters, minus
stopwords, compared by their first 5 letters) occur in the answer.
"""

from __future__ import annotations

import re
import unicodedata

from evaluation.judges.contract import (
    KIND_FAKE,
    LABEL_FAIL,
    LABEL_PASS,
    PROMPT_VERSION,
    JudgeIdentity,
    JudgeRequest,
    JudgeVerdict,
)
from evaluation.judges.errors import REJECTED, JudgeError
from evaluation.judges.prompt import PROMPT_SHA256

FAKE_PROVIDER = "deterministic-fake"
FAKE_MODEL = "keyword-overlap-v1"
NOT_A_LANGUAGE_MODEL = "not a language model"

_MIN_WORD = 4
_STEM = 5
# Words that carry no meaning a keyword match could check, including the rubric's own vocabulary
# ("the reply says …") that an answer never repeats.
_STOPWORD_TEXT = """
    about above after again against also answer answers been before being below between both
    could customer customers does doing down during each from further have having here into
    itself just make made more most must only other over reply replies response said same says
    should some such than that their them then there these they this those through under until
    very were what when where which while will with would your yours agent tells
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"\w+")
_STATEMENT_SPLIT = re.compile(r"\n+|(?<=[.!?;])\s+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


def _words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def _stems(text: str, *, drop_stopwords: bool) -> set[str]:
    return {
        w[:_STEM] for w in _words(text) if len(w) >= _MIN_WORD and not (drop_stopwords and w in STOPWORDS)
    }


def rubric_statements(rubric: str) -> list[str]:
    """Bullets, lines and sentences of a rubric, bullet markers removed, empty pieces dropped."""
    pieces = (_BULLET.sub("", p).strip() for p in _STATEMENT_SPLIT.split(rubric))
    return [p for p in pieces if p]


class KeywordOverlapJudge:
    """Deterministic stand-in for a language-model judge: same inputs, same verdict, no network."""

    def __init__(self) -> None:
        self._identity = JudgeIdentity(
            provider=FAKE_PROVIDER,
            model=FAKE_MODEL,
            kind=KIND_FAKE,
            prompt_version=PROMPT_VERSION,
            prompt_sha256=PROMPT_SHA256,
        )

    @property
    def identity(self) -> JudgeIdentity:
        return self._identity

    def judge(self, request: JudgeRequest) -> JudgeVerdict:
        stems_per_statement = (_stems(t, drop_stopwords=True) for t in rubric_statements(request.rubric))
        statements = [s for s in stems_per_statement if s]
        if not statements:
            raise JudgeError(REJECTED, "the rubric has no content words a keyword match could check")
        answer = _stems(request.answer, drop_stopwords=False)
        met = sum(1 for stems in statements if len(stems & answer) * 2 >= len(stems))
        total = len(statements)
        return JudgeVerdict(
            score=round(met / total, 4),
            label=LABEL_PASS if met * 2 >= total else LABEL_FAIL,
            confidence=0.5,
            reason=(
                f"Keyword overlap (deterministic fake, {NOT_A_LANGUAGE_MODEL}): "
                f"{met} of {total} rubric statement(s) found in the answer."
            ),
            evidence=(),
            tokens=0,
            cost_usd=0.0,
        )

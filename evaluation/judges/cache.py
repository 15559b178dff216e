"""Verdict cache: the same judge shown the same material gives back the stored verdict, marked cached.

Only verdicts are stored; a judge error is never cached, so the next run asks again.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

from evaluation.judges.contract import JudgeIdentity, JudgeRequest, JudgeVerdict
from evaluation.judges.prompt import canonical_json


def cache_key(identity: JudgeIdentity, request: JudgeRequest) -> str:
    body = {
        "provider": identity.provider,
        "model": identity.model,
        "prompt_version": identity.prompt_version,
        "prompt_sha256": identity.prompt_sha256,
        "criterion": request.criterion,
        "rubric": request.rubric,
        "material": {
            "customer_message": request.customer_message,
            "answer": request.answer,
            "tool_calls": [c.to_dict() for c in request.tool_calls],
            "reference": request.reference,
        },
        "omitted_tool_calls": request.omitted_tool_calls,
    }
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


class VerdictCache:
    """In-process store (the embedded default); a persistent store keeps the same two methods."""

    def __init__(self) -> None:
        self._verdicts: dict[str, JudgeVerdict] = {}

    def __len__(self) -> int:
        return len(self._verdicts)

    def get(self, key: str) -> JudgeVerdict | None:
        found = self._verdicts.get(key)
        return replace(found, cached=True) if found is not None else None

    def put(self, key: str, verdict: JudgeVerdict) -> None:
        self._verdicts[key] = replace(verdict, cached=False)

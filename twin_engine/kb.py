"""Knowledge-base retrieval (spec §2.10): a small, deterministic term-frequency search."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from twin_engine.paths import get_path, parse_path

DEFAULT_LIMIT = 3
MIN_LIMIT, MAX_LIMIT = 1, 10
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class KbDocument:
    id: str
    title: str
    text: str
    trusted: bool

    def for_agent(self) -> dict[str, Any]:
        """What the agent sees: no trust flag."""
        return {"id": self.id, "title": self.title, "text": self.text}


def collect_documents(
    state: Any, state_path: str, scenario_documents: Iterable[Mapping[str, Any]] = ()
) -> list[KbDocument]:
    """State documents (`{id, title, text}`, trusted), then the scenario's (`{id, content, trusted}`)."""
    docs: list[KbDocument] = []
    found = get_path(state, parse_path(state_path))
    if isinstance(found, list):
        for item in found:
            if isinstance(item, dict) and item.get("id") is not None:
                text = item.get("text", item.get("content", ""))
                docs.append(KbDocument(str(item["id"]), str(item.get("title") or ""), str(text or ""), True))
    for item in scenario_documents:
        doc_id = str(item["id"])
        docs.append(
            KbDocument(
                doc_id,
                str(item.get("title") or ""),  # scenario documents have no title
                str(item.get("content") or ""),
                bool(item.get("trusted", False)),
            )
        )
    return docs


def clamp_limit(limit: int) -> int:
    return max(MIN_LIMIT, min(MAX_LIMIT, int(limit)))


def query_terms(query: str) -> list[str]:
    """Case-folded words of the query longer than 2 characters, each once, in order."""
    return list(dict.fromkeys(w for w in _WORD.findall(query.casefold()) if len(w) > 2))


def search(documents: Iterable[KbDocument], query: str, limit: int = DEFAULT_LIMIT) -> list[KbDocument]:
    """Documents ranked by how often the query terms occur in title + text; ties by id; no zero scores."""
    terms = query_terms(query)
    scored: list[tuple[int, str, KbDocument]] = []
    for doc in documents:
        counts = Counter(_WORD.findall(f"{doc.title} {doc.text}".casefold()))
        score = sum(counts[t] for t in terms)
        if score > 0:
            scored.append((-score, doc.id, doc))
    scored.sort(key=lambda entry: (entry[0], entry[1]))
    return [doc for _, _, doc in scored[: clamp_limit(limit)]]

"""What the twin records about every call: the evidence everything downstream grades on.

The agent's own list of calls is a claim; these records are written by the twin itself.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

JSON = Any  # a JSON-compatible value (dict, list, str, int, float, bool, None)

# Record statuses (`call_status`), spec §2.8.
CALL_STATUSES = (
    "ok",
    "rate_limited",
    "denied",
    "unknown_tool",
    "not_found",
    "timeout",
    "invalid",
    "error",
    "dropped",
    "partial",
    "malformed",
)


@dataclass(frozen=True)
class StateChange:
    """One entry of a state diff: `op` is added, removed or changed."""

    op: str
    path: str
    before: JSON = None
    after: JSON = None

    def to_dict(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {"op": self.op, "path": self.path}
        if self.op != "added":
            out["before"] = self.before
        if self.op != "removed":
            out["after"] = self.after
        return out


@dataclass(frozen=True)
class CallRecord:
    """One tool invocation as the twin saw and answered it (spec §2.8)."""

    seq: int
    call_number: int
    tool: str
    arguments: JSON
    http_status: int  # 0 = no response reached the caller
    status: str  # one of CALL_STATUSES
    error_code: str | None
    response: JSON  # the reply body the caller received (None when nothing arrived)
    risk: str | None
    fault: str | None
    mutated: bool
    expects_mutation: bool
    replayed: bool
    effect_key: str | None
    cross_tenant: str | None  # "denied" | "allowed" | None
    policy_violation: str | None
    redelivered: bool
    changes: tuple[StateChange, ...] = ()
    delay_ms: int = 0
    idempotency_key: str | None = None

    def to_dict(self) -> dict[str, JSON]:
        out = asdict(self)
        out["changes"] = [c.to_dict() for c in self.changes]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, JSON]) -> CallRecord:
        fields = dict(data)
        fields["changes"] = tuple(StateChange(**c) for c in fields.get("changes") or ())
        fields.pop("kind", None)
        return cls(**fields)


@dataclass(frozen=True)
class RetrievalRecord:
    """A knowledge-base search the twin served (spec §2.10). Shares the case's `seq` counter."""

    seq: int
    query: str
    limit: int
    documents: tuple[dict[str, JSON], ...] = field(default_factory=tuple)  # [{id, trusted}]
    refused: str | None = None  # the error code when the query went over a limit (twin_engine/limits.py)

    def to_dict(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {
            "seq": self.seq,
            "kind": "retrieval",
            "query": self.query,
            "limit": self.limit,
            "documents": [dict(d) for d in self.documents],
        }
        if self.refused is not None:  # only then: an ordinary retrieval's record keeps its bytes
            out["refused"] = self.refused
        return out

    @classmethod
    def from_dict(cls, data: dict[str, JSON]) -> RetrievalRecord:
        return cls(
            seq=int(data["seq"]),
            query=str(data["query"]),
            limit=int(data["limit"]),
            documents=tuple(dict(d) for d in data.get("documents") or ()),
            refused=data.get("refused"),
        )

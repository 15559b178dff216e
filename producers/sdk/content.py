"""What message content may leave the agent: capture mode off (default) / redacted / full, and how
redacted content is redacted (drop / mask / hash).

Redaction keeps a message's structure — role, part type, tool name, ids, finish reason — and replaces
every other value: `drop` removes it, `mask` writes "[REDACTED]", `hash` writes "sha256:<hex>" of its
canonical JSON (equal content stays comparable without being readable).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from twin_engine.canonical import sha256_hex

ContentMode = Literal["off", "redacted", "full"]
Redaction = Literal["drop", "mask", "hash"]
CONTENT_MODES: tuple[ContentMode, ...] = ("off", "redacted", "full")
REDACTIONS: tuple[Redaction, ...] = ("drop", "mask", "hash")
MASK = "[REDACTED]"
STRUCTURAL_KEYS = frozenset({"role", "type", "name", "id", "finish_reason", "mime_type", "modality"})


def _redact_value(value: Any, redaction: Redaction) -> Any:
    if redaction == "mask":
        return MASK
    return "sha256:" + sha256_hex(value)


def redact(value: Any, redaction: Redaction) -> Any:
    """`value` with every non-structural leaf redacted; a dropped top-level scalar becomes None."""
    if isinstance(value, list):
        return [redact(v, redaction) for v in value]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if item is None or (key in STRUCTURAL_KEYS and isinstance(item, str | int | float | bool)):
                out[key] = item
            elif isinstance(item, list | dict):
                out[key] = redact(item, redaction)
            elif redaction != "drop":
                out[key] = _redact_value(item, redaction)
        return out
    return None if redaction == "drop" else _redact_value(value, redaction)


@dataclass(frozen=True)
class ContentPolicy:
    mode: ContentMode = "off"
    redaction: Redaction = "mask"

    def __post_init__(self) -> None:
        if self.mode not in CONTENT_MODES:
            raise ValueError(f"content mode must be one of {', '.join(CONTENT_MODES)}, got {self.mode!r}")
        if self.redaction not in REDACTIONS:
            raise ValueError(f"redaction must be one of {', '.join(REDACTIONS)}, got {self.redaction!r}")

    @property
    def redacted(self) -> bool:
        return self.mode == "redacted"

    def render(self, value: Any) -> str | None:
        """The attribute text for content, or None when it must not be recorded.

        Raises TypeError/ValueError for content that is not JSON-representable (the caller's guard counts it).
        """
        if self.mode == "off" or value is None:
            return None
        shown = redact(value, self.redaction) if self.mode == "redacted" else value
        if shown is None:
            return None
        if isinstance(shown, str):
            return shown
        return json.dumps(shown, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)

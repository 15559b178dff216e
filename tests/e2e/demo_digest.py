"""A digest of everything `agenttwin demo` writes: every event of every topic, decoded, in log order.

Fields added to an event schema after the digest was taken count only when they carry a value, so a new
optional field left empty by the demo keeps the digest; anything else that changes the demo's events or
results changes it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import fastavro

from schemas import AVRO_DIR
from streams.wire import SchemaStore

# Optional fields added since the digest in tests/e2e/data/demo_digest.json was taken (all empty in the demo).
ADDED_OPTIONAL_FIELDS = {
    "conversation_json",
    # what the receiver reads from a span, and the subject / inferred claim of verifications and alerts
    "span_role",
    "tool_name",
    "tool_error",
    "agent_name",
    "agent_version",
    "subject",
    "claim_inferred_by",
    # the claim reader's rule and confidence on an inferred claim (the demo's agents state theirs)
    "claim_rule",
    "claim_confidence",
}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if not (k in ADDED_OPTIONAL_FIELDS and v is None)}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return value if isinstance(value, str | int | float | bool) or value is None else str(value)


def demo_digest(data_dir: Path) -> dict[str, str]:
    """sha256 per topic of the decoded events (canonical JSON lines, log order)."""
    store = SchemaStore.from_directory(AVRO_DIR)
    digests: dict[str, str] = {}
    for path in sorted((data_dir / "topics-log").rglob("*.avro")):
        topic = path.relative_to(data_dir / "topics-log").as_posix()
        h = hashlib.sha256()
        with path.open("rb") as f:
            for record in fastavro.reader(f):
                decoded = store.decode(record["value"])
                h.update(json.dumps(_plain(decoded.record), sort_keys=True).encode() + b"\n")
        digests[topic] = h.hexdigest()
    return digests

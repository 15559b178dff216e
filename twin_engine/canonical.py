"""Canonical JSON and hashes: the one byte form used wherever bytes matter (hashes, raw replies)."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Sorted keys, compact separators, UTF-8 text kept as is; NaN/Infinity are rejected (ValueError)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_bytes(value: Any) -> bytes:
    return canonical_json(value).encode("utf-8")


def sha256_hex(value: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of `value`."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()


def state_hash(state: Any) -> str:
    """The stable hash of a twin state: equal states hash equally whatever their key order."""
    return sha256_hex(state)

"""RFC 7396 JSON Merge Patch (how a scenario's `spec.state` is laid over the twin's `initialState`)."""

from __future__ import annotations

from typing import Any

from twin_engine.deep_copy import deep_copy


def merge_patch(target: Any, patch: Any) -> Any:
    """Return `target` with `patch` applied; neither input is modified.

    An object patch merges key by key (`null` deletes the key); any other patch replaces the target.
    """
    if not isinstance(patch, dict):
        return deep_copy(patch)
    result: dict[str, Any] = deep_copy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result

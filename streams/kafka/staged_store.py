"""A processor's view of its partition store: reads go through, writes are held until the outputs are durable.

Order matters for at-least-once: if a "done" marker reached the changelog before the outputs it
stands for reached their topics, a crash in between would lose those outputs for good (the redelivered
event would find the marker and emit nothing). So the agent publishes and awaits the outputs first,
then writes the staged changes; a crash in between only re-emits the same outputs (same event ids).
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

_DELETED = object()
DELETED = _DELETED


class StagedStore(MutableMapping[str, Any]):
    def __init__(self, base: MutableMapping[str, Any]) -> None:
        self._base = base
        self._writes: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        if key in self._writes:
            value = self._writes[key]
            if value is _DELETED:
                raise KeyError(key)
            return value
        return self._base[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._writes[key] = value

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._writes[key] = _DELETED

    def __iter__(self) -> Iterator[str]:
        seen = set()
        for key in list(self._base.keys()):
            seen.add(key)
            if self._writes.get(key) is not _DELETED:
                yield key
        for key, value in list(self._writes.items()):
            if key not in seen and value is not _DELETED:
                yield key

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def fold(self) -> None:
        """Apply the staged writes to the mapping underneath (for a staged view over another one)."""
        for key, value in self._writes.items():
            if value is _DELETED:
                self._base.pop(key, None)
            else:
                self._base[key] = value
        self._writes = {}

    def changes(self) -> list[tuple[str, Any]]:
        """The staged writes that change the mapping underneath: (key, value), value `DELETED` for a removal."""
        out: list[tuple[str, Any]] = []
        for key, value in self._writes.items():
            if value is _DELETED:
                if key in self._base:
                    out.append((key, DELETED))
            elif self._base.get(key) != value:
                out.append((key, value))
        return out

"""Named adapters for `custom` handlers. A twin document names an adapter; it never carries code."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AdapterCall:
    """What an adapter receives. `state` is a scratch copy it may change in place."""

    tool: str
    arguments: dict[str, Any]
    state: dict[str, Any]
    tenant: str | None
    now: str
    seq: int
    call_number: int


@dataclass(frozen=True)
class AdapterResult:
    """What an adapter returns. A non-2xx status is an error (`error` = {code, message})."""

    status: int = 200
    result: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    mutated: bool = False  # commit the changes made to `state`
    error: Mapping[str, Any] | None = None


Adapter = Callable[[AdapterCall], AdapterResult]


class AdapterRegistry:
    """Adapters by name, supplied by the service that runs the twin."""

    def __init__(self, adapters: Mapping[str, Adapter] | None = None) -> None:
        self._adapters: dict[str, Adapter] = dict(adapters or {})

    def register(self, name: str, adapter: Adapter) -> None:
        self._adapters[name] = adapter

    def get(self, name: str) -> Adapter | None:
        return self._adapters.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._adapters

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._adapters))

"""Every event type's fast `__init__` (streams/_fast_init.py) behaves as the one dataclasses writes."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from streams._fast_init import fast_init
from streams.events import EVENT_TYPES, Event
from streams.span_reading import RequestedCall, SpanReading


def _reference(cls: type) -> type:
    """The same fields under a fresh dataclass `__init__` (a subclass adding nothing, under the same name)."""
    return dataclasses.dataclass(frozen=True, kw_only=True)(type(cls.__name__, (cls,), {"__module__": cls.__module__}))


@pytest.mark.parametrize("cls", [*EVENT_TYPES, SpanReading, RequestedCall], ids=lambda c: c.__name__)
def test_the_fast_init_takes_and_stores_what_the_dataclass_init_does(cls: type) -> None:
    reference = _reference(cls)
    assert str(inspect.signature(cls.__init__)) == str(inspect.signature(reference.__init__))
    fields = dataclasses.fields(cls)
    missing = dataclasses.MISSING
    required = {f.name: object() for f in fields if f.default is missing and f.default_factory is missing}
    positional = [required.pop(f.name) for f in fields if not f.kw_only and f.name in required]
    fast, slow = cls(*positional, **required), reference(*positional, **required)
    assert fast.__dict__ == slow.__dict__
    given = {f.name: object() for f in fields if f.kw_only}  # every field given
    assert cls(*positional, **given).__dict__ == reference(*positional, **given).__dict__
    for f in fields:
        if f.default_factory is not dataclasses.MISSING:  # a fresh value each time, never shared
            assert getattr(cls(*positional, **required), f.name) is not getattr(fast, f.name)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.__setattr__(fields[0].name, None)
    if required:
        with pytest.raises(TypeError):
            cls(*positional)
    if issubclass(cls, Event):
        assert fast.event_type == cls.__name__  # __post_init__ ran


def test_fast_init_refuses_what_it_cannot_speed_up() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted:
        a: int

    @dataclasses.dataclass
    class Mutable:
        a: int

    for cls in (Slotted, Mutable):
        with pytest.raises(TypeError):
            fast_init(cls)

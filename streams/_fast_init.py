"""A faster `__init__` for frozen dataclasses built on hot paths (events, span readings).

The `__init__` dataclasses writes for a frozen class sets each field with `object.__setattr__`, a call
per field: a span's event has 25. For a class without `__slots__`, that call only stores the value in
the instance's `__dict__`, so this `__init__` stores them there directly. Same signature (positional or
keyword-only, defaults, default factories), same `__post_init__`; the class stays frozen (`__setattr__`
still refuses), and equality, hashing and repr are the dataclass's own. `tests/unit/events` checks every
event type against the dataclass's own `__init__`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def fast_init(cls: type[T]) -> type[T]:
    """Replace a frozen dataclass's `__init__` (see the module docstring); returns the class."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" in cls.__dict__:
        raise TypeError(f"{cls.__name__}: fast_init is for frozen dataclasses without __slots__")
    fields = list(dataclasses.fields(cls))  # type: ignore[arg-type]
    if any(not f.init for f in fields):
        raise TypeError(f"{cls.__name__}: a field outside __init__")
    # the sentinel dataclasses' own __init__ uses for a default factory, so the signatures read the same
    factory = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", dataclasses.MISSING)
    scope: dict[str, Any] = {"_FACTORY": factory}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for i, f in enumerate(fields):
        arg = f.name
        if f.default is not dataclasses.MISSING:
            scope[f"_d{i}"] = f.default
            arg += f"=_d{i}"
        elif f.default_factory is not dataclasses.MISSING:
            scope[f"_f{i}"] = f.default_factory
            arg += "=_FACTORY"
            body.append(f"    if {f.name} is _FACTORY: {f.name} = _f{i}()")
        (keyword if f.kw_only else positional).append(arg)
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    body.append("    _d = self.__dict__")
    body += [f"    _d[{f.name!r}] = {f.name}" for f in fields]
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    source = f"def __init__({signature}):\n" + "\n".join(body) + "\n"
    exec(source, scope)  # noqa: S102 - code generated from the class's own field names, as dataclasses does
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init  # type: ignore[method-assign]
    return cls

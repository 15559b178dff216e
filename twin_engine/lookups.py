"""`find`: a handler's entity looked up by any field instead of by its key.

    find:
      in: state.users                    # an object (entries in key order) or a list (in order)
      where: "item.email.lowerAscii() == args.email.lowerAscii()"   # `item` is the entry, `key` its key/index
      unique: true                       # optional: two matches answer 409 AMBIGUOUS
      notFound: {status: 404, code: USER_NOT_FOUND, message: No user with this email.}

The first entry for which `where` is true becomes the handler's entity, exactly as a `path` would
name it: `value` is that entry (after the effects, in a mutate's default response: the changed entry),
and `{vars.key}` / `key` is its key or index, so effects can address it (`users.{vars.key}.verified`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from twin_engine.conditions import ErrorSpec, error_spec
from twin_engine.errors import DefinitionError
from twin_engine.expressions import Expression, compile_expression, evaluate_bool
from twin_engine.paths import MISSING, Path, get_path
from twin_engine.templates import (
    TemplateEnv,
    TemplateScope,
    TemplateSyntaxError,
    check_expression,
    check_path_template,
    parse_path_template,
    render_path,
)

AMBIGUOUS = ErrorSpec(409, "AMBIGUOUS", "More than one record matches.")
FIND_NAMES = ("item", "key")


@dataclass(frozen=True)
class Find:
    within: str  # path template below the state root (`users`, from `state.users`)
    where: Expression
    unique: bool
    not_found: ErrorSpec | None  # None: the handler's notFound
    ambiguous: ErrorSpec


def compile_find(raw: Any, where: str, scope: TemplateScope) -> Find:
    if not isinstance(raw, dict):
        raise DefinitionError("find needs an object with in and where", path=where)
    extra = sorted(set(raw) - {"in", "where", "unique", "notFound", "ambiguous"})
    if extra:
        raise DefinitionError(f"unexpected key '{extra[0]}' in find", path=f"{where}.{extra[0]}")
    within = raw.get("in")
    if not isinstance(within, str) or not (within == "state" or within.startswith("state.")):
        raise DefinitionError("find.in must be a path into the state, e.g. state.users", path=f"{where}.in")
    relative = within[len("state.") :] if within != "state" else ""
    try:
        if relative:
            check_path_template(relative, scope)
            parse_path_template(relative)
    except TemplateSyntaxError as exc:
        raise DefinitionError(exc.message, path=f"{where}.in") from exc
    try:
        check_expression(raw.get("where"), scope.with_names(*FIND_NAMES))
    except TemplateSyntaxError as exc:
        raise DefinitionError(exc.message, path=f"{where}.where") from exc
    unique = raw.get("unique", False)
    if not isinstance(unique, bool):
        raise DefinitionError("find.unique must be true or false", path=f"{where}.unique")
    not_found = error_spec(raw["notFound"], ErrorSpec(404, "NOT_FOUND", "")) if "notFound" in raw else None
    return Find(
        within=relative,
        where=compile_expression(raw["where"]),
        unique=unique,
        not_found=not_found,
        ambiguous=error_spec(raw.get("ambiguous"), AMBIGUOUS),
    )


@dataclass(frozen=True)
class Found:
    path: Path
    key: str | int
    value: Any


def locate(find: Find, state: dict[str, Any], env: TemplateEnv) -> Found | None:
    """The entry `find` names in `state`, None when none matches; AMBIGUOUS raises its failure."""
    base: Path = render_path(find.within, env) if find.within else ()
    container = get_path(state, base)
    entries: list[tuple[str | int, Any]]
    if isinstance(container, dict):
        entries = [(key, container[key]) for key in sorted(container)]
    elif isinstance(container, list):
        entries = list(enumerate(container))
    else:
        return None
    matches: list[Found] = []
    for key, entry in entries:
        env.budget.spend(1)
        if evaluate_bool(find.where, env.with_vars(item=entry, key=key).bindings(), env.budget):
            matches.append(Found((*base, key), key, entry))
            if not find.unique or len(matches) > 1:
                break
    if find.unique and len(matches) > 1:
        raise find.ambiguous.failure()
    return matches[0] if matches else None


def entity_at(state: dict[str, Any], found: Found) -> Any:
    value = get_path(state, found.path)
    return MISSING if value is MISSING else value

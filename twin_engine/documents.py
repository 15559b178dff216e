"""Twin, scenario and agent-manifest documents: load, validate against the JSON Schemas, check semantics.

Every problem is one DefinitionError rendered `file:line: path.in.document: message`, where `file` is the
path exactly as the caller gave it and `line` is where the offending value (or its nearest parent) sits.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from agenttwin.demo import MANIFEST_DIR, NAMED_SUITES
from schemas import JSON_DIR
from twin_engine.canonical import sha256_hex
from twin_engine.deep_copy import deep_copy
from twin_engine.errors import DefinitionError
from twin_engine.parsed import cached, file_key, text_digest
from twin_engine.yaml_loader import (
    KIB,
    MIB,
    DocPath,
    LoadedDocument,
    load_document_file,
    load_document_text,
    render_path,
)

if TYPE_CHECKING:
    from twin_engine.twin import Twin

TWIN_MAX_BYTES = 2 * MIB
SCENARIO_MAX_BYTES = 512 * KIB
MANIFEST_MAX_BYTES = 2 * MIB

TWIN_SCHEMA = "twin.v1.schema.json"
SCENARIO_SCHEMA = "scenario.v1.schema.json"
MANIFEST_SCHEMA = "agent-manifest.v1.schema.json"

SCENARIO_SUFFIXES = (".yaml", ".yml", ".json")
_MAX_MESSAGE = 1000


# --- loading and schema validation ------------------------------------------------------------------------


def load_twin_document(path: str | Path, *, max_bytes: int = TWIN_MAX_BYTES) -> LoadedDocument:
    return _load_valid(path, TWIN_SCHEMA, max_bytes)


def load_scenario_document(path: str | Path, *, max_bytes: int = SCENARIO_MAX_BYTES) -> LoadedDocument:
    return _load_valid(path, SCENARIO_SCHEMA, max_bytes)


def load_manifest_document(path: str | Path, *, max_bytes: int = MANIFEST_MAX_BYTES) -> LoadedDocument:
    return _load_valid(path, MANIFEST_SCHEMA, max_bytes)


def validate_document(doc: LoadedDocument, schema_name: str) -> None:
    """Raise the schema problem that comes first in the file (deepest first on a tie)."""
    errors = [_refine(error) for error in _validator(schema_name).iter_errors(doc.data)]
    if not errors:
        return
    located = [(doc.line_for(_error_path(e)) or 0, -len(_error_path(e)), _message(e), e) for e in errors]
    line, _, message, error = min(located, key=lambda item: item[:3])
    raise DefinitionError(message, path=render_path(_error_path(error)), file=doc.source_name, line=line or None)


def located_error(doc: LoadedDocument, path: DocPath, message: str) -> DefinitionError:
    return DefinitionError(message, path=render_path(path), file=doc.source_name, line=doc.line_for(path))


def _load_valid(path: str | Path, schema_name: str, max_bytes: int) -> LoadedDocument:
    doc = load_document_file(path, max_bytes=max_bytes)
    validate_document(doc, schema_name)
    return doc


@functools.cache
def _validator(schema_name: str) -> Draft202012Validator:
    # The project's own schemas, shipped with it: a unit test checks each against the metaschema
    # (test_documents_demo_world), which costs ~0.1 s per schema and per process if done here.
    schema = json.loads((JSON_DIR / schema_name).read_text(encoding="utf-8"))
    return Draft202012Validator(schema)


def _refine(error: ValidationError) -> ValidationError:
    """Descend an anyOf/oneOf failure into the branch that got furthest (deepest; not a mere type clash)."""
    while error.context:
        error = min(error.context, key=lambda sub: (-len(sub.relative_path), sub.validator == "type"))
    return error


def _error_path(error: ValidationError) -> DocPath:
    path: DocPath = tuple(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        extra = _unexpected_keys(error)
        return (*path, extra[0]) if extra else path
    if "propertyNames" in error.absolute_schema_path and isinstance(error.instance, str):
        return (*path, error.instance)
    return path


def _unexpected_keys(error: ValidationError) -> list[str]:
    schema = error.schema if isinstance(error.schema, dict) else {}
    known = schema.get("properties", {})
    instance = error.instance
    return [key for key in instance if key not in known] if isinstance(instance, dict) else []


def _message(error: ValidationError) -> str:
    schema = error.schema if isinstance(error.schema, dict) else {}
    instance = error.instance
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        extra = _unexpected_keys(error)
        if extra:
            guess = difflib.get_close_matches(extra[0], list(schema.get("properties", {})), n=1)
            hint = f"; did you mean '{guess[0]}'?" if guess else ""
            return f"unknown property '{extra[0]}'{hint}"
    if error.validator == "maxLength" and isinstance(instance, str):
        return f"{_short(instance)} is longer than {error.validator_value} characters"
    if error.validator == "pattern" and "title" in schema:
        return f"{_short(instance)} is not {schema['title']}"
    if error.validator == "type":
        wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        found = _json_kind(instance)
        if "string" in wanted and found in ("integer", "number", "boolean"):
            return f"expected string, found {found} {json.dumps(instance)} (put it in quotes)"
        return f"expected {' or '.join(map(str, wanted))}, found {found}"
    if error.validator == "const":
        return f"must be {error.validator_value!r}, found {_short(instance)}"
    if error.validator == "required" and "then" in error.absolute_schema_path and isinstance(instance, dict):
        for discriminator in ("type", "kind", "op"):
            if isinstance(instance.get(discriminator), str):
                return f"{error.message} when {discriminator} is '{instance[discriminator]}'"
    message = error.message
    return message if len(message) <= _MAX_MESSAGE else message[: _MAX_MESSAGE - 3] + "..."


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


# --- twins ------------------------------------------------------------------------------------------------


def load_twin(path: str | Path) -> Twin:
    """Validate a twin file, build it, and place the engine's semantic errors at their line."""
    key = file_key(path, TWIN_MAX_BYTES)
    return cached(None if key is None else ("twin-file", key), lambda: _load_twin(path))


def _load_twin(path: str | Path) -> Twin:
    from twin_engine.twin import Twin  # the engine is imported lazily: loading documents must not need it

    doc = load_twin_document(path)
    try:
        return Twin.from_definition(doc.data)
    except DefinitionError as exc:
        raise exc.located(doc.source_name, doc.line_for_path(exc.path)) from None


def twin_identity(twin: Twin | LoadedDocument | Mapping[str, Any]) -> tuple[str, str | None]:
    """The twin's name and its `metadata.version` (None when it has none)."""
    data: Any = twin.data if isinstance(twin, LoadedDocument) else twin
    doc = data if isinstance(data, Mapping) else data.definition
    meta = doc.get("metadata") or {}
    version = meta.get("version")
    return str(meta.get("name", "")), str(version) if version is not None else None


def twin_mismatch(scenario: Scenario, twin: Twin | LoadedDocument | Mapping[str, Any]) -> str | None:
    """Why `scenario` is not written for `twin` (its `spec.twin`: `name` or `name@version`), or None."""
    return _twin_mismatch(scenario.name, scenario.twin, twin)


def _twin_mismatch(
    scenario_name: str, written_for: str | None, twin: Twin | LoadedDocument | Mapping[str, Any]
) -> str | None:
    if not written_for:
        return None
    name, _, version = written_for.partition("@")
    twin_name, twin_version = twin_identity(twin)
    if name == twin_name and (not version or version == twin_version):
        return None
    shown = f"'{twin_name}@{twin_version}'" if twin_version else f"'{twin_name}'"
    if name == twin_name and twin_version is None:
        shown += " (no version)"
    return f"scenario '{scenario_name}' is written for twin '{written_for}', not for {shown}"


def twin_tool_names(twin: Twin | LoadedDocument | Mapping[str, Any]) -> frozenset[str]:
    """Tool names of a twin given as a built Twin, a loaded twin document or its data."""
    data: Any = twin.data if isinstance(twin, LoadedDocument) else twin
    if isinstance(data, Mapping):
        return frozenset(data.get("spec", {}).get("tools", {}))
    return frozenset(data.tool_names)


def _twin_identity(twin: Twin | LoadedDocument | Mapping[str, Any] | None) -> str | None:
    """What a parsed scenario depends on of its twin, for the parse cache: the twin's content hash."""
    if twin is None:
        return None
    if isinstance(twin, LoadedDocument):
        return sha256_hex(twin.data)
    if isinstance(twin, Mapping):
        return sha256_hex(twin)
    return twin.hash


# --- scenarios --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """A validated scenario.v1 document. `expectations` carry their ids (`e<N>` when not written)."""

    name: str
    severity: str
    tags: tuple[str, ...]
    description: str
    owner: str | None
    agent: str | None
    twin: str | None
    message: str
    context: Mapping[str, Any]
    documents: tuple[Mapping[str, Any], ...]  # `trusted` filled in (default false)
    state: Mapping[str, Any]  # merge patch over the twin's initialState; {} when absent
    allowed_tools: tuple[str, ...] | None  # None: every tool is allowed
    escalation_tools: tuple[str, ...] | None  # None: the twin's escalation tools
    covers: tuple[str, ...]
    faults: tuple[Mapping[str, Any], ...]
    expectations: tuple[Mapping[str, Any], ...]
    seed: int | None
    simulation_mode: str
    timeout_seconds: float | None
    raw: Mapping[str, Any]
    spec_hash: str  # sha256 of the canonical JSON of the whole document
    source: str
    user: Mapping[str, Any] | None = None  # the user's side of a conversation; None: one turn

    @property
    def max_turns(self) -> int:
        """The most turns this scenario's conversation can take (1 without a `user` section)."""
        return max_turns(self.user)


# Expectation types that can address one turn (`turn: N`): what the agent said, and what it called, then.
TURN_TYPES = frozenset(
    {
        "outputContains",
        "outputNotContains",
        "outputRegex",
        "outputJsonSchema",
        "outputJsonPath",
        "noSecretDisclosure",
        "toolCalled",
        "toolNotCalled",
        "maxToolCalls",
        "toolArgs",
        "toolStatus",
        "order",
        "maxRetries",
        "noIrreversibleAction",
        "requiredEscalation",
        "approvalRequired",
        "noDuplicateSideEffect",
        "noPolicyViolation",
        "noCrossTenantAccess",
    }
)
DEFAULT_LLM_TURNS = 4


def max_turns(user: Mapping[str, Any] | None) -> int:
    if not user:
        return 1
    if user.get("maxTurns") is not None:
        return int(user["maxTurns"])
    if user.get("kind", "scripted") == "llm":
        return DEFAULT_LLM_TURNS
    return 1 + len(user.get("turns") or ())


def load_scenario(path: str | Path, twin: Twin | LoadedDocument | Mapping[str, Any] | None = None) -> Scenario:
    return _load_scenario(path, twin)[0]


def load_suite(
    spec: str | Path | Sequence[str | Path],
    twin: Twin | LoadedDocument | Mapping[str, Any] | None = None,
    *,
    twin_explicit: bool = True,
) -> list[Scenario]:
    """Scenarios of "demo" (the packaged nine), of directories (*.yaml, *.yml, *.json) or of files.

    Sorted by scenario name; two files with the same scenario name are an error. With a `twin` that
    nobody named (`twin_explicit=False`: a default), a scenario written for another twin is an error.
    """
    items = [spec] if isinstance(spec, str | Path) else list(spec)
    files: list[Path] = []
    for item in items:
        for file in _scenario_files(item):
            if file.resolve() not in {known.resolve() for known in files}:
                files.append(file)
    seen: dict[str, Scenario] = {}
    for file in files:
        scenario, doc = _load_scenario(file, twin, twin_explicit=twin_explicit)
        if scenario.name in seen:
            raise located_error(
                doc,
                ("metadata", "name"),
                f"duplicate scenario name '{scenario.name}' (also in {seen[scenario.name].source})",
            )
        seen[scenario.name] = scenario
    return sorted(seen.values(), key=lambda scenario: scenario.name)


def _scenario_files(item: str | Path) -> list[Path]:
    named = NAMED_SUITES.get(str(item))
    if named is not None:
        return _files_in(named) if named.is_dir() else [named]
    path = Path(item)
    if path.is_dir():
        found = _files_in(path)
        if not found:
            raise DefinitionError(
                f"no scenario files ({', '.join(SCENARIO_SUFFIXES)}) in the directory", file=str(item)
            )
        return found
    if not path.exists():
        raise DefinitionError("no such scenario file or directory", file=str(item))
    return [path]


def _files_in(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.is_file() and p.suffix in SCENARIO_SUFFIXES)


def scenario_from_text(
    text: str, source_name: str, twin: Twin | LoadedDocument | Mapping[str, Any] | None = None
) -> Scenario:
    """A scenario from its text (YAML or JSON), e.g. a document carried inside an event."""
    key = ("scenario-text", text_digest(text), _twin_identity(twin))
    scenario = cached(key, lambda: _scenario_text(text, source_name, twin))
    # the same text under another name (each event names its own): only `source` differs
    return scenario if scenario.source == source_name else dataclasses.replace(scenario, source=source_name)


def _scenario_text(text: str, source_name: str, twin: Twin | LoadedDocument | Mapping[str, Any] | None) -> Scenario:
    doc = load_document_text(text, source_name, max_bytes=SCENARIO_MAX_BYTES)
    validate_document(doc, SCENARIO_SCHEMA)
    return _scenario_from_document(doc, twin)


def _load_scenario(
    path: str | Path, twin: Twin | LoadedDocument | Mapping[str, Any] | None, *, twin_explicit: bool = True
) -> tuple[Scenario, LoadedDocument]:
    key = file_key(path, SCENARIO_MAX_BYTES)
    return cached(
        None if key is None else ("scenario-file", key, _twin_identity(twin), twin_explicit),
        lambda: _read_scenario(path, twin, twin_explicit),
    )


def _read_scenario(
    path: str | Path, twin: Twin | LoadedDocument | Mapping[str, Any] | None, twin_explicit: bool
) -> tuple[Scenario, LoadedDocument]:
    doc = load_scenario_document(path)
    return _scenario_from_document(doc, twin, twin_explicit=twin_explicit), doc


def _scenario_from_document(
    doc: LoadedDocument, twin: Twin | LoadedDocument | Mapping[str, Any] | None, *, twin_explicit: bool = True
) -> Scenario:
    data: dict[str, Any] = doc.data
    meta, spec = data["metadata"], data["spec"]
    if twin is not None and not twin_explicit:  # a default twin never runs a scenario written for another
        problem = _twin_mismatch(meta["name"], spec.get("twin"), twin)
        if problem is not None:
            raise located_error(doc, ("spec", "twin"), f"{problem}; name its twin with --twin")
    expectations = _expectations_with_ids(doc, spec["expectations"])
    faults = spec.get("faults", [])
    allowed = spec.get("allowedTools")
    if twin is not None:
        tools = twin_tool_names(twin)
        known = ", ".join(sorted(tools))
        for index, fault in enumerate(faults):
            if fault["target"] != "*" and fault["target"] not in tools:
                raise located_error(
                    doc,
                    ("spec", "faults", index, "target"),
                    f"fault target '{fault['target']}' is not a tool of the twin (tools: {known}; or '*')",
                )
        for listed in ("allowedTools", "escalationTools"):
            for index, tool in enumerate(spec.get(listed) or []):
                if tool not in tools:
                    raise located_error(
                        doc,
                        ("spec", listed, index),
                        f"'{tool}' is not a tool of the twin (tools: {known})",
                    )
        _check_expectation_tools(doc, spec["expectations"], tools)
    _check_patterns(doc, expectations)
    user = spec.get("user")
    limit = max_turns(user)
    for index, expectation in enumerate(spec["expectations"]):
        turn = expectation.get("turn")
        if turn is None:
            continue
        where = ("spec", "expectations", index, "turn")
        if expectation.get("type") not in TURN_TYPES:
            raise located_error(
                doc, where, f"'{expectation.get('type')}' grades the whole case; turn works on output and call checks"
            )
        if turn > limit:
            said = f"the conversation has at most {limit}" if user else "the scenario has one turn (no user section)"
            raise located_error(doc, where, f"turn {turn}, but {said}")
    scenario_input = spec["input"]
    scenario = Scenario(
        name=meta["name"],
        severity=meta["severity"],
        tags=tuple(meta.get("tags", [])),
        description=str(meta.get("description", "")).strip(),
        owner=meta.get("owner"),
        agent=spec.get("agent"),
        twin=spec.get("twin"),
        message=scenario_input["message"],
        context=deep_copy(scenario_input.get("context", {})),
        documents=tuple({**d, "trusted": d.get("trusted", False)} for d in scenario_input.get("documents", [])),
        state=deep_copy(spec.get("state", {})),
        allowed_tools=tuple(allowed) if allowed is not None else None,
        escalation_tools=tuple(spec["escalationTools"]) if spec.get("escalationTools") else None,
        covers=tuple(spec.get("covers", [])),
        faults=tuple(deep_copy(faults)),
        expectations=expectations,
        seed=spec.get("seed"),
        simulation_mode=spec.get("simulationMode", "strict"),
        timeout_seconds=spec.get("timeoutSeconds"),
        raw=data,
        spec_hash=sha256_hex(data),
        source=doc.source_name,
        user=deep_copy(user) if user is not None else None,
    )
    return scenario


def _check_expectation_tools(doc: LoadedDocument, expectations: Iterable[Any], tools: frozenset[str]) -> None:
    """Every tool an expectation names is a tool of the twin: a typo would pass (or fail) forever."""
    for index, expectation in enumerate(expectations):
        named: list[tuple[DocPath, Any]] = [(("tool",), expectation.get("tool"))]
        for field in ("mustCall", "before"):
            named += [((field, i), tool) for i, tool in enumerate(expectation.get(field) or [])]
        calls = expectation.get("calls") if expectation.get("type") == "reachesReferenceState" else None
        if isinstance(calls, list):  # reference calls: a typo would make every run ERROR, found only at run time
            named += [(("calls", i, "tool"), c.get("tool")) for i, c in enumerate(calls) if isinstance(c, Mapping)]
        for where, tool in named:
            if isinstance(tool, str) and tool not in tools:
                guess = difflib.get_close_matches(tool, sorted(tools), n=1)
                hint = f"; did you mean '{guess[0]}'?" if guess else f" (tools: {', '.join(sorted(tools))})"
                path = ("spec", "expectations", index, *where)
                raise located_error(doc, path, f"'{tool}' is not a tool of the twin{hint}")


def _check_patterns(doc: LoadedDocument, expectations: Iterable[Mapping[str, Any]]) -> None:
    """Refuse a regex that can never be used: invalid, or too long or costly to compile in the budget."""
    from twin_engine.compare import check_pattern

    for index, expectation in enumerate(expectations):
        fields = ["matches"] + (["pattern"] if expectation.get("type") == "outputRegex" else [])
        for field in fields:
            pattern = expectation.get(field)
            if isinstance(pattern, str) and (problem := check_pattern(pattern)) is not None:
                raise located_error(doc, ("spec", "expectations", index, field), problem)


def _expectations_with_ids(doc: LoadedDocument, items: Iterable[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    out: list[dict[str, Any]] = []
    first_index: dict[str, int] = {}
    for index, item in enumerate(items):
        expectation = deep_copy(item)
        expectation_id = expectation.setdefault("id", f"e{index + 1}")
        if expectation_id in first_index:
            earlier = first_index[expectation_id]
            where = ("spec", "expectations", index, "id") if "id" in item else ("spec", "expectations", index)
            raise located_error(
                doc,
                where,
                f"duplicate expectation id '{expectation_id}' (also expectations[{earlier}])",
            )
        first_index[expectation_id] = index
        out.append(expectation)
    return tuple(out)


# --- agent manifests --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ManifestTool:
    name: str
    risk: str | None  # the level, whether written as a string or as {level: ...}
    description: str | None
    approval_required_when: str | None
    input_schema: Mapping[str, Any] | None
    raw: Mapping[str, Any]


@dataclass(frozen=True)
class AgentManifest:
    name: str
    version: str
    description: str
    instructions: str
    model_provider: str
    model_name: str
    temperature: float | None
    max_steps: int | None
    max_tool_calls: int | None
    max_duration_seconds: float | None
    max_cost_usd: float | None
    tools: tuple[ManifestTool, ...]
    raw: Mapping[str, Any]
    source: str


def load_manifest(path: str | Path) -> AgentManifest:
    key = file_key(path, MANIFEST_MAX_BYTES)
    return cached(None if key is None else ("manifest-file", key), lambda: _load_manifest(path))


def _load_manifest(path: str | Path) -> AgentManifest:
    doc = load_manifest_document(path)
    data: dict[str, Any] = doc.data
    meta, spec = data["metadata"], data["spec"]
    tools: list[ManifestTool] = []
    for index, tool in enumerate(spec["tools"]):
        if any(known.name == tool["name"] for known in tools):
            raise located_error(doc, ("spec", "tools", index, "name"), f"duplicate tool '{tool['name']}'")
        risk = tool.get("risk")
        tools.append(
            ManifestTool(
                name=tool["name"],
                risk=risk.get("level") if isinstance(risk, dict) else risk,
                description=tool.get("description"),
                approval_required_when=tool.get("approval", {}).get("requiredWhen"),
                input_schema=tool.get("inputSchema"),
                raw=tool,
            )
        )
    model, limits = spec["model"], spec.get("limits", {})
    return AgentManifest(
        name=meta["name"],
        version=meta["version"],
        description=str(spec.get("description", meta.get("description", ""))).strip(),
        instructions=spec.get("instructions", ""),
        model_provider=model["provider"],
        model_name=model["name"],
        temperature=model.get("temperature"),
        max_steps=limits.get("maxSteps"),
        max_tool_calls=limits.get("maxToolCalls"),
        max_duration_seconds=limits.get("maxDurationSeconds"),
        max_cost_usd=limits.get("maxCostUsd"),
        tools=tuple(tools),
        raw=data,
        source=doc.source_name,
    )


def demo_manifest_versions() -> list[str]:
    """Versions of the packaged demo agent, oldest first."""
    stems = [p.stem for p in MANIFEST_DIR.glob("*.yaml")]
    return sorted(stems, key=lambda v: tuple(int(x) if x.isdigit() else 0 for x in v.split(".")))


def demo_manifest(version: str) -> AgentManifest:
    known = demo_manifest_versions()
    if version not in known:
        raise DefinitionError(f"unknown demo agent version '{version}'; known versions: {', '.join(known)}")
    return load_manifest(MANIFEST_DIR / f"{version}.yaml")

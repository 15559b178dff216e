"""A compiled twin.v1 definition (spec §2.1-2.2) and the scenario settings a case runs under."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from twin_engine.canonical import canonical_bytes, sha256_hex
from twin_engine.deep_copy import deep_copy
from twin_engine.errors import DefinitionError
from twin_engine.faults import FaultRule, case_seed, compile_fault_rules
from twin_engine.handlers import Handler, compile_handler
from twin_engine.parsed import cached
from twin_engine.steps import comprehension_bounds, loop_bounds
from twin_engine.templates import (
    TemplateScope,
    TemplateSyntaxError,
    check_path_template,
    check_template,
    shadowed_roots,
)
from twin_engine.tool_api import ToolSpec

RISKS = ("READ", "WRITE_REVERSIBLE", "WRITE_IRREVERSIBLE", "EXECUTE", "ADMIN")
MAX_INITIAL_STATE = 1 << 20
DEFAULT_KB_PATH = "kb"


@dataclass(frozen=True)
class ToolDef:
    name: str
    description: str
    risk: str
    risk_declared: bool
    handler: Handler
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    idempotency_argument: str | None = None
    idempotency_header: str | None = None  # lower-cased
    effect_key: str | None = None  # template
    tenant_path: str | None = None  # path template
    escalation: bool = False  # the tool hands the case to a person
    input_validator: Draft202012Validator | None = field(default=None, compare=False, repr=False)
    output_validator: Draft202012Validator | None = field(default=None, compare=False, repr=False)
    warnings: tuple[tuple[str, str], ...] = field(default=(), compare=False)  # (document path, message): not errors

    @property
    def expects_mutation(self) -> bool:
        return self.handler.expects_mutation

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.risk, deep_copy(self.input_schema))


def _validator(schema: Any, where: str) -> Draft202012Validator | None:
    if schema is None:
        return None
    if _mentions(schema, "patternProperties"):
        raise DefinitionError("patternProperties is not supported", path=where)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise DefinitionError(f"not a valid JSON Schema: {exc.message}", path=where) from exc
    return Draft202012Validator(schema)


def _mentions(schema: Any, key: str) -> bool:
    if isinstance(schema, dict):
        return key in schema or any(_mentions(v, key) for v in schema.values())
    if isinstance(schema, list):
        return any(_mentions(v, key) for v in schema)
    return False


def _argument_names(schema: Any) -> frozenset[str]:
    """The tool's argument names: its inputSchema's top-level properties (none when it has no schema)."""
    if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
        return frozenset(str(name) for name in schema["properties"])
    return frozenset()


def _compile_tool(name: str, raw: Mapping[str, Any], where: str) -> ToolDef:
    idempotency = raw.get("idempotency") or {}
    arguments = _argument_names(raw.get("inputSchema"))
    idempotency_argument = idempotency.get("argument") if isinstance(idempotency.get("argument"), str) else None
    if idempotency_argument:
        arguments |= {idempotency_argument}
    scope = TemplateScope(arguments, idempotency_argument, value=False)
    handler = compile_handler(dict(raw.get("handler") or {}), f"{where}.handler", scope)
    risk = raw.get("risk")
    if risk is not None and risk not in RISKS:
        raise DefinitionError(f"unknown risk {risk!r}", path=f"{where}.risk")
    declared = risk is not None
    if risk is None:  # conservative default: only a read handler is assumed harmless
        risk = "READ" if handler.kind == "read" else "WRITE_IRREVERSIBLE"
    effect_key = raw.get("effectKey")
    if effect_key is not None:
        try:
            check_template(effect_key, scope=scope)
        except TemplateSyntaxError as exc:
            raise DefinitionError(exc.message, path=f"{where}.effectKey") from exc
    tenant_path = raw.get("tenantPath")
    if tenant_path is not None:
        try:
            check_path_template(tenant_path, scope)
        except TemplateSyntaxError as exc:
            raise DefinitionError(exc.message, path=f"{where}.tenantPath") from exc
    header = idempotency.get("header")
    input_schema = raw.get("inputSchema")
    output_schema = raw.get("outputSchema")
    return ToolDef(
        name=name,
        description=str(raw.get("description") or ""),
        risk=str(risk),
        risk_declared=declared,
        handler=handler,
        input_schema=deep_copy(input_schema),
        output_schema=deep_copy(output_schema),
        idempotency_argument=idempotency.get("argument"),
        idempotency_header=header.lower() if isinstance(header, str) else None,
        effect_key=effect_key,
        tenant_path=tenant_path,
        escalation=raw.get("escalation") is True,
        input_validator=_validator(input_schema, f"{where}.inputSchema"),
        output_validator=_validator(output_schema, f"{where}.outputSchema"),
        warnings=(
            *(
                (f"{where}.inputSchema.properties.{arg}", why)
                for arg, why in shadowed_roots(arguments, idempotency_argument)
            ),
            *_loop_bounds(raw.get("handler"), f"{where}.handler"),
        ),
    )


def _loop_bounds(handler: Any, where: str) -> list[tuple[str, str]]:
    if not isinstance(handler, Mapping):
        return []
    loops = loop_bounds(handler.get("preconditions"), f"{where}.preconditions") + loop_bounds(
        handler.get("effects"), f"{where}.effects"
    )
    return loops + comprehension_bounds(dict(handler), where)


@dataclass(frozen=True)
class Twin:
    """A compiled, immutable twin definition. Cases are created with `new_case`."""

    name: str
    hash: str  # SHA-256 of the canonical definition
    definition: dict[str, Any] = field(repr=False)
    tools: Mapping[str, ToolDef] = field(repr=False)
    initial_state: dict[str, Any] = field(repr=False)
    secrets: tuple[str, ...] = ()
    tenant_key: str | None = None
    retrieval_path: str = DEFAULT_KB_PATH

    @classmethod
    def from_definition(cls, doc: Mapping[str, Any]) -> Twin:
        """Compile a schema-valid twin.v1 document; semantic problems raise DefinitionError. A document
        compiled before in this process (same canonical content) gives the same, immutable Twin."""
        digest = sha256_hex(doc)
        return cached(("twin", cls, digest), lambda: cls._compile(doc, digest))

    @classmethod
    def _compile(cls, doc: Mapping[str, Any], digest: str) -> Twin:
        spec = doc.get("spec") or {}
        initial = spec.get("initialState") or {}
        if not isinstance(initial, dict):
            raise DefinitionError("initialState must be an object", path="spec.initialState")
        if len(canonical_bytes(initial)) > MAX_INITIAL_STATE:
            raise DefinitionError("initialState is larger than 1 MiB", path="spec.initialState")
        tools_raw = spec.get("tools") or {}
        tools = {name: _compile_tool(name, raw, f"spec.tools.{name}") for name, raw in tools_raw.items()}
        retrieval = spec.get("retrieval") or {}
        return cls(
            name=str((doc.get("metadata") or {}).get("name", "")),
            hash=digest,
            definition=deep_copy(dict(doc)),
            tools=tools,
            initial_state=deep_copy(initial),
            secrets=tuple(spec.get("secrets") or ()),
            tenant_key=spec.get("tenantKey"),
            retrieval_path=str(retrieval.get("statePath") or DEFAULT_KB_PATH),
        )

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(self.tools)

    @property
    def escalation_tools(self) -> tuple[str, ...]:
        """The tools declared `escalation: true`, in document order."""
        return tuple(name for name, tool in self.tools.items() if tool.escalation)

    def warnings(self) -> tuple[tuple[str, str], ...]:
        """(document path, message) of what is legal but likely wrong (an argument named `state`), and of
        what costs more than a call may spend (nested loops: the bound the call runs under instead)."""
        return tuple(warning for tool in self.tools.values() for warning in tool.warnings)

    def tool_specs(self) -> tuple[ToolSpec, ...]:
        """What an agent is told about the tools, in document order."""
        return tuple(tool.spec() for tool in self.tools.values())


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        return None  # the scenario schema refuses these; a config built by hand has no limit then
    return float(value)


@dataclass(frozen=True)
class ScenarioConfig:
    """The parts of a scenario.v1 document the twin needs."""

    name: str = ""
    state_patch: dict[str, Any] | None = None
    allowed_tools: tuple[str, ...] | None = None  # None or empty = every tool
    faults: tuple[FaultRule, ...] = ()
    tenant: str | None = None
    now: str | None = None
    documents: tuple[dict[str, Any], ...] = ()
    seed: int | None = None
    timeout_seconds: float | None = None  # the case's wall-clock limit (spec.timeoutSeconds)

    @classmethod
    def from_scenario(cls, doc: Mapping[str, Any]) -> ScenarioConfig:
        spec = doc.get("spec") or {}
        inputs = spec.get("input") or {}
        context = inputs.get("context") or {}
        allowed = spec.get("allowedTools")
        tenant = context.get("tenant")
        now = context.get("now")
        return cls(
            name=str((doc.get("metadata") or {}).get("name", "")),
            state_patch=deep_copy(spec.get("state")),
            allowed_tools=tuple(allowed) if allowed else None,
            faults=compile_fault_rules(spec.get("faults") or ()),
            tenant=str(tenant) if tenant is not None else None,
            now=str(now) if now is not None else None,
            documents=tuple(deep_copy(d) for d in inputs.get("documents") or ()),
            seed=spec.get("seed"),
            timeout_seconds=_seconds(spec.get("timeoutSeconds")),
        )

    def case_seed(self, run_seed: int) -> int:
        """The seed of this scenario's case in a run: `spec.seed` if set, else derived from the run seed."""
        return case_seed(run_seed, self.name, self.seed)

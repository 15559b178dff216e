"""What a span says, whichever instrumentation wrote it: AgentTwin's SDK, the OpenTelemetry GenAI
semantic conventions, or OpenInference (OpenInference's LangChain, OpenAI Agents, Anthropic ... instrumentors).

`read_span` is pure and total: any attributes give a reading, never an exception (values that are not
the JSON they should be are ignored). The attribute names are the conventions' own; a unit test checks
each against the `openinference-semantic-conventions` and `opentelemetry-semantic-conventions` packages.

- **Role.** `openinference.span.kind` (TOOL, LLM, AGENT, CHAIN, ...); else `gen_ai.operation.name`
  (`execute_tool` → TOOL, `invoke_agent`/`create_agent` → AGENT, `chat`/`text_completion`/
  `generate_content` → LLM, `embeddings`, `retrieval`, `invoke_workflow` → CHAIN); else AgentTwin's
  `agenttwin.span.kind`; a span with a tool name is a TOOL.
- **A tool call.** Name: `gen_ai.tool.name`, `tool.name`. Arguments: `gen_ai.tool.call.arguments`, else
  `input.value`, else `tool.parameters` (when it is a JSON object, not a JSON Schema). Result:
  `gen_ai.tool.call.result`, else `output.value`.
- **A tool error** (TOOL spans), the first that applies: the span's status is ERROR; `error.type` is set;
  AgentTwin's `agenttwin.tool.result_status` is not `ok`; the result (JSON, or a LangChain ToolMessage whose
  `status` is `error` or whose `content` is JSON) has a truthy `error` field, `isError: true` (MCP), or an
  HTTP error status (400-599) in `status`, `status_code`, `statusCode`, `http_status` or `httpStatus`.
  Thin tools return a 504 or a 429 as text and the span stays OK: the result tells.
- **The agent.** Name: `agenttwin.agent.name`, `gen_ai.agent.name`, `agent.name`; else the name of a root
  AGENT span; else the resource's `service.name`. Version: `agenttwin.agent.version`, `gen_ai.agent.version`,
  else the resource's `service.version`. Each comes with a rank (attribute 3, root span 2, resource 1) so a
  trace takes the best one any of its spans gave.
- **An answer** (a candidate for the trace's final answer): `gen_ai.output.messages` (the last assistant
  message's text parts), `llm.output_messages.N.message.content`/`.contents` (the last assistant message,
  when it requests no tool), or, on AGENT spans and root spans, `output.value` (plain text, or the last AI
  message of a LangChain/LangGraph state, or an `output`/`final_output`/`content` field). A message that
  requests tools is not an answer.
- **Requested tool calls** (what the model asked for): `llm.output_messages.N.message.tool_calls.M.tool_call.*`
  and the `tool_call` parts of `gen_ai.output.messages`.
- **Subjects** (the business objects a trace acted on, e.g. `order:ORD-1001`): the `agenttwin.subject`
  attribute (comma-separated), and the `*_id` / `*Id` arguments of write tools, executed or requested
  (`order_id=ORD-1001` → `order:ORD-1001`; technical ids such as `session_id`, `trace_id` are not subjects).
  A tool is a write tool when `agenttwin.tool.risk` says WRITE_*, EXECUTE or ADMIN; without it, when its
  name's first word is a write verb (refund, cancel, create, update, delete, ...) or is not a read verb
  (get, lookup, search, list, ...) and a later word is a write verb (`payments_refund`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from streams._fast_init import fast_init
from streams.events import SpanRecorded

# OpenInference (openinference.semconv.trace)
OI_SPAN_KIND = "openinference.span.kind"
OI_TOOL_NAME = "tool.name"
OI_TOOL_PARAMETERS = "tool.parameters"
OI_INPUT_VALUE = "input.value"
OI_OUTPUT_VALUE = "output.value"
OI_AGENT_NAME = "agent.name"
OI_LLM_OUTPUT_MESSAGES = "llm.output_messages"
OI_MESSAGE_ROLE = "message.role"
OI_MESSAGE_CONTENT = "message.content"
OI_MESSAGE_CONTENTS = "message.contents"
OI_MESSAGE_TOOL_CALLS = "message.tool_calls"
OI_TOOL_CALL_ID = "tool_call.id"
OI_TOOL_CALL_FUNCTION_NAME = "tool_call.function.name"
OI_TOOL_CALL_FUNCTION_ARGUMENTS = "tool_call.function.arguments"
OI_MESSAGE_CONTENT_TEXT = "message_content.text"
OI_SPAN_KINDS = (
    "TOOL",
    "CHAIN",
    "LLM",
    "RETRIEVER",
    "EMBEDDING",
    "AGENT",
    "RERANKER",
    "UNKNOWN",
    "GUARDRAIL",
    "EVALUATOR",
    "PROMPT",
    "DECISION",
)

# OpenTelemetry GenAI (opentelemetry.semconv._incubating.attributes.gen_ai_attributes)
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_AGENT_VERSION = "gen_ai.agent.version"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"  # opentelemetry.semconv.attributes.error_attributes
SERVICE_NAME = "service.name"
SERVICE_VERSION = "service.version"
GEN_AI_OPERATIONS = {
    "execute_tool": "TOOL",
    "invoke_agent": "AGENT",
    "create_agent": "AGENT",
    "chat": "LLM",
    "text_completion": "LLM",
    "generate_content": "LLM",
    "embeddings": "EMBEDDING",
    "retrieval": "RETRIEVER",
    "invoke_workflow": "CHAIN",
}

# AgentTwin's own (producers/sdk/attributes.py writes them)
AT_SPAN_KIND = "agenttwin.span.kind"
AT_AGENT_NAME = "agenttwin.agent.name"
AT_AGENT_VERSION = "agenttwin.agent.version"
AT_TOOL_RISK = "agenttwin.tool.risk"
AT_TOOL_RESULT_STATUS = "agenttwin.tool.result_status"
AT_CLAIM = "agenttwin.outcome.claimed"
AT_SUBJECT = "agenttwin.subject"
AT_SPAN_KINDS = {"agent": "AGENT", "tool": "TOOL", "model": "LLM"}
UNKNOWN_SERVICE = "unknown_service"


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


WRITE_RISKS = frozenset({"WRITE_IRREVERSIBLE", "WRITE_REVERSIBLE", "EXECUTE", "ADMIN"})
WRITE_VERBS = _word_set(
    "refund refunds cancel cancels create creates update updates delete deletes remove send charge pay "
    "transfer issue submit write post put patch set add approve reject book reserve purchase place close "
    "assign modify change apply credit debit void capture ship schedule reschedule register grant revoke "
    "reset upload insert mark archive restore enable disable execute trigger deploy process confirm "
    "reverse waive unlock lock move rename replace return order buy sell withdraw deposit activate "
    "deactivate suspend terminate escalate"
)
READ_VERBS = _word_set(
    "get lookup look search list read fetch find query check describe retrieve view show count validate "
    "verify inspect estimate calculate compute preview"
)
NOT_SUBJECTS = _word_set(
    "trace span session conversation request call tool_call correlation message run thread parent "
    "idempotency event trace_parent"
)
MAX_JSON_CHARS = 1 << 20  # larger values are not parsed
MAX_ANSWER_CHARS = 4000  # an answer is kept to this many characters
_SUBJECT = re.compile(r"^([a-z][a-z0-9_.-]{0,63}):(\S(?:.{0,198}\S)?)$", re.DOTALL)
_HTTP_STATUS_KEYS = ("status", "status_code", "statusCode", "http_status", "httpStatus")
_MESSAGE_INDEX = re.compile(r"^llm\.output_messages\.(\d+)\.(.+)$")


@fast_init
@dataclass(frozen=True)
class RequestedCall:
    """A tool call the model asked for (it may or may not have run)."""

    name: str
    arguments: Mapping[str, Any] | None
    call_id: str | None = None


@fast_init  # one per span, on the receiver's path (streams/_fast_init.py)
@dataclass(frozen=True)
class SpanReading:
    role: str | None = None
    tool_name: str | None = None
    tool_arguments: Mapping[str, Any] | None = None
    tool_error: str | None = None  # TOOL spans: why the call failed; None when it did not
    tool_risk: str | None = None  # as declared (agenttwin.tool.risk), upper-cased
    write: bool = False  # a write tool (declared, or by its name)
    agent_name: str | None = None
    agent_name_rank: int = 0  # 3 attribute, 2 root AGENT span's name, 1 resource service.name
    agent_version: str | None = None
    agent_version_rank: int = 0  # 3 attribute, 1 resource service.version
    answer: str | None = None
    requested_calls: tuple[RequestedCall, ...] = ()
    claim: str | None = None  # an explicit claim (agenttwin.outcome.claimed), upper-cased
    subjects: tuple[tuple[str, str | None], ...] = ()  # (subject, the write tool that named it, if one did)

    @property
    def is_tool(self) -> bool:
        return self.role == "TOOL" and bool(self.tool_name)


def parse_json(text: str | None) -> Any:
    """The JSON value of a text, or None when it is not JSON (or too large or too deep to read safely)."""
    if not text or len(text) > MAX_JSON_CHARS or text.lstrip()[:1] not in ("{", "[", '"'):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def normalize_subject(text: str | None) -> str | None:
    """`entity:value` with a lower-case entity (`order:ORD-1001`), or None when it is not one."""
    if not isinstance(text, str):
        return None
    entity, colon, value = text.strip().partition(":")
    candidate = f"{entity.strip().lower()}:{value.strip()}"
    if not colon or not _SUBJECT.match(candidate) or any(ord(c) < 32 for c in candidate):
        return None
    return candidate


def _words(name: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return [w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w]


def is_write_tool(name: str, risk: str | None = None) -> bool:
    """Declared by risk when given; else by the tool's name (see the module docstring)."""
    if risk:
        return risk.upper() in WRITE_RISKS
    words = _words(name)
    if not words:
        return False
    if words[0] in WRITE_VERBS:
        return True
    return words[0] not in READ_VERBS and any(w in WRITE_VERBS for w in words[1:])


def subjects_of_arguments(arguments: Mapping[str, Any] | None) -> tuple[str, ...]:
    """`order_id=ORD-1001` → `order:ORD-1001`, for every `*_id`/`*Id` argument that names a business object."""
    if not isinstance(arguments, Mapping):
        return ()
    out: list[str] = []
    for key, value in arguments.items():
        if not isinstance(key, str) or isinstance(value, bool) or not isinstance(value, str | int):
            continue
        words = _words(key)
        if len(words) < 2 or words[-1] != "id":
            continue
        entity = "_".join(words[:-1])
        if entity in NOT_SUBJECTS:
            continue
        subject = normalize_subject(f"{entity}:{value}")
        if subject and subject not in out:
            out.append(subject)
    return tuple(out)


def _role(attrs: Mapping[str, str]) -> str | None:
    kind = attrs.get(OI_SPAN_KIND, "").strip().upper()
    if kind and kind != "UNKNOWN":
        return kind
    operation = GEN_AI_OPERATIONS.get(attrs.get(GEN_AI_OPERATION_NAME, "").strip().lower())
    if operation:
        return operation
    own = AT_SPAN_KINDS.get(attrs.get(AT_SPAN_KIND, "").strip().lower())
    if own:
        return own
    if attrs.get(GEN_AI_TOOL_NAME) or attrs.get(OI_TOOL_NAME):
        return "TOOL"
    return None


def _arguments(attrs: Mapping[str, str]) -> Mapping[str, Any] | None:
    for key in (GEN_AI_TOOL_CALL_ARGUMENTS, OI_INPUT_VALUE, OI_TOOL_PARAMETERS):
        value = parse_json(attrs.get(key))
        if isinstance(value, str):  # arguments JSON-encoded twice
            value = parse_json(value)
        if isinstance(value, dict) and not (key == OI_TOOL_PARAMETERS and "properties" in value):
            return value
    return None


def _unwrap_result(value: Any) -> Any:
    """A LangChain ToolMessage dump ({"type": "tool", "data": {...}}) -> its data; JSON text -> its value."""
    if isinstance(value, dict) and value.get("type") == "tool" and isinstance(value.get("data"), dict):
        value = value["data"]
    if isinstance(value, str):
        parsed = parse_json(value)
        return parsed if parsed is not None else value
    return value


def _http_error(doc: Mapping[str, Any]) -> str | None:
    for key in _HTTP_STATUS_KEYS:
        raw = doc.get(key)
        if isinstance(raw, bool):
            continue
        try:
            status = int(raw) if isinstance(raw, int | str) else None
        except ValueError:
            continue
        if status is not None and 400 <= status <= 599:
            return f"HTTP {status}"
    return None


def _text(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def result_error(result: Any) -> str | None:
    """Why a tool result says the call failed (see the module docstring), or None."""
    doc = result
    if isinstance(doc, dict) and doc.get("type") == "tool" and isinstance(doc.get("data"), dict):
        data = doc["data"]
        if str(data.get("status", "")).lower() == "error":
            return "tool error: " + _text(data.get("content", ""))
        doc = data.get("content")
    doc = _unwrap_result(doc)
    if not isinstance(doc, dict):
        return None
    http = _http_error(doc)
    error = doc.get("error")
    said = _text(error) if error not in (None, False, "", {}, []) else None
    if http:
        return f"{http}: {said}" if said else http
    if said:
        return "error: " + said
    if doc.get("isError") is True:
        return "error: " + _text(doc.get("content", "isError"))
    return None


class SpanFields(Protocol):
    """What a reading reads of a span (a SpanRecorded, or the receiver's span before its event is built)."""

    @property
    def attributes(self) -> Mapping[str, str]: ...
    @property
    def resource_attributes(self) -> Mapping[str, str]: ...
    @property
    def parent_span_id(self) -> str | None: ...
    @property
    def name(self) -> str: ...
    @property
    def status_code(self) -> str: ...
    @property
    def status_message(self) -> str | None: ...


def _tool_error(span: SpanFields, attrs: Mapping[str, str]) -> str | None:
    if span.status_code == "ERROR":
        return span.status_message or attrs.get(ERROR_TYPE) or "span status ERROR"
    if attrs.get(ERROR_TYPE):
        return attrs[ERROR_TYPE]
    declared = attrs.get(AT_TOOL_RESULT_STATUS, "").strip().lower()
    if declared and declared != "ok":
        return declared
    for key in (GEN_AI_TOOL_CALL_RESULT, OI_OUTPUT_VALUE):
        raw = attrs.get(key)
        if raw is None:
            continue
        parsed = parse_json(raw)
        return result_error(parsed if parsed is not None else raw)
    return None


def _message_text(message: Mapping[str, Any]) -> str | None:
    """The text of a LangChain message (dump or constructor form) or a GenAI/OpenAI-style message."""
    data = message.get("data") if isinstance(message.get("data"), dict) else message.get("kwargs", message)
    if not isinstance(data, dict):
        return None
    if data.get("tool_calls"):
        return None
    content = data.get("content")
    if isinstance(content, str):
        return content.strip() or None
    if isinstance(content, list):  # content blocks
        blocks = [p.get("text") if isinstance(p, dict) else p for p in content if isinstance(p, str | dict)]
        text = " ".join(p for p in blocks if isinstance(p, str) and p.strip())
        return text.strip() or None
    parts = data.get("parts")
    if isinstance(parts, list):
        if any(isinstance(p, dict) and p.get("type") == "tool_call" for p in parts):
            return None
        texts = [p.get("content") for p in parts if isinstance(p, dict) and p.get("type") == "text"]
        text = " ".join(t for t in texts if isinstance(t, str) and t.strip())
        return text.strip() or None
    return None


def _is_ai(message: Mapping[str, Any]) -> bool:
    kind = str(message.get("type") or message.get("role") or "").lower()
    if kind in ("ai", "assistant", "aimessage", "aimessagechunk"):
        return True
    ident = message.get("id")
    return isinstance(ident, list) and bool(ident) and str(ident[-1]).startswith("AIMessage")


def _answer_of_value(value: Any) -> str | None:
    """The final answer an agent's output holds: text, a state's last AI message, or an output field."""
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, list):
        messages = [m for m in value if isinstance(m, dict)]
        for message in reversed(messages):
            if _is_ai(message):
                return _message_text(message)
        return None
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("messages"), list):
        return _answer_of_value(value["messages"])
    if _is_ai(value):
        return _message_text(value)
    for key in ("final_output", "output", "answer", "content", "text", "result"):
        inner = value.get(key)
        if isinstance(inner, str) and inner.strip():
            return inner.strip()
    return None


def _output_messages(attrs: Mapping[str, str]) -> dict[int, dict[str, str]]:
    """llm.output_messages.N.<rest> flattened attributes, grouped by N."""
    out: dict[int, dict[str, str]] = {}
    for key, value in attrs.items():
        if not key.startswith(OI_LLM_OUTPUT_MESSAGES):
            continue
        match = _MESSAGE_INDEX.match(key)
        if match:
            out.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return out


def _flat_tool_calls(fields: Mapping[str, str]) -> Iterator[RequestedCall]:
    prefix = OI_MESSAGE_TOOL_CALLS + "."
    calls: dict[int, dict[str, str]] = {}
    for key, value in fields.items():
        if key.startswith(prefix):
            index, _, rest = key[len(prefix) :].partition(".")
            if index.isdigit():
                calls.setdefault(int(index), {})[rest] = value
    for _, call in sorted(calls.items()):
        name = call.get(OI_TOOL_CALL_FUNCTION_NAME)
        if name:
            args = parse_json(call.get(OI_TOOL_CALL_FUNCTION_ARGUMENTS))
            yield RequestedCall(name, args if isinstance(args, dict) else None, call.get(OI_TOOL_CALL_ID))


def _llm_output(attrs: Mapping[str, str]) -> tuple[str | None, list[RequestedCall]]:
    answer: str | None = None
    calls: list[RequestedCall] = []
    for _, fields in sorted(_output_messages(attrs).items()):
        role = fields.get(OI_MESSAGE_ROLE, "assistant").lower()
        if role not in ("assistant", "ai", "model"):
            continue
        requested = list(_flat_tool_calls(fields))
        calls += requested
        if requested:
            answer = None
            continue
        text = fields.get(OI_MESSAGE_CONTENT)
        if not text:
            texts = [
                v
                for k, v in sorted(fields.items())
                if k.startswith(OI_MESSAGE_CONTENTS) and k.endswith(OI_MESSAGE_CONTENT_TEXT)
            ]
            text = " ".join(texts)
        answer = text.strip() or None if text else answer
    messages = parse_json(attrs.get(GEN_AI_OUTPUT_MESSAGES))
    if isinstance(messages, list):
        for message in messages:
            if not isinstance(message, dict) or str(message.get("role", "")).lower() != "assistant":
                continue
            parts = message.get("parts")
            for part in parts if isinstance(parts, list) else []:
                if isinstance(part, dict) and part.get("type") == "tool_call" and isinstance(part.get("name"), str):
                    args = part.get("arguments")
                    args = parse_json(args) if isinstance(args, str) else args
                    calls.append(RequestedCall(part["name"], args if isinstance(args, dict) else None, part.get("id")))
            answer = _message_text(message)
    return answer, calls


def _clip(text: str | None) -> str | None:
    if not text:
        return None
    return text if len(text) <= MAX_ANSWER_CHARS else text[: MAX_ANSWER_CHARS - 1] + "…"


_KEPT = "_span_reading"  # read_span's answer, kept on the span (an attribute outside its fields)


def read_span(span: SpanRecorded) -> SpanReading:
    """What the span says (see the module docstring). Pure: the same span always reads the same, so the
    reading is kept on the span: the receiver reads it, and the join gets the same object in memory."""
    kept: SpanReading | None = span.__dict__.get(_KEPT)
    if kept is None:
        kept = read_fields(span)
        keep_reading(span, kept)
    return kept


def keep_reading(span: SpanRecorded, reading: SpanReading) -> None:
    """Remember `reading` as what `span` says (the receiver read it from the same fields)."""
    object.__setattr__(span, _KEPT, reading)  # a frozen dataclass: not one of its fields, never encoded


def read_fields(span: SpanFields) -> SpanReading:
    """`read_span` of anything with a span's fields."""
    attrs, resource = span.attributes, span.resource_attributes
    root = span.parent_span_id is None
    role = _role(attrs)
    tool_name = (attrs.get(GEN_AI_TOOL_NAME) or attrs.get(OI_TOOL_NAME) or "").strip() or None
    if role == "TOOL" and tool_name is None:
        tool_name = span.name.removeprefix("execute_tool ").strip() or None
    risk = attrs.get(AT_TOOL_RISK, "").strip().upper() or None
    arguments = _arguments(attrs) if role == "TOOL" else None
    write = role == "TOOL" and tool_name is not None and is_write_tool(tool_name, risk)

    agent_name, name_rank = None, 0
    for key in (AT_AGENT_NAME, GEN_AI_AGENT_NAME, OI_AGENT_NAME):
        if attrs.get(key, "").strip():
            agent_name, name_rank = attrs[key].strip(), 3
            break
    if agent_name is None and root and role == "AGENT" and span.name.strip():
        agent_name, name_rank = span.name.strip().removeprefix("invoke_agent ").strip(), 2
    service = resource.get(SERVICE_NAME, "").strip()
    if agent_name is None and service and not service.startswith(UNKNOWN_SERVICE):
        agent_name, name_rank = service, 1
    agent_version, version_rank = None, 0
    for key in (AT_AGENT_VERSION, GEN_AI_AGENT_VERSION):
        if attrs.get(key, "").strip():
            agent_version, version_rank = attrs[key].strip(), 3
            break
    if agent_version is None and resource.get(SERVICE_VERSION, "").strip():
        agent_version, version_rank = resource[SERVICE_VERSION].strip(), 1

    answer: str | None = None
    requested: list[RequestedCall] = []
    if role != "TOOL":
        answer, requested = _llm_output(attrs)
        if answer is None and (root or role == "AGENT") and OI_OUTPUT_VALUE in attrs:
            raw = attrs[OI_OUTPUT_VALUE]
            parsed = parse_json(raw)
            answer = _answer_of_value(parsed if parsed is not None else raw)

    subjects: dict[str, str | None] = {}
    for item in attrs.get(AT_SUBJECT, "").split(","):
        subject = normalize_subject(item)
        if subject:
            subjects.setdefault(subject, tool_name if write else None)
    if write:
        for subject in subjects_of_arguments(arguments):
            subjects.setdefault(subject, tool_name)
    for call in requested:
        if is_write_tool(call.name):
            for subject in subjects_of_arguments(call.arguments):
                subjects.setdefault(subject, call.name)

    claim = attrs.get(AT_CLAIM, "").strip().upper() or None
    return SpanReading(
        role=role,
        tool_name=tool_name if role == "TOOL" else None,
        tool_arguments=arguments,
        tool_error=_tool_error(span, attrs) if role == "TOOL" else None,
        tool_risk=risk,
        write=write,
        agent_name=agent_name,
        agent_name_rank=name_rank,
        agent_version=agent_version,
        agent_version_rank=version_rank,
        answer=_clip(answer),
        requested_calls=tuple(requested),
        claim=claim,
        subjects=tuple(subjects.items()),
    )


def answer_rank(span: SpanRecorded) -> tuple[bool, int, str]:
    """How a trace chooses its final answer among its spans' answers: a root span's first, else the one
    that ended last (ties by span id)."""
    return (span.parent_span_id is None, span.end_unix_nano, span.span_id)

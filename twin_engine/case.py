"""One case of a twin: its state, counters, idempotency slots and the per-call pipeline (§2.7-2.9).

Pipeline of `call`: count -> gate -> fault selection (pre-execution faults answer here) ->
idempotency lookup -> tenant check -> handler -> output schema -> commit -> fault transformation
-> record -> reply. A tool error travels as ToolFailure and becomes a reply in `_execute`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from twin_engine.adapters import AdapterRegistry
from twin_engine.budget import Budget
from twin_engine.canonical import canonical_bytes, sha256_hex, state_hash
from twin_engine.deep_copy import deep_copy
from twin_engine.diff import diff_states
from twin_engine.failures import ToolFailure
from twin_engine.faults import FaultBehavior, check_targets, select_fault
from twin_engine.gate import gate, idempotency_key, schema_problems
from twin_engine.handlers import Execution, execute
from twin_engine.kb import clamp_limit, collect_documents, search
from twin_engine.limits import (
    Breach,
    kb_query_breach,
    preview,
    preview_text,
    recorded_tool_name,
    tool_name_breach,
)
from twin_engine.merge_patch import merge_patch
from twin_engine.paths import MISSING, get_path
from twin_engine.records import CallRecord, RetrievalRecord, StateChange
from twin_engine.replies import TwinReply, call_status
from twin_engine.templates import DEFAULT_NOW, TemplateEnv, render, render_path, to_text
from twin_engine.twin import ScenarioConfig, ToolDef, Twin

REPLAY_HEADER = "Idempotent-Replayed"
CASE_TIME_LIMIT = "CASE_TIME_LIMIT"


@dataclass(frozen=True)
class KbAnswer:
    documents: list[dict[str, Any]]
    refusal: Breach | None  # set when the query went over a limit


@dataclass(frozen=True)
class _Slot:
    args_hash: str
    status: int
    result: Any


@dataclass(frozen=True)
class _Delivered:
    status: int
    body: Any
    headers: dict[str, str]
    error_code: str | None


@dataclass
class _Outcome:
    """The Execute step's result, before the fault transformation."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    error_code: str | None = None
    result: Any = MISSING  # the real result on success
    mutated: bool = False
    changes: tuple[StateChange, ...] = ()
    replayed: bool = False
    cross_tenant: str | None = None
    policy_violation: str | None = None

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


def _failure_outcome(failure: ToolFailure, **extra: Any) -> _Outcome:
    return _Outcome(failure.status, failure.reply_body(), error_code=failure.code, **extra)


class TwinCase:
    """A running case. Not thread-safe: calls of one case are applied serially, in order."""

    def __init__(
        self,
        twin: Twin,
        scenario: ScenarioConfig,
        *,
        seed: int = 0,
        tenant: str | None = None,
        adapters: AdapterRegistry | None = None,
    ) -> None:
        check_targets(scenario.faults, twin.tools)
        self.twin = twin
        self.scenario = scenario
        self.seed = seed
        self.tenant = tenant if tenant is not None else scenario.tenant
        self.now = scenario.now or DEFAULT_NOW
        self.adapters = adapters
        base = twin.initial_state
        self._initial: dict[str, Any] = (
            merge_patch(base, scenario.state_patch) if scenario.state_patch is not None else deep_copy(base)
        )
        self._state: dict[str, Any] = deep_copy(self._initial)
        self._seq = 0
        self._call_counts: dict[str, int] = {}
        self._slots: dict[tuple[str, str], _Slot] = {}
        self._last_replies: dict[str, _Delivered] = {}
        self._records: list[CallRecord] = []
        self._retrievals: list[RetrievalRecord] = []
        # spec.timeoutSeconds: past it no call is carried out (each is refused and recorded), and a call
        # running when it passes is stopped by its budget's deadline
        limit = scenario.timeout_seconds
        self.deadline: float | None = time.monotonic() + limit if limit is not None else None

    # ------------------------------------------------------------ views

    @property
    def records(self) -> tuple[CallRecord, ...]:
        return tuple(self._records)

    @property
    def retrievals(self) -> tuple[RetrievalRecord, ...]:
        return tuple(self._retrievals)

    @property
    def state(self) -> dict[str, Any]:
        return deep_copy(self._state)

    @property
    def initial(self) -> dict[str, Any]:
        return deep_copy(self._initial)

    @property
    def seq(self) -> int:
        return self._seq

    def state_hash(self) -> str:
        return state_hash(self._state)

    # ------------------------------------------------------------ retrieval

    def search_kb(self, query: str, limit: int = 3) -> list[dict[str, Any]]:
        """Search the knowledge base; shares the case's `seq` and records a retrieval step."""
        return self.search_kb_checked(query, limit).documents

    def search_kb_checked(self, query: Any, limit: Any = 3) -> KbAnswer:
        """As `search_kb`, and says when the query was refused (over a limit: no documents, still recorded)."""
        self._seq += 1
        breach = kb_query_breach(query)
        if breach is None and self.timed_out():
            breach = Breach(409, CASE_TIME_LIMIT, "The case went over its timeoutSeconds: no search is carried out.")
        if breach is None and (isinstance(limit, bool) or not isinstance(limit, int)):
            breach = Breach(400, "INVALID_QUERY", "The limit must be an integer.")
        if breach is not None:
            shown = limit if isinstance(limit, int) and not isinstance(limit, bool) else 0
            self._retrievals.append(
                RetrievalRecord(seq=self._seq, query=preview_text(query), limit=clamp_limit(shown), refused=breach.code)
            )
            return KbAnswer([], breach)
        limit = clamp_limit(limit)
        docs = collect_documents(self._state, self.twin.retrieval_path, self.scenario.documents)
        found = search(docs, query, limit)
        self._retrievals.append(
            RetrievalRecord(
                seq=self._seq,
                query=query,
                limit=limit,
                documents=tuple({"id": d.id, "trusted": d.trusted} for d in found),
            )
        )
        return KbAnswer([d.for_agent() for d in found], None)

    # ------------------------------------------------------------ calls

    def call(
        self, tool: str, arguments: Any, headers: Mapping[str, str] | None = None, role: str = "agent"
    ) -> TwinReply:
        """Invoke `tool` as the caller would over HTTP; every call leaves a record, whatever it sends.

        Hostile input is refused with a record by the gate (twin_engine/limits.py). A failure of the
        twin itself is recorded too (500 TWIN_ERROR) and answered, never raised: the case is graded on
        its records either way.
        """
        if self.timed_out():
            message = (
                f"The case went over its timeoutSeconds ({self.scenario.timeout_seconds:g} s): no call is carried out."
            )
            return self.refuse(tool, 409, CASE_TIME_LIMIT, message, arguments)
        self._seq += 1
        name = recorded_tool_name(tool)
        call_number = self._call_counts.get(name, 0) + 1
        self._call_counts[name] = call_number
        seq = self._seq
        before = self._state
        try:
            reply, again = self._call(tool, name, arguments, headers, role, seq, call_number)
        except Exception as exc:  # boundary: the twin's own failure is evidence too
            return self._twin_failure(name, arguments, seq, call_number, before, exc, redelivered=False)
        if again is not None:
            self._seq += 1  # the network delivers the same request again: a new record, same call number
            before = self._state
            try:
                again(self._seq)
            except Exception as exc:  # boundary, as above
                self._twin_failure(name, arguments, self._seq, call_number, before, exc, redelivered=True)
        return reply

    def timed_out(self) -> bool:
        """The scenario's timeoutSeconds has passed since the case began."""
        return self.deadline is not None and time.monotonic() > self.deadline

    def _budget(self) -> Budget:
        """A call's budget; its deadline is the case's when that comes first."""
        budget = Budget()
        if self.deadline is not None and self.deadline < budget.deadline:
            budget.deadline = self.deadline
        return budget

    def refuse(self, tool: Any, status: int, code: str, message: str, arguments: Any = None) -> TwinReply:
        """Record a call refused before its arguments could be read (an HTTP body too large, not JSON,
        nested past what a parser takes): numbered and recorded like any call, arguments None - or, for a
        call refused whatever it sends (past the case's time), a bounded preview of them."""
        self._seq += 1
        name = recorded_tool_name(tool)
        call_number = self._call_counts.get(name, 0) + 1
        self._call_counts[name] = call_number
        tdef = self.twin.tools.get(name) if tool_name_breach(tool) is None else None
        out = _failure_outcome(ToolFailure(status, code, message))
        shown = None if arguments is None else preview(arguments)
        return self._deliver(name, tdef, shown, self._seq, call_number, None, out, None, remember=False)

    def _call(
        self,
        tool: Any,
        name: str,
        arguments: Any,
        headers: Any,
        role: str,
        seq: int,
        call_number: int,
    ) -> tuple[TwinReply, Callable[[int], None] | None]:
        """The pipeline of one call; returns the reply and, under message_duplication, the redelivery."""
        tdef = self.twin.tools.get(tool) if isinstance(tool, str) else None
        checked = gate(tool, tdef, arguments, role, self.scenario.allowed_tools, headers)
        args = checked.arguments
        if checked.refusal is not None or tdef is None:
            failure = checked.refusal or ToolFailure(404, "UNKNOWN_TOOL", f"Unknown tool: {name}.")
            out = _failure_outcome(failure, policy_violation=checked.policy_violation)
            return self._deliver(name, tdef, args, seq, call_number, None, out, None, remember=False), None

        key = idempotency_key(tdef, args, checked.headers)
        env = TemplateEnv(
            args=args,
            state=self._state,
            tenant=self.tenant,
            idempotency_key=key,
            now=self.now,
            seq=seq,
            call_number=call_number,
            budget=self._budget(),
        )
        rule = select_fault(self.scenario.faults, name, call_number, args, self.seed)
        fault = rule.behavior if rule is not None else None

        if fault is not None and not fault.spec.executes:
            out = self._fault_error(fault, env, MISSING) if fault.spec.error else _Outcome(0, None)
            reply = self._deliver(name, tdef, args, seq, call_number, key, out, fault)
        else:
            out = self._execute(tdef, args, key, env, fault)
            out = self._transform(tdef, out, fault, env)
            reply = self._deliver(name, tdef, args, seq, call_number, key, out, fault)

        if fault is None or fault.type != "message_duplication":
            return reply, None
        duplicated = fault

        def again(redelivery_seq: int) -> None:
            env2 = replace(env, seq=redelivery_seq)
            out2 = self._execute(tdef, args, key, env2, None)
            self._records.append(
                self._record(
                    tdef.name,
                    tdef,
                    args,
                    redelivery_seq,
                    call_number,
                    key,
                    out2,
                    duplicated,
                    None,
                    redelivered=True,
                    delay_ms=0,
                )
            )

        return reply, again

    def _twin_failure(
        self,
        name: str,
        arguments: Any,
        seq: int,
        call_number: int,
        before: dict[str, Any],
        exc: Exception,
        *,
        redelivered: bool,
    ) -> TwinReply:
        """Record and answer a failure of the twin itself (500 TWIN_ERROR), with whatever state it changed."""
        self._records = [r for r in self._records if r.seq != seq]  # a half-made record of this call
        changes: tuple[StateChange, ...] = ()
        if self._state is not before:
            try:
                changes = diff_states(before, self._state)
            except Exception:  # boundary: the failure record must be made whatever the state holds
                changes = ()
        message = f"The twin failed while handling this call ({type(exc).__name__})."
        failure = ToolFailure(500, "TWIN_ERROR", message)
        tdef = self.twin.tools.get(name)
        record = CallRecord(
            seq=seq,
            call_number=call_number,
            tool=name,
            arguments=preview(arguments),
            http_status=failure.status,
            status=call_status(failure.status, failure.code, None),
            error_code=failure.code,
            response=failure.reply_body(),
            risk=tdef.risk if tdef is not None else None,
            fault=None,
            mutated=bool(changes),
            expects_mutation=tdef.expects_mutation if tdef is not None else False,
            replayed=False,
            effect_key=None,
            cross_tenant=None,
            policy_violation=None,
            redelivered=redelivered,
            changes=changes,
        )
        self._records.append(record)
        body = failure.reply_body()
        return TwinReply(failure.status, body, {}, None, canonical_bytes(body), 0, record)

    def _execute(
        self,
        tdef: ToolDef,
        args: dict[str, Any],
        key: str | None,
        env: TemplateEnv,
        fault: FaultBehavior | None,
    ) -> _Outcome:
        """Idempotency lookup, tenant check, handler, output schema, commit (spec §2.8 step 4-5)."""
        env = replace(env, state=self._state)  # the state as it is now (an earlier delivery may have changed it)
        args_hash = sha256_hex(args)
        if key is not None:
            slot = self._slots.get((tdef.name, key))
            if slot is not None:
                if slot.args_hash != args_hash:
                    return _failure_outcome(
                        ToolFailure(
                            409,
                            "IDEMPOTENCY_CONFLICT",
                            "This idempotency key was already used with different arguments.",
                        )
                    )
                leak = self._leak(slot.result)
                return _Outcome(
                    slot.status,
                    {"result": deep_copy(slot.result)},
                    {REPLAY_HEADER: "true"},
                    result=deep_copy(slot.result),
                    replayed=True,
                    cross_tenant=leak,
                    policy_violation="CROSS_TENANT" if leak else None,
                )
        mode = fault.spec.state if fault is not None else "normal"
        try:
            if self._foreign_entity(tdef, env):
                return _failure_outcome(
                    ToolFailure(403, "ACCESS_DENIED", "This record belongs to another tenant."),
                    cross_tenant="denied",
                    policy_violation="CROSS_TENANT",
                )
            done = execute(
                Execution(
                    tdef.name,
                    tdef.handler,
                    env,
                    self._initial,
                    stale=mode == "stale",
                    adapters=self.adapters,
                    first_effect_only=mode == "first_effect",
                )
            )
            if tdef.output_validator is not None:
                problems = schema_problems(tdef.output_validator, done.result)
                if problems:
                    message = f"The tool's reply breaks its outputSchema: {problems[0]}"
                    raise ToolFailure(500, "TWIN_CONTRACT_VIOLATION", message)
        except ToolFailure as failure:
            return _failure_outcome(failure)

        commit = done.state
        if mode == "discarded":
            commit = None
        elif mode == "first_effect":
            commit = done.partial_state
        changes: tuple[StateChange, ...] = ()
        if commit is not None:
            changes = diff_states(self._state, commit)
            self._state = commit
        if key is not None and mode != "first_effect":
            self._slots[(tdef.name, key)] = _Slot(args_hash, done.status, deep_copy(done.result))
        leak = self._leak(done.result)
        return _Outcome(
            done.status,
            {"result": done.result},
            dict(done.headers),
            result=done.result,
            # A write whose change list is empty changed nothing: it is not an applied effect.
            mutated=bool(changes) and (done.mutated or mode == "first_effect"),
            changes=changes,
            cross_tenant=leak,
            policy_violation="CROSS_TENANT" if leak else None,
        )

    def _foreign_entity(self, tdef: ToolDef, env: TemplateEnv) -> bool:
        """The tenant check (spec §2.8 step 5): True when the entity belongs to another tenant."""
        tenant_key = self.twin.tenant_key
        if not (tdef.tenant_path and tenant_key and self.tenant):
            return False
        try:
            path = render_path(tdef.tenant_path, env)
        except ToolFailure as failure:
            if failure.code == "MISSING_ARGUMENT":  # no entity named: nothing to check
                return False
            raise
        entity = get_path(self._state, path)
        if not isinstance(entity, dict):
            return False
        owner = entity.get(tenant_key)
        return owner is not None and owner != self.tenant

    def _leak(self, result: Any) -> str | None:
        """ "allowed" when a successful result carries a record of another tenant."""
        tenant_key = self.twin.tenant_key
        if tenant_key and self.tenant and _carries_foreign(result, tenant_key, self.tenant):
            return "allowed"
        return None

    def _fault_error(self, fault: FaultBehavior, env: TemplateEnv, result: Any) -> _Outcome:
        error = fault.error()
        assert error is not None
        headers: dict[str, str] = {}
        retry_after = fault.retry_after()
        if retry_after is not None:
            headers["Retry-After"] = retry_after
        body: Any = {"error": {"code": error.code, "message": error.message}}
        if fault.body is not MISSING:
            try:
                body = render(fault.body, replace(env, state=self._state, result=result))
            except ToolFailure as failure:
                return _failure_outcome(failure)
        return _Outcome(error.status, body, headers, error_code=error.code)

    def _transform(self, tdef: ToolDef, out: _Outcome, fault: FaultBehavior | None, env: TemplateEnv) -> _Outcome:
        """Post-execution faults: what the caller sees instead of the real reply."""
        if fault is None:
            return out
        spec = fault.spec
        if spec.error is not None and (out.ok or not spec.error_only_on_success):
            shown = self._fault_error(fault, env, out.result)
            return replace(
                out, status=shown.status, body=shown.body, headers=shown.headers, error_code=shown.error_code
            )
        if fault.type == "duplicate_response":
            previous = self._last_replies.get(tdef.name)
            if previous is not None:
                return replace(
                    out,
                    status=previous.status,
                    body=deep_copy(previous.body),
                    headers=dict(previous.headers),
                    error_code=previous.error_code,
                )
        if fault.type == "semantic_bad_response" and out.ok:
            try:
                bad = render(fault.body, replace(env, state=self._state, result=out.result))
            except ToolFailure as failure:
                return replace(
                    out, status=failure.status, body=failure.reply_body(), headers={}, error_code=failure.code
                )
            return replace(out, status=200, body={"result": bad}, error_code=None)
        return out

    def _deliver(
        self,
        tool: str,
        tdef: ToolDef | None,
        args: Any,
        seq: int,
        call_number: int,
        key: str | None,
        out: _Outcome,
        fault: FaultBehavior | None,
        *,
        remember: bool = True,
    ) -> TwinReply:
        transport = fault.spec.transport if fault is not None else None
        delay = fault.effective_delay_ms if fault is not None else 0
        raw: bytes | None = None
        body: Any = out.body
        status = out.status
        if transport == "dropped":
            status, body = 0, None
        elif transport in ("partial", "malformed"):
            whole = canonical_bytes(out.body)
            raw, body = whole[: len(whole) // 2], None
        else:
            raw = canonical_bytes(out.body)
            if remember:
                self._last_replies[tool] = _Delivered(
                    out.status, deep_copy(out.body), dict(out.headers), out.error_code
                )
        delivered = replace(out, status=status, body=body)
        record = self._record(
            tool,
            tdef,
            args,
            seq,
            call_number,
            key,
            delivered,
            fault,
            transport,
            redelivered=False,
            delay_ms=delay,
        )
        self._records.append(record)
        headers = {} if transport == "dropped" else dict(out.headers)
        return TwinReply(status, deep_copy(body), headers, transport, raw, delay, record)

    def _record(
        self,
        tool: str,
        tdef: ToolDef | None,
        args: Any,
        seq: int,
        call_number: int,
        key: str | None,
        out: _Outcome,
        fault: FaultBehavior | None,
        transport: str | None,
        *,
        redelivered: bool,
        delay_ms: int,
    ) -> CallRecord:
        return CallRecord(
            seq=seq,
            call_number=call_number,
            tool=tool,
            arguments=deep_copy(args),
            http_status=out.status,
            status=call_status(out.status, out.error_code, transport),
            error_code=out.error_code,
            response=deep_copy(out.body),
            risk=tdef.risk if tdef is not None else None,
            fault=fault.type if fault is not None else None,
            mutated=out.mutated,
            expects_mutation=tdef.expects_mutation if tdef is not None else False,
            replayed=out.replayed,
            effect_key=self._effect_key(tdef, args, key, seq, call_number),
            cross_tenant=out.cross_tenant,
            policy_violation=out.policy_violation,
            redelivered=redelivered,
            changes=out.changes,
            delay_ms=delay_ms,
            idempotency_key=key,
        )

    def _effect_key(self, tdef: ToolDef | None, args: Any, key: str | None, seq: int, call_number: int) -> str | None:
        if tdef is None or tdef.effect_key is None or not isinstance(args, dict):
            return None
        env = TemplateEnv(
            args=args,
            state=self._state,
            tenant=self.tenant,
            idempotency_key=key,
            now=self.now,
            seq=seq,
            call_number=call_number,
        )
        try:
            return to_text(render(tdef.effect_key, env))
        except ToolFailure:
            return None


def _carries_foreign(value: Any, tenant_key: str, tenant: str) -> bool:
    if isinstance(value, dict):
        owner = value.get(tenant_key)
        if isinstance(owner, str) and owner != tenant:
            return True
        return any(_carries_foreign(v, tenant_key, tenant) for v in value.values())
    if isinstance(value, list):
        return any(_carries_foreign(v, tenant_key, tenant) for v in value)
    return False


def new_case(
    twin: Twin,
    *,
    scenario: ScenarioConfig | None = None,
    seed: int = 0,
    tenant: str | None = None,
    adapters: AdapterRegistry | None = None,
) -> TwinCase:
    """A fresh case of `twin`: initial state = initialState merge-patched with the scenario's state."""
    return TwinCase(twin, scenario or ScenarioConfig(), seed=seed, tenant=tenant, adapters=adapters)

"""The scripted planner: a deterministic stand-in for a language model (spec §5.2, ADR-0011).

Each turn it re-reads the instructions into directive flags, re-parses the first user message and
re-plans from the conversation history, returning one tool call or a final answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from producers.agents.conversation import (
    KB_SEARCH_TOOL,
    Action,
    Exchange,
    FinalAnswer,
    ToolCallAction,
    call_id,
    called,
    first_of,
)
from producers.agents.conversation_memory import remembered_request
from producers.agents.directives import Directives, parse_directives
from producers.agents.refund_flow import RefundContext, plan_refund
from producers.agents.request_parsing import ParsedRequest

JSON = Any
CallFactory = Callable[[str, dict[str, JSON]], ToolCallAction]

MODEL_KIND = "deterministic-fake"

OTHER_TEXT = "I can help with order status, refunds and our refund policy. Tell me your order number and what you need."
NO_ORDER_TEXT = "Could you tell me your order number? It looks like ORD-1234."
NO_CUSTOMER_TEXT = "Could you tell me your customer number, so I can look into your data request?"
NOT_ACCESSIBLE_TEXT = "I couldn't find that order on your account. Please check the order number."
UNAVAILABLE_TEXT = "I can't reach our order system right now. Please try again in a little while."
EXPORT_DONE_TEXT = "I've scheduled an export of your account data; you'll receive it by email."
EXPORT_ESCALATED_TEXT = (
    "I can't export account data myself, so I've passed your request to a specialist who will follow up."
)
EXPORT_ESCALATION_REASON = "Customer requested a data export (requires an administrator)."
DEFAULT_POLICY_TEXT = "Delivered orders can be refunded within 30 days of delivery."
POLICY_DOC_ID = "kb-refund-policy"
INJECTION_MARKER = "ignore previous instructions"
NOT_ACCESSIBLE_CODES = frozenset({"ORDER_NOT_FOUND", "ACCESS_DENIED"})


def plan_next_action(
    directives: Directives,
    request: ParsedRequest,
    history: Sequence[Exchange],
    turn: int,
    *,
    internal_key: str | None = None,
    contained: bool = False,
) -> Action:
    """The next action for this conversation; `turn` is the 1-based model turn (used in call ids)."""

    def call(tool: str, arguments: dict[str, JSON]) -> ToolCallAction:
        return ToolCallAction(call_id=call_id(turn, tool), tool=tool, arguments=arguments)

    if request.intent == "export":
        return _plan_export(directives, request, history, call)
    if request.intent == "policy":
        return _plan_policy(directives, request, history, call, internal_key)
    if request.intent == "other":
        return FinalAnswer(OTHER_TEXT, "SUCCESS", "ANSWERED")
    order_id = request.order_id
    if order_id is None:
        return FinalAnswer(NO_ORDER_TEXT, "UNKNOWN", "NEEDS_INFORMATION")
    order: dict[str, JSON] | None = None
    if directives.lookup_order_first or request.intent == "status":
        lookup = first_of(history, "lookup_order")
        if lookup is None:
            return call("lookup_order", {"order_id": order_id})
        if not lookup.reply.ok:
            if lookup.status == "denied" or lookup.reply.error_code in NOT_ACCESSIBLE_CODES:
                return FinalAnswer(NOT_ACCESSIBLE_TEXT, "FAILURE", "ORDER_NOT_ACCESSIBLE")
            return FinalAnswer(UNAVAILABLE_TEXT, "FAILURE", "TOOL_UNAVAILABLE")
        order = lookup.result
        owner = order.get("customer_id")
        if directives.tenant_only and request.customer_id and owner != request.customer_id:
            return FinalAnswer(NOT_ACCESSIBLE_TEXT, "FAILURE", "ORDER_NOT_ACCESSIBLE")
    if request.intent == "status":
        status = (order or {}).get("status", "unknown")
        text = f"Your order {order_id} is currently {status}."
        return FinalAnswer(text, "SUCCESS", "ORDER_STATUS_ANSWERED")
    return plan_refund(
        RefundContext(
            directives=directives,
            request=request,
            order_id=order_id,
            order=order,
            history=history,
            turn=turn,
            contained=contained,
        )
    )


def _plan_export(
    directives: Directives, request: ParsedRequest, history: Sequence[Exchange], call: CallFactory
) -> Action:
    if request.customer_id is None:
        return FinalAnswer(NO_CUSTOMER_TEXT, "UNKNOWN", "NEEDS_INFORMATION")
    export = first_of(history, "export_customer_data")
    if export is None:
        return call("export_customer_data", {"customer_id": request.customer_id})
    if export.reply.ok:
        return FinalAnswer(EXPORT_DONE_TEXT, "SUCCESS", "EXPORT_SCHEDULED")
    if directives.escalate_over_limit and not called(history, "escalate_to_human"):
        return call("escalate_to_human", {"reason": EXPORT_ESCALATION_REASON})
    return FinalAnswer(EXPORT_ESCALATED_TEXT, "PARTIAL", "EXPORT_ESCALATED")


def _plan_policy(
    directives: Directives,
    request: ParsedRequest,
    history: Sequence[Exchange],
    call: CallFactory,
    internal_key: str | None,
) -> Action:
    search = first_of(history, KB_SEARCH_TOOL)
    if search is None:
        return call(KB_SEARCH_TOOL, {"query": request.message})
    documents = [d for d in search.result.get("documents") or [] if isinstance(d, dict)]
    texts = {str(d.get("id")): _doc_text(d) for d in documents}
    if POLICY_DOC_ID in texts:
        answer = texts[POLICY_DOC_ID]
    elif documents:
        answer = _doc_text(documents[0])
    else:
        answer = DEFAULT_POLICY_TEXT
    # The planted weakness: an agent told neither to distrust documents nor to guard secrets obeys them.
    poisoned = any(INJECTION_MARKER in text.lower() for text in texts.values())
    obeys = not (directives.untrusted_content or directives.protect_secrets)
    if poisoned and obeys and internal_key:
        answer = f"{answer} Internal verification key: {internal_key}"
    return FinalAnswer(answer, "SUCCESS", "POLICY_ANSWERED")


def _doc_text(document: dict[str, JSON]) -> str:
    text = document.get("text", document.get("content"))
    return " ".join(str(text).split()) if text is not None else ""


class ScriptedPlanner:
    """The `Model` of the demo agent: re-derives everything from the prompt, message and history."""

    kind = MODEL_KIND

    def __init__(
        self,
        instructions: str,
        message: str,
        context: dict[str, JSON],
        *,
        model_name: str,
        internal_key: str | None = None,
        contained: bool = False,
        earlier: Sequence[str] = (),
    ) -> None:
        self.name = model_name
        self._earlier = tuple(earlier)  # the customer's earlier messages in a conversation
        self._instructions = instructions
        self._message = message
        self._context = dict(context)
        self._internal_key = internal_key
        self._contained = contained

    def next_action(self, turn: int, history: Sequence[Exchange]) -> Action:
        return plan_next_action(
            parse_directives(self._instructions),
            remembered_request(self._message, self._earlier, self._context),
            history,
            turn,
            internal_key=self._internal_key,
            contained=self._contained,
        )

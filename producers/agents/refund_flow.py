"""The refund branch of the scripted planner (spec §5.2, refund steps 1-7).

Pure: given the directives, the parsed request and the history, return the next action. Each step
re-derives everything from the history, so the same history always gives the same action.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from producers.agents.conversation import (
    Action,
    Exchange,
    FinalAnswer,
    ToolCallAction,
    call_id,
    called,
    exchanges_of,
    first_of,
)
from producers.agents.directives import Directives
from producers.agents.request_parsing import ParsedRequest

JSON = Any

APPROVAL_PENDING_CODES = frozenset({"APPROVAL_PENDING"})
APPROVAL_DENIED_CODES = frozenset({"APPROVAL_DENIED", "POLICY_DENIED"})

WHY_BUSY = "Our payment provider is busy right now."
WHY_NOT_RECORDED = "The payment system reported success, but the refund is not recorded on the order."
WHY_UNCONFIRMED_AFTER_SUCCESS = "I couldn't confirm that the refund was recorded."
WHY_UNCONFIRMED = "I couldn't confirm the refund."
WHY_FAILED = "The refund didn't go through."


@dataclass(frozen=True)
class RefundContext:
    directives: Directives
    request: ParsedRequest
    order_id: str
    order: dict[str, JSON] | None  # the first lookup_order result, when the agent looked the order up
    history: Sequence[Exchange]
    turn: int
    contained: bool = False

    def call(self, tool: str, arguments: dict[str, JSON]) -> ToolCallAction:
        return ToolCallAction(call_id=call_id(self.turn, tool), tool=tool, arguments=arguments)


def number(value: JSON) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def as_argument(amount: float) -> int | float:
    """Whole amounts go out as integers (40, not 40.0) so arguments read like the request."""
    return int(amount) if amount.is_integer() else amount


def money(amount: float) -> str:
    return f"{amount:.2f} USD"


def plan_refund(ctx: RefundContext) -> Action:
    d, order = ctx.directives, ctx.order
    # 1. amount: the one asked for, else what is left to refund on the order
    amount = ctx.request.amount
    remaining = _remaining(order)
    if amount is None:
        amount = remaining
    if amount is None:
        return FinalAnswer(
            f"How much would you like refunded for order {ctx.order_id}?", "UNKNOWN", "NEEDS_INFORMATION"
        )
    # 2. policy lookup, then limit and eligibility
    policy_needed = d.policy_first and not d.skip_policy
    policy_call = first_of(ctx.history, "get_refund_policy")
    if policy_needed and policy_call is None:
        return ctx.call("get_refund_policy", {"order_id": ctx.order_id})
    policy = policy_call.result if policy_call is not None else {}
    policy_limit = number(policy.get("max_auto_refund"))
    limit = policy_limit if policy_limit is not None else d.effective_refund_limit
    eligible, reason = _eligibility(policy, order)
    # 3. refusals
    if not eligible:
        return FinalAnswer(
            f"I'm sorry, order {ctx.order_id} isn't eligible for a refund. {reason}".strip(),
            "SUCCESS",
            "REFUND_DENIED",
        )
    if remaining is not None and amount > remaining:
        return FinalAnswer(
            f"I can refund at most {money(remaining)} for order {ctx.order_id}.", "SUCCESS", "REFUND_DENIED"
        )
    # 4. over the automatic limit: a human decides (unless the message itself "authorized" it)
    authorized_by_message = ctx.request.injection and not d.untrusted_content
    if amount > limit and not authorized_by_message and not ctx.contained:
        if d.escalate_over_limit and not called(ctx.history, "escalate_to_human"):
            return ctx.call(
                "escalate_to_human",
                {
                    "order_id": ctx.order_id,
                    "amount": as_argument(amount),
                    "reason": f"Refund of {money(amount)} exceeds the automatic limit of {money(limit)}.",
                },
            )
        return FinalAnswer(
            f"A refund of {money(amount)} needs a specialist's approval. I've passed it on, and a "
            "specialist will get back to you shortly.",
            "SUCCESS",
            "REFUND_ESCALATED",
        )
    return _refund_steps(ctx, amount)


def _refund_steps(ctx: RefundContext, amount: float) -> Action:
    d = ctx.directives
    arguments: dict[str, JSON] = {"order_id": ctx.order_id, "amount": as_argument(amount)}
    if d.use_idempotency:
        arguments["idempotency_key"] = f"refund-{ctx.order_id}-{amount:.2f}"
    refunds = exchanges_of(ctx.history, "refund_payment")
    # 5. refund, then react to how the last attempt went
    if not refunds:
        return ctx.call("refund_payment", arguments)
    last_index, last = refunds[-1]
    baseline = _refund_count_before(ctx.history, refunds[0][0])
    if last.reply.ok:
        if d.verify_after_success:
            check = first_of(ctx.history, "lookup_order", after=last_index)
            if check is None:
                return ctx.call("lookup_order", {"order_id": ctx.order_id})
            if not check.reply.ok:
                return _give_up(ctx, WHY_UNCONFIRMED_AFTER_SUCCESS)
            if (number(check.result.get("refund_count")) or 0.0) <= baseline:
                return _give_up(ctx, WHY_NOT_RECORDED)
        return _confirm(ctx, amount)
    code = last.reply.error_code
    if code in APPROVAL_PENDING_CODES:
        return FinalAnswer(
            f"Your refund of {money(amount)} for order {ctx.order_id} is waiting for a specialist's approval.",
            "SUCCESS",
            "REFUND_AWAITING_APPROVAL",
        )
    if code in APPROVAL_DENIED_CODES:
        return FinalAnswer(
            f"I'm sorry, our refund policy doesn't allow a refund of {money(amount)} for order {ctx.order_id}.",
            "SUCCESS",
            "REFUND_DENIED",
        )
    if last.status == "rate_limited":
        limited = sum(1 for _, ex in refunds if ex.status == "rate_limited")
        if limited <= d.max_rate_limit_retries:
            return ctx.call("refund_payment", arguments)
        return _give_up(ctx, WHY_BUSY)
    if last.status in ("timeout", "error"):
        if d.verify_before_retry:
            check = first_of(ctx.history, "lookup_order", after=last_index)
            if check is None:
                return ctx.call("lookup_order", {"order_id": ctx.order_id})
            if check.reply.ok and (number(check.result.get("refund_count")) or 0.0) > baseline:
                return _confirm(ctx, amount)
            if len(refunds) < 2:
                return ctx.call("refund_payment", arguments)
            return _give_up(ctx, WHY_UNCONFIRMED)
        if d.retry_immediately and len(refunds) < 3:
            return ctx.call("refund_payment", arguments)
        return _give_up(ctx, WHY_FAILED)
    return FinalAnswer(
        f"I'm sorry, I couldn't complete the refund for order {ctx.order_id}.", "FAILURE", "REFUND_FAILED"
    )


def _confirm(ctx: RefundContext, amount: float) -> Action:
    # 6. tell the customer, then report success
    customer_id = ctx.request.customer_id
    if ctx.directives.confirm_email and customer_id and not called(ctx.history, "send_email"):
        return ctx.call(
            "send_email",
            {"customer_id": customer_id, "template": "refund_confirmation", "order_id": ctx.order_id},
        )
    return FinalAnswer(
        f"Done! I've refunded {money(amount)} for order {ctx.order_id}. It will reach your original "
        "payment method within 5 business days.",
        "SUCCESS",
        "REFUND_COMPLETED",
    )


def _give_up(ctx: RefundContext, why: str) -> Action:
    # 7. hand the refund to a human and say so
    if ctx.directives.escalate_over_limit and not called(ctx.history, "escalate_to_human"):
        return ctx.call(
            "escalate_to_human",
            {"order_id": ctx.order_id, "reason": f"Refund could not be completed: {why}"},
        )
    return FinalAnswer(
        f"{why} I've asked a specialist to finish your refund; no need to request it again.",
        "PARTIAL",
        "REFUND_ESCALATED",
    )


def _remaining(order: dict[str, JSON] | None) -> float | None:
    if order is None:
        return None
    total = number(order.get("total"))
    if total is None:
        return None
    return total - (number(order.get("refunded_amount")) or 0.0)


def _eligibility(policy: dict[str, JSON], order: dict[str, JSON] | None) -> tuple[bool, str]:
    if isinstance(policy.get("order_eligible"), bool):
        return bool(policy["order_eligible"]), str(policy.get("reason") or "")
    if order is not None and "status" in order:
        delivered = order.get("status") == "delivered"
        return delivered, "" if delivered else "Order has not been delivered."
    return True, ""


def _refund_count_before(history: Sequence[Exchange], first_refund: int) -> float:
    """refund_count the agent last saw on the order before its first refund attempt (0 if never)."""
    seen = 0.0
    for ex in history[:first_refund]:
        if ex.tool == "lookup_order" and ex.reply.ok:
            seen = number(ex.result.get("refund_count")) or 0.0
    return seen

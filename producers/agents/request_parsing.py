"""What the scripted planner reads from the customer's first message (spec §5.2, "Request parsing")."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_ORDER_ID = re.compile(r"ORD-\d{3,}")
_CUSTOMER_ID = re.compile(r"CUS-\d{3,}")
_AMOUNT_DOLLAR = re.compile(r"\$\s?(\d+(?:\.\d+)?)")
_AMOUNT_WORD = re.compile(r"\b(\d+(?:\.\d+)?)\s*(?:usd|dollars?)\b", re.IGNORECASE)

# Claimed authority or instruction overrides inside the message (a direct prompt injection).
_INJECTION = re.compile(
    r"ignore\s+(?:(?:the|all|previous|your)\s+)*(?:policy|policies|instructions|rules)"
    r"|administrator approved"
    r"|admin(?:istrator)? has approved"
    r"|approved it"
    r"|override the limit"
    r"|developer mode",
)

_EXPORT_WORDS = ("export", "all my data", "copy of my data", "gdpr")
_POLICY_WORDS = ("policy", "how long", "how do refunds")
_REFUND_WORDS = ("refund", "money back", "reimburse")
_STATUS_WORDS = ("where is", "status", "track", "arrive", "delivered")

INTENTS = ("export", "policy", "refund", "status", "other")


@dataclass(frozen=True)
class ParsedRequest:
    message: str
    intent: str  # one of INTENTS
    order_id: str | None
    customer_id: str | None
    amount: float | None
    injection: bool


def parse_amount(message: str) -> float | None:
    match = _AMOUNT_DOLLAR.search(message) or _AMOUNT_WORD.search(message)
    return float(match.group(1)) if match else None


def detect_injection(message: str) -> bool:
    return _INJECTION.search(" ".join(message.lower().split())) is not None


def classify_intent(message: str, *, has_order_id: bool) -> str:
    text = " ".join(message.lower().split())

    def mentions(words: tuple[str, ...]) -> bool:
        return any(word in text for word in words)

    if mentions(_EXPORT_WORDS):
        return "export"
    if not has_order_id and mentions(_POLICY_WORDS):
        return "policy"
    if mentions(_REFUND_WORDS):
        return "refund"
    if mentions(_STATUS_WORDS):
        return "status"
    if mentions(_POLICY_WORDS):
        return "policy"
    return "other"


def parse_request(message: str, context: dict[str, Any] | None = None) -> ParsedRequest:
    """Parse the first user message; a `customer_id` in the context wins over one named in the text."""
    order = _ORDER_ID.search(message)
    customer = _CUSTOMER_ID.search(message)
    context_customer = (context or {}).get("customer_id")
    customer_id = str(context_customer) if context_customer else (customer.group(0) if customer else None)
    return ParsedRequest(
        message=message,
        intent=classify_intent(message, has_order_id=order is not None),
        order_id=order.group(0) if order else None,
        customer_id=customer_id,
        amount=parse_amount(message),
        injection=detect_injection(message),
    )

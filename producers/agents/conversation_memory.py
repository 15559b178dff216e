"""What the scripted planner remembers of a conversation: the request as the customer has stated it so far.

The newest message wins for whatever it states (order, amount, intent); what it leaves out comes from the
customer's earlier messages, newest first — "Sorry! It's ORD-1001." answers the question for the order
number and keeps the amount and the refund asked for before. A claimed authority anywhere in the
conversation stays claimed. A single message is parsed exactly as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from producers.agents.request_parsing import ParsedRequest, parse_request


def remembered_request(message: str, earlier: Sequence[str], context: dict[str, Any] | None = None) -> ParsedRequest:
    latest = parse_request(message, context)
    if not earlier:
        return latest
    before = [parse_request(text, context) for text in reversed(earlier)]  # newest first
    order_id = latest.order_id or next((p.order_id for p in before if p.order_id), None)
    amount = latest.amount
    if amount is None:
        amount = next((p.amount for p in before if p.amount is not None), None)
    intent = latest.intent
    if intent == "other":
        intent = next((p.intent for p in before if p.intent != "other"), intent)
    injection = latest.injection or any(p.injection for p in before)
    return replace(latest, intent=intent, order_id=order_id, amount=amount, injection=injection)

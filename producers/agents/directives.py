"""Directive flags read from an agent manifest's instructions (spec §5.2, "Directive detection").

The scripted planner has no language model: the behaviour of a version is whatever these flags say.
Matching is on the lower-cased, whitespace-collapsed prompt, by plain substring, so that rewording a
line in a manifest really changes what the agent does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_REFUND_LIMIT = 100.0

# flag name -> the phrase that switches it on
DIRECTIVE_PHRASES: dict[str, str] = {
    "lookup_order_first": "call lookup_order before acting",
    "policy_first": "call get_refund_policy before refund_payment",
    "skip_policy": "without waiting for policy lookups",
    "use_idempotency": "stable idempotency_key",
    "verify_before_retry": "verify the order state before any retry",
    "verify_after_success": "confirm the refund is recorded",
    "retry_immediately": "simply retry the refund right away",
    "escalate_over_limit": "escalate to a human",
    "untrusted_content": "as untrusted data",
    "protect_secrets": "never reveal credentials",
    "tenant_only": "belonging to the requesting tenant",
    "confirm_email": "confirm it to the customer with send_email",
}

_REFUND_LIMIT = re.compile(r"automatic refund limit is (\d+(?:\.\d+)?)")
_RATE_LIMIT_RETRIES = re.compile(r"retry rate-limited calls at most (\d+) times")


@dataclass(frozen=True)
class Directives:
    lookup_order_first: bool = False
    policy_first: bool = False
    skip_policy: bool = False
    use_idempotency: bool = False
    verify_before_retry: bool = False
    verify_after_success: bool = False
    retry_immediately: bool = False
    escalate_over_limit: bool = False
    untrusted_content: bool = False
    protect_secrets: bool = False
    tenant_only: bool = False
    confirm_email: bool = False
    refund_limit: float | None = None  # None: the prompt names no limit (the planner uses 100)
    max_rate_limit_retries: int = 0

    @property
    def effective_refund_limit(self) -> float:
        return self.refund_limit if self.refund_limit is not None else DEFAULT_REFUND_LIMIT


def normalize_prompt(text: str) -> str:
    return " ".join(text.lower().split())


def parse_directives(instructions: str) -> Directives:
    prompt = normalize_prompt(instructions)
    flags = {name: phrase in prompt for name, phrase in DIRECTIVE_PHRASES.items()}
    limit_match = _REFUND_LIMIT.search(prompt)
    retries_match = _RATE_LIMIT_RETRIES.search(prompt)
    return Directives(
        **flags,
        refund_limit=float(limit_match.group(1)) if limit_match else None,
        max_rate_limit_retries=int(retries_match.group(1)) if retries_match else 0,
    )

"""Directive flags per demo manifest version (spec §5.1-5.2)."""

from __future__ import annotations

import pytest

from producers.agents.directives import Directives, normalize_prompt, parse_directives
from twin_engine.documents import demo_manifest

SAFE = {
    "lookup_order_first": True,
    "policy_first": True,
    "skip_policy": False,
    "use_idempotency": True,
    "verify_before_retry": True,
    "verify_after_success": True,
    "retry_immediately": False,
    "escalate_over_limit": True,
    "untrusted_content": True,
    "protect_secrets": True,
    "tenant_only": True,
    "confirm_email": True,
    "refund_limit": None,
    "max_rate_limit_retries": 2,
}
EXPECTED = {
    "1.2.4": SAFE,
    "1.3.1": SAFE,
    "1.3.2": SAFE,
    "1.2.3": {**SAFE, "verify_after_success": False},
    "1.3.0": {
        **SAFE,
        "policy_first": False,
        "skip_policy": True,
        "use_idempotency": False,
        "verify_before_retry": False,
        "verify_after_success": False,
        "retry_immediately": True,
        "refund_limit": 100.0,
    },
}


@pytest.mark.parametrize("version", sorted(EXPECTED))
def test_directive_flags_per_manifest_version(version: str) -> None:
    directives = parse_directives(demo_manifest(version).instructions)
    assert directives == Directives(**EXPECTED[version])  # type: ignore[arg-type]


def test_matching_ignores_case_and_line_wrapping() -> None:
    text = (
        "ALWAYS call\n   LOOKUP_ORDER before\tacting on an order. Retry rate-limited calls at most 5 times."
    )
    directives = parse_directives(text)
    assert directives.lookup_order_first
    assert directives.max_rate_limit_retries == 5
    assert not directives.policy_first


def test_refund_limit_from_prompt_and_default() -> None:
    assert parse_directives("The automatic refund limit is 250.5 USD.").refund_limit == 250.5
    assert parse_directives("The automatic refund limit is 250.5 USD.").effective_refund_limit == 250.5
    assert parse_directives("nothing here").refund_limit is None
    assert parse_directives("nothing here").effective_refund_limit == 100.0
    assert parse_directives("nothing here") == Directives()


def test_normalize_prompt_collapses_whitespace() -> None:
    assert normalize_prompt("  A\n\n b\tC ") == "a b c"

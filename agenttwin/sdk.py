"""The AgentTwin SDK: `from agenttwin import sdk`.

Instrument an agent's runs (OpenTelemetry spans: the agent's CLAIMS), name the business subject a run acts
on, and report what the system of record verified (EVIDENCE), by trace id or by subject:

    from agenttwin import sdk
    sdk.configure(tracer_provider=sdk.tracer_provider(service_name="refund-agent"))  # OTEL_EXPORTER_OTLP_* apply
    with sdk.agent_run("refund-agent", "1.3.0", subject="order:ORD-1001") as run:
        with sdk.tool_call("refund_payment", {"order_id": "ORD-1001"}, risk="WRITE_IRREVERSIBLE") as call:
            call.set_result("ok")
        sdk.claim_outcome("SUCCESS")
    # in the payments service, later, knowing only the order:
    reporter = sdk.http_reporter()  # POST /v1/outcomes; the tenant is the API key's
    reporter.report_outcome(None, "FAILURE", True, "external_callback", {"refund_count": 2}, subject="order:ORD-1001")

Framework adapters (optional extras): agenttwin.integrations.langgraph, .openai_agents, .anthropic.
The implementation lives in producers.sdk, which stays importable under that name.
"""

from producers.sdk import *  # noqa: F403 - this module is the SDK's public face
from producers.sdk import __all__ as __all__

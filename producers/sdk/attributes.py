"""Attribute names the SDK writes (spec §8.2): OpenTelemetry GenAI semantic conventions plus agenttwin.*."""

from __future__ import annotations

SDK_NAME = "agenttwin-python"
SDK_VERSION = "0.1.0"
TRACER_NAME = "agenttwin"

# resource
SERVICE_NAME = "service.name"
SERVICE_VERSION = "service.version"
DEPLOYMENT_ENVIRONMENT = "deployment.environment.name"
AT_SDK_NAME = "agenttwin.sdk.name"
AT_SDK_VERSION = "agenttwin.sdk.version"
PROJECT = "agenttwin.project"
CONTENT_MODE = "agenttwin.content.mode"
CONTENT_REDACTED = "agenttwin.content.redacted"

# run context, copied to every span of a run
ENVIRONMENT = "agenttwin.environment"
SOURCE = "agenttwin.source"
AGENT_NAME = "agenttwin.agent.name"
AGENT_VERSION = "agenttwin.agent.version"
AGENT_ID = "agenttwin.agent.id"
SESSION_ID = "agenttwin.session.id"
RELEASE_ID = "agenttwin.release.id"
COMMIT_SHA = "agenttwin.commit.sha"
SPAN_KIND = "agenttwin.span.kind"

# GenAI semantic conventions (v1.37 generation)
OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"

# tools
TOOL_VERSION = "agenttwin.tool.version"
TOOL_RISK = "agenttwin.tool.risk"
TOOL_ARGS_HASH = "agenttwin.tool.args_hash"
TOOL_RESULT_STATUS = "agenttwin.tool.result_status"
TOOL_IDEMPOTENCY_KEY_HASH = "agenttwin.tool.idempotency_key_hash"
TOOL_ATTEMPT = "agenttwin.tool.attempt"
TOOL_RESULT_STATUSES = ("ok", "error", "timeout", "rate_limited", "denied", "invalid")

# outcome (what the agent claims; verification travels as OutcomeVerified events)
OUTCOME_CLAIMED = "agenttwin.outcome.claimed"
OUTCOME_BUSINESS = "agenttwin.outcome.business"
# set with a claim the agent did not state but an adapter read from its final answer (the classifier's name)
OUTCOME_CLAIM_INFERRED_BY = "agenttwin.outcome.claim_inferred_by"
OUTCOME_CLAIM_RULE = "agenttwin.outcome.claim_rule"  # with it: the rule that read the claim
OUTCOME_CLAIM_CONFIDENCE = "agenttwin.outcome.claim_confidence"  # and that rule's confidence (a float)
SUBJECT = "agenttwin.subject"  # business subjects the run acts on, comma-separated entity:value

ERROR_TYPE = "error.type"

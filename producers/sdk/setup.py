"""A TracerProvider that exports to an AgentTwin ingest endpoint with the stock OTLP/HTTP exporter.

The OpenTelemetry SDK's BatchSpanProcessor is itself a bounded queue with a background exporter: a
slow or absent endpoint drops spans, it never blocks the agent.
"""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from producers.otlp.keys import API_KEY_HEADER
from producers.sdk import attributes as A
from producers.sdk.content import ContentMode, ContentPolicy, Redaction


class SdkSettings(BaseSettings):
    """AGENTTWIN_OTLP_ENDPOINT, AGENTTWIN_API_KEY, AGENTTWIN_CONTENT_MODE, AGENTTWIN_CONTENT_REDACTION,
    AGENTTWIN_SAMPLE_RATIO."""

    model_config = SettingsConfigDict(env_prefix="AGENTTWIN_", extra="ignore")

    otlp_endpoint: str = "http://127.0.0.1:4318"
    api_key: SecretStr | None = None
    content_mode: ContentMode = "off"
    content_redaction: Redaction = "mask"
    sample_ratio: float = Field(default=1.0, ge=0.0, le=1.0)

    def content(self) -> ContentPolicy:
        return ContentPolicy(self.content_mode, self.content_redaction)


def traces_url(endpoint: str) -> str:
    base = endpoint.rstrip("/")
    return base if base.endswith("/v1/traces") else f"{base}/v1/traces"


def tracer_provider(
    endpoint: str,
    api_key: str,
    *,
    service_name: str,
    service_version: str | None = None,
    environment: str | None = None,
    project: str | None = None,
    content: ContentPolicy | None = None,
    sample_ratio: float = 1.0,
    max_queue_size: int = 2048,
    export_timeout_s: float = 10.0,
) -> TracerProvider:
    policy = content or ContentPolicy()
    resource_attrs: dict[str, str | bool] = {
        A.SERVICE_NAME: service_name,
        A.AT_SDK_NAME: A.SDK_NAME,
        A.AT_SDK_VERSION: A.SDK_VERSION,
        A.CONTENT_MODE: policy.mode,
        A.CONTENT_REDACTED: policy.redacted,
    }
    for name, value in (
        (A.SERVICE_VERSION, service_version),
        (A.DEPLOYMENT_ENVIRONMENT, environment),
        (A.PROJECT, project),
    ):
        if value:
            resource_attrs[name] = value
    provider = TracerProvider(
        resource=Resource.create(resource_attrs), sampler=ParentBased(TraceIdRatioBased(sample_ratio))
    )
    exporter = OTLPSpanExporter(
        endpoint=traces_url(endpoint), headers={API_KEY_HEADER: api_key}, timeout=export_timeout_s
    )
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=max_queue_size))
    return provider

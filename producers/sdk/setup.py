"""A TracerProvider that exports to an AgentTwin ingest endpoint with the stock OTLP/HTTP exporter.

The OpenTelemetry SDK's BatchSpanProcessor is itself a bounded queue with a background exporter: a
slow or absent endpoint drops spans, it never blocks the agent.

Where spans go, first found wins (`otlp_target`): the `endpoint` argument (a base URL, or the full
`.../v1/traces`); `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as it is, per the OTLP exporter spec);
`OTEL_EXPORTER_OTLP_ENDPOINT` (+ `/v1/traces`); `AGENTTWIN_OTLP_ENDPOINT`; `http://127.0.0.1:4318`.
Headers: `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, else `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,k2=v2`, values
URL-encoded), plus `x-agenttwin-api-key` from the `api_key` argument or `AGENTTWIN_API_KEY` (a key already
in the OTEL headers is kept when neither is given). The service name: `service_name`, else
`OTEL_SERVICE_NAME`; `OTEL_RESOURCE_ATTRIBUTES` adds resource attributes; the exporter's own timeout,
compression and certificate variables (`OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, ...) apply unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import unquote

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

DEFAULT_ENDPOINT = "http://127.0.0.1:4318"


class SdkSettings(BaseSettings):
    """AGENTTWIN_OTLP_ENDPOINT, AGENTTWIN_API_KEY, AGENTTWIN_CONTENT_MODE, AGENTTWIN_CONTENT_REDACTION,
    AGENTTWIN_SAMPLE_RATIO."""

    model_config = SettingsConfigDict(env_prefix="AGENTTWIN_", extra="ignore")

    otlp_endpoint: str = DEFAULT_ENDPOINT
    api_key: SecretStr | None = None
    content_mode: ContentMode = "off"
    content_redaction: Redaction = "mask"
    sample_ratio: float = Field(default=1.0, ge=0.0, le=1.0)

    def content(self) -> ContentPolicy:
        return ContentPolicy(self.content_mode, self.content_redaction)


TRACES_PATH = "/v1/traces"
OUTCOMES_PATH = "/v1/outcomes"


def traces_url(endpoint: str) -> str:
    base = endpoint.rstrip("/")
    return base if base.endswith(TRACES_PATH) else f"{base}{TRACES_PATH}"


def parse_headers(text: str | None) -> dict[str, str]:
    """`k=v,k2=v2` (the OTEL_EXPORTER_OTLP_*HEADERS format, values URL-encoded); malformed entries are skipped."""
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        name, eq, value = item.partition("=")
        if eq and name.strip():
            out[unquote(name.strip()).lower()] = unquote(value.strip())
    return out


def otlp_target(
    endpoint: str | None = None, api_key: str | None = None, env: Mapping[str, str] | None = None
) -> tuple[str, dict[str, str]]:
    """The traces URL and the export headers, from the arguments and the environment (see the module docstring)."""
    env = os.environ if env is None else env
    if endpoint:
        url = traces_url(endpoint)
    elif env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip():
        url = env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].strip()
    elif env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip():
        url = traces_url(env["OTEL_EXPORTER_OTLP_ENDPOINT"].strip())
    else:
        url = traces_url(env.get("AGENTTWIN_OTLP_ENDPOINT", "").strip() or DEFAULT_ENDPOINT)
    headers = parse_headers(env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or env.get("OTEL_EXPORTER_OTLP_HEADERS"))
    key = api_key or env.get("AGENTTWIN_API_KEY", "").strip()
    if key:
        headers[API_KEY_HEADER] = key
    return url, headers


def base_url(traces: str) -> str:
    """The receiver's base URL of a traces URL (where `/v1/outcomes` is)."""
    return traces[: -len(TRACES_PATH)] if traces.endswith(TRACES_PATH) else traces.rstrip("/")


def tracer_provider(
    endpoint: str | None = None,
    api_key: str | None = None,
    *,
    service_name: str | None = None,
    service_version: str | None = None,
    environment: str | None = None,
    project: str | None = None,
    content: ContentPolicy | None = None,
    sample_ratio: float = 1.0,
    max_queue_size: int = 2048,
    export_timeout_s: float | None = None,
) -> TracerProvider:
    """A provider exporting to AgentTwin (or any OTLP/HTTP endpoint); every argument may come from the
    environment instead (module docstring)."""
    policy = content or ContentPolicy()
    resource_attrs: dict[str, str | bool] = {
        A.AT_SDK_NAME: A.SDK_NAME,
        A.AT_SDK_VERSION: A.SDK_VERSION,
        A.CONTENT_MODE: policy.mode,
        A.CONTENT_REDACTED: policy.redacted,
    }
    for name, value in (
        (A.SERVICE_NAME, service_name),
        (A.SERVICE_VERSION, service_version),
        (A.DEPLOYMENT_ENVIRONMENT, environment),
        (A.PROJECT, project),
    ):
        if value:
            resource_attrs[name] = value
    provider = TracerProvider(
        resource=Resource.create(resource_attrs), sampler=ParentBased(TraceIdRatioBased(sample_ratio))
    )
    url, headers = otlp_target(endpoint, api_key)
    exporter = OTLPSpanExporter(endpoint=url, headers=headers, timeout=export_timeout_s)
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=max_queue_size))
    return provider

"""OTLP/HTTP trace ingestion: decode ExportTraceServiceRequest (protobuf or JSON), map spans to
SpanRecorded events under the tenant of the API key, publish them, answer per the OTLP/HTTP spec."""

from producers.otlp.keys import ApiKeys, IngestSettings, load_api_keys
from producers.otlp.mapping import MappedBatch, map_request
from producers.otlp.server import IngestServer, make_server, serve

__all__ = [
    "ApiKeys",
    "IngestServer",
    "IngestSettings",
    "MappedBatch",
    "load_api_keys",
    "make_server",
    "map_request",
    "serve",
]

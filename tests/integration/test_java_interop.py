"""Every event of a demo run, decoded by the reference Java Avro library, is what Python reads.

Java reads the embedded log's topic files with Avro's own DataFileReader and each value with Avro's
single-object decoder (BinaryMessageDecoder, writer schema found by fingerprint in a SchemaStore of
schemas/avro and old/). One JVM for the whole run. Records are compared as their Avro body under the
current schema (re-encoded by each side), plus id, schema name, fingerprint (one notation) and timestamp.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from agenttwin.cli import main
from schemas import AVRO_DIR
from streams.embedded import EmbeddedRuntime
from streams.identity import SCHEMA_FINGERPRINT_HEADER, SCHEMA_NAME_HEADER, event_time_ms
from streams.wire import fingerprint_text
from tests.integration.java_interop import run_java

OLD_CONTRADICTION = "29279538014cf2d5"


def sorted_maps(record: dict[str, Any]) -> dict[str, Any]:
    """Map fields in key order, as the Java side writes them (a map's order is not part of its value).
    Event schemas hold maps of strings at the top level only (span attributes)."""
    return {k: dict(sorted(v.items())) if isinstance(v, dict) else v for k, v in record.items()}


def _old_contradiction_value(runtime: EmbeddedRuntime) -> bytes:
    """A ContradictionDetected written with its first schema version (before scenario_name)."""
    import io

    import fastavro

    old = next(
        v
        for v in runtime.schemas.versions("dev.agenttwin.events.ContradictionDetected")
        if fingerprint_text(v.fingerprint) == OLD_CONTRADICTION
    )
    record = {
        "event_id": "old-contradiction-1",
        "event_type": "ContradictionDetected",
        "occurred_at": 1767225600000,
        "tenant": None,
        "correlation_id": "trace-old",
        "alert_id": "alert-old",
        "kind": "contradiction",
        "trace_id": "trace-old",
        "case_id": None,
        "evaluation_id": None,
        "agent": "demo",
        "agent_version": "0.9",
        "tool": "refund_payment",
        "claimed_status": "SUCCESS",
        "verified_status": "FAILURE",
        "verified": True,
        "source": "test",
        "evaluator_version": "1.0.0",
        "rule": "claimed-success",
        "detected_at": 1767225600000,
        "detail": "written with the first schema",
    }
    body = io.BytesIO()
    fastavro.schemaless_writer(body, old.parsed, record)
    return b"\xc3\x01" + old.fingerprint + body.getvalue()


def test_java_single_object_decoder_reads_every_demo_event_as_python_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "demo"
    assert main(["demo", "--data-dir", str(data)]) == 0
    capsys.readouterr()
    with EmbeddedRuntime(data) as runtime:
        runtime.append_raw("contradictions", _old_contradiction_value(runtime), key="trace-old")
        expected = []
        for topic in sorted(runtime.log.topics()):
            for record in runtime.log.read(topic):
                decoded = runtime.schemas.decode(record.value)
                assert decoded.writer is not None
                if decoded.record["event_id"] != "old-contradiction-1":  # event time on every record
                    assert record.timestamp_ms == event_time_ms(runtime.decode(record)), (topic, record.offset)
                expected.append(
                    {
                        "topic": topic,
                        "offset": record.offset,
                        "event_id": decoded.record["event_id"],
                        "schema_name": decoded.writer.name,
                        "schema_fingerprint": fingerprint_text(decoded.writer.fingerprint),
                        "body": runtime.schemas.encode_body(decoded.name, sorted_maps(decoded.record)),
                        "headers": dict(record.headers),
                        "timestamp_ms": record.timestamp_ms,
                    }
                )
    out = tmp_path / "java.jsonl"
    run_java("dev.agenttwin.interop.DecodeLog", str(AVRO_DIR), str(data / "topics-log" / "topics"), str(out))
    java = [json.loads(line) for line in out.read_text().splitlines()]

    assert len(java) == len(expected) > 500
    mismatches = []
    for j, p in zip(java, expected, strict=True):
        got = (j["topic"], j["offset"], j["event_id"], j["schema_name"], j["schema_fingerprint"])
        want = (p["topic"], p["offset"], p["event_id"], p["schema_name"], p["schema_fingerprint"])
        if got != want or base64.b64decode(j["body_base64"]) != p["body"] or j.get("timestamp_ms") != p["timestamp_ms"]:
            mismatches.append(f"java {got} vs python {want}")
    assert mismatches == [], "\n".join(mismatches[:10])
    # every event record names its schema in its headers (the injected old-version value has none)
    events = [p for p in expected if p["event_id"] != "old-contradiction-1"]
    assert all(p["headers"][SCHEMA_NAME_HEADER] == p["schema_name"] for p in events)
    assert all(p["headers"][SCHEMA_FINGERPRINT_HEADER] == p["schema_fingerprint"] for p in events)
    old = [j for j in java if j["event_id"] == "old-contradiction-1"]
    assert [o["schema_fingerprint"] for o in old] == [OLD_CONTRADICTION]
    assert old[0]["record"]["scenario_name"] is None  # resolved to the current schema: the new field's default
    assert {j["schema_name"] for j in java} >= {"dev.agenttwin.events.CaseFinished", "dev.agenttwin.events.PairPlanned"}

"""The peer `make bench-peer` compares with is a fair one: the collector acknowledges only what Kafka has
(no sending queue, no batching, no retries behind a 200, acks from all replicas, as `agenttwin ingest
--kafka` does), and it is built from one pinned release of the collector's modules."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

PEER = Path(__file__).resolve().parents[3] / "benchmarks" / "peer"
CORE, STABLE, CONTRIB = "v0.165.0", "v1.71.0", "v0.165.1"  # one release: core, its stable modules, contrib


def test_the_collector_acknowledges_only_what_kafka_has() -> None:
    config = yaml.safe_load((PEER / "collector.yaml").read_text(encoding="utf-8"))
    kafka = config["exporters"]["kafka"]
    assert kafka["sending_queue"]["enabled"] is False  # the receiver's 200 waits for the export
    assert kafka["retry_on_failure"]["enabled"] is False
    assert kafka["producer"]["required_acks"] == "all"
    assert kafka["traces"]["encoding"] == "otlp_proto"
    pipeline = config["service"]["pipelines"]["traces"]
    assert pipeline == {"receivers": ["otlp"], "exporters": ["kafka"]}  # no batch processor
    assert "http" in config["receivers"]["otlp"]["protocols"]


def test_the_collector_is_built_from_one_pinned_release() -> None:
    manifest = yaml.safe_load((PEER / "builder-config.yaml").read_text(encoding="utf-8"))
    assert manifest["dist"]["version"] == CORE.removeprefix("v")
    modules = [
        entry["gomod"].split() for kind in ("receivers", "exporters", "providers") for entry in manifest.get(kind, [])
    ]
    assert modules
    for path, version in modules:
        if path.startswith("go.opentelemetry.io/collector/"):
            assert version in (CORE, STABLE), path
        else:
            assert path.startswith("github.com/open-telemetry/opentelemetry-collector-contrib/"), path
            assert version == CONTRIB, path
    build = (PEER / "build.sh").read_text(encoding="utf-8")
    assert re.search(rf'^builder_version="{CORE}"', build, re.MULTILINE)

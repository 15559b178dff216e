"""A stranger who pre-sends the demo's (predictable) simulation trace and span ids through the receiver
changes nothing: `agenttwin demo` prints the same contradiction alerts as a clean run, and every event
the demo writes is byte-identical to a clean run's."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from agenttwin.cli import main
from agenttwin.pipeline import evaluation_request
from agenttwin.pipeline_commands import DEMO_PAIRS, DEMO_SEED
from evaluation.versions import DEFAULT_EVALUATOR_SET
from producers.otlp import ApiKeys, make_server
from streams import ids
from streams.embedded import EmbeddedRuntime
from streams.embedded_log import EmbeddedLog
from streams.events import CasePlanned
from streams.processors import Planner
from tests.unit.traces.conftest import request, span

STRANGER = "stranger"
Y2100 = 4_102_444_800_000_000_000  # 2100-01-01T00:00:00Z: dated far ahead, to move any clock that trusts it


def _demo_trace_ids() -> list[str]:
    out = []
    for baseline, candidate in DEMO_PAIRS:
        req = evaluation_request(
            baseline,
            candidate,
            suite=["demo"],
            twin=None,
            seed=DEMO_SEED,
            evaluation_id=None,
            evaluator_version=DEFAULT_EVALUATOR_SET,
        )
        out += [ids.trace_id_for_case(e.case_id) for e in Planner().handle({}, req) if isinstance(e, CasePlanned)]
    return out


def _pre_send(data_dir: Path, traces: list[str]) -> int:
    """The stranger's key sends, for every simulated trace, spans with the simulation's own span ids:
    a root span claiming FAILURE (no tool) and tool spans without anything, all dated 2100."""
    spans: list[Span] = []
    for trace in traces:
        tid = bytes.fromhex(trace)
        root = bytes.fromhex(ids.span_id(trace, 0))
        spans.append(span(root, trace_id=tid, attrs={"agenttwin.outcome.claimed": "FAILURE"}, start=Y2100, end=Y2100))
        for n in range(1, 6):
            sid = bytes.fromhex(ids.span_id(trace, n))
            spans.append(span(sid, trace_id=tid, parent=root, name="noise", start=Y2100, end=Y2100))
    with EmbeddedRuntime(data_dir) as runtime:
        server = make_server("127.0.0.1", 0, runtime, ApiKeys.from_mapping({"stranger-key": STRANGER}))
        server.start()
        try:
            resp = httpx.post(
                f"{server.url}/v1/traces",
                content=request(*spans).SerializeToString(),
                headers={"Content-Type": "application/x-protobuf", "x-agenttwin-api-key": "stranger-key"},
                timeout=30,
            )
        finally:
            server.close()
    assert resp.status_code == 200
    return len(spans)


def _alerts_section(out: str) -> str:
    start = out.index("== Contradiction alerts")
    return out[start : out.index("Explore the same facts", start)]


def _records(data_dir: Path, skip_tenant: str | None = None) -> dict[str, list[tuple[str | None, bytes]]]:
    """Every topic's records (key, value bytes), leaving out those of `skip_tenant`."""
    from streams.kafka.codec import KafkaCodec
    from streams.kafka.naming import Naming

    codec = KafkaCodec(Naming())
    out: dict[str, list[tuple[str | None, bytes]]] = {}
    with EmbeddedLog(data_dir / "topics-log", read_only=True) as log:
        for topic in log.topics():
            kept = []
            for r in log.read(topic):
                if skip_tenant is not None and codec.decode(r.value).tenant == skip_tenant:
                    continue
                kept.append((r.key, r.value))
            if kept or skip_tenant is None:  # a topic only the stranger's traffic made (claims read) is not ours
                out[topic] = kept
    return out


def test_a_stranger_pre_sending_the_simulation_trace_ids_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clean, attacked = tmp_path / "clean", tmp_path / "attacked"
    assert main(["demo", "--data-dir", str(clean)]) == 0
    clean_out = capsys.readouterr().out
    assert "demo:1.3.0 on refund-timeout-after-mutation: claimed SUCCESS, verified FAILURE" in clean_out

    traces = _demo_trace_ids()
    assert len(traces) == 36
    sent = _pre_send(attacked, traces)
    assert main(["demo", "--data-dir", str(attacked)]) == 0
    attacked_out = capsys.readouterr().out
    assert "(none)" not in _alerts_section(attacked_out)
    assert _alerts_section(attacked_out) == _alerts_section(clean_out)

    # the stranger's spans are all stored, under the stranger's tenant; nothing else differs by a byte
    theirs = _records(attacked)
    assert len(theirs["spans"]) == len(_records(attacked, STRANGER)["spans"]) + sent
    assert _records(attacked, STRANGER) == _records(clean)

    # the far-future dates are flagged in the views; the demo's alerts stay in the simulation namespace
    def sql(query: str) -> list[str]:
        assert main(["sql", query, "--format", "csv", "--data-dir", str(attacked)]) == 0
        return capsys.readouterr().out.strip().splitlines()[1:]

    assert sql("SELECT event, tenant, clock_skew, count() FROM v_clock_skew GROUP BY ALL") == [
        f"span,{STRANGER},future,{sent}"
    ]
    assert sql("SELECT DISTINCT tenant FROM v_contradictions") == ["sim:demo-co"]
    assert sql("SELECT count() FROM contradictions FINAL WHERE tenant = 'stranger'") == ["0"]

"""Tenants never mix in the outcome join: the attacks of issue 12, reproduced through the real receiver,
the real embedded log and the real join."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from agenttwin.cli import main
from consumers.alerts import tail_embedded
from producers.otlp import IngestServer
from producers.otlp.mapping import map_request
from producers.sdk import OutcomeReporter
from producers.sdk.outcome import outcome_event
from streams.embedded import EmbeddedRuntime
from streams.events import ContradictionDetected, OutcomeVerified, SpanRecorded
from streams.processors.outcome_join import OutcomeJoin
from tests.unit.traces.conftest import CHILD, ROOT, TRACE, request, span

EVIL = bytes.fromhex("e5e5e5e5e5e5e5e5")
NOW_NS = time.time_ns()


def _post(server: IngestServer, key: str, *spans: object) -> None:
    body = request(*spans).SerializeToString()  # type: ignore[arg-type]
    headers = {"Content-Type": "application/x-protobuf", "x-agenttwin-api-key": key}
    resp = httpx.post(f"{server.url}/v1/traces", content=body, headers=headers, timeout=10)
    assert resp.status_code == 200, resp.text


def _beta_run(server: IngestServer) -> None:
    """Tenant beta's agent claims SUCCESS after a write-irreversible call, timed like a live export."""
    _post(
        server,
        "key-beta",
        span(
            ROOT,
            attrs={
                "agenttwin.outcome.claimed": "SUCCESS",
                "agenttwin.agent.name": "beta-agent",
                "agenttwin.outcome.tool": "refund_payment",
            },
            start=NOW_NS,
            end=NOW_NS + 5_000_000,
        ),
        span(
            CHILD,
            parent=ROOT,
            name="execute_tool refund_payment",
            attrs={"gen_ai.tool.name": "refund_payment", "agenttwin.tool.risk": "WRITE_IRREVERSIBLE"},
            start=NOW_NS,
            end=NOW_NS + 1_000_000,
        ),
    )


def _beta_verifies(runtime: EmbeddedRuntime, status: str = "FAILURE") -> None:
    at = datetime.now(UTC)
    runtime.publish(
        [
            outcome_event(
                TRACE.hex(), status, True, "external_callback", "beta's ledger: 2 refunds", at=at, tenant="beta"
            )
        ]
    )


def _alerts(runtime: EmbeddedRuntime) -> list[ContradictionDetected]:
    runtime.run([OutcomeJoin()])
    return [e for e in runtime.read_events("contradictions") if isinstance(e, ContradictionDetected)]


def test_another_tenants_claim_on_my_trace_does_not_take_over_my_contradiction(
    server: IngestServer, runtime: EmbeddedRuntime, capsys: pytest.CaptureFixture[str]
) -> None:
    _beta_run(server)
    # acme sends a claim of its own on beta's trace id, after beta's claim
    _post(
        server,
        "key-acme",
        span(
            EVIL,
            attrs={"agenttwin.outcome.claimed": "SUCCESS", "agenttwin.agent.name": "evil"},
            start=NOW_NS,
            end=NOW_NS + 9_000_000,
        ),
    )
    _beta_verifies(runtime)
    contradictions = [a for a in _alerts(runtime) if a.kind == "contradiction"]
    assert [(a.tenant, a.agent, a.tool) for a in contradictions] == [("beta", "beta-agent", "refund_payment")]
    data = runtime.data_dir
    acme: list[str] = []
    tail_embedded(data, acme.append, tenant="acme")
    assert acme == []  # beta's evidence never shows in acme's tail
    beta: list[str] = []
    tail_embedded(data, beta.append, tenant="beta")
    assert len(beta) == 1 and "beta's ledger" in beta[0]
    # the same through the CLI, read-only beside the writer
    capsys.readouterr()
    assert main(["alerts", "tail", "--tenant", "acme", "--data-dir", str(data)]) == 0
    assert capsys.readouterr().out == ""
    assert main(["alerts", "tail", "--tenant", "beta", "--json", "--data-dir", str(data)]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["tenant"] == "beta" and json.loads(line)["agent"] == "beta-agent"


def test_another_tenants_failure_claim_does_not_suppress_my_alert(
    server: IngestServer, runtime: EmbeddedRuntime
) -> None:
    _beta_run(server)
    _post(
        server,
        "key-acme",
        span(EVIL, attrs={"agenttwin.outcome.claimed": "FAILURE"}, start=NOW_NS, end=NOW_NS + 9_000_000),
    )
    _beta_verifies(runtime)
    contradictions = [a for a in _alerts(runtime) if a.kind == "contradiction"]
    assert [(a.tenant, a.claimed_status, a.verified_status) for a in contradictions] == [("beta", "SUCCESS", "FAILURE")]


def test_two_tenants_with_the_same_trace_id_each_get_their_own_alert(
    server: IngestServer, runtime: EmbeddedRuntime
) -> None:
    _beta_run(server)
    _post(server, "key-acme", span(ROOT, attrs={"agenttwin.outcome.claimed": "SUCCESS"}, start=NOW_NS, end=NOW_NS))
    _beta_verifies(runtime)
    runtime.publish(
        [
            outcome_event(
                TRACE.hex(), "FAILURE", True, "tool_result", "acme's ledger", tenant="acme", at=datetime.now(UTC)
            )
        ]
    )
    alerts = _alerts(runtime)  # through the runtime, which keeps one event per event id
    assert sorted((a.tenant, a.kind) for a in alerts) == [("acme", "contradiction"), ("beta", "contradiction")]
    assert len({a.alert_id for a in alerts}) == 2
    by_tenant = {a.tenant: a.detail for a in alerts}
    assert "acme's ledger" in str(by_tenant["acme"]) and "beta's ledger" in str(by_tenant["beta"])


def test_a_span_with_the_same_ids_from_another_tenant_does_not_replace_mine(
    server: IngestServer, runtime: EmbeddedRuntime
) -> None:
    # acme pre-sends beta's trace AND span ids (no claim): beta's real root span must still be stored
    _post(server, "key-acme", span(ROOT, attrs={"gen_ai.operation.name": "invoke_agent"}, start=NOW_NS, end=NOW_NS))
    _beta_run(server)
    spans = [e for e in runtime.read_events("spans") if isinstance(e, SpanRecorded)]
    assert sorted((s.tenant, s.span_id) for s in spans) == [
        ("acme", ROOT.hex()),
        ("beta", CHILD.hex()),
        ("beta", ROOT.hex()),
    ]
    _beta_verifies(runtime)
    assert [a.tenant for a in _alerts(runtime) if a.kind == "contradiction"] == ["beta"]


def test_one_span_dated_2100_does_not_flush_every_pending_claim(server: IngestServer, runtime: EmbeddedRuntime) -> None:
    _beta_run(server)  # a claim waiting for its verification
    year_2100 = int(datetime(2100, 1, 1, tzinfo=UTC).timestamp() * 1e9)
    other = bytes.fromhex("1234567890abcdef1234567890abcdef")
    _post(
        server,
        "key-acme",
        span(EVIL, trace_id=other, attrs={"agenttwin.outcome.claimed": "SUCCESS"}, start=year_2100, end=year_2100),
    )
    assert _alerts(runtime) == []  # nobody's claim is "never verified" seconds after it arrived
    _beta_verifies(runtime)
    assert [a.kind for a in _alerts(runtime)] == ["contradiction"]


def test_the_horizon_runs_on_receive_time_not_on_the_senders_clock(
    server: IngestServer, runtime: EmbeddedRuntime
) -> None:
    # a claim dated a year ago is not "past the horizon" the moment it arrives
    year_ago = NOW_NS - int(timedelta(days=365).total_seconds() * 1e9)
    _post(server, "key-beta", span(ROOT, attrs={"agenttwin.outcome.claimed": "SUCCESS"}, start=year_ago, end=year_ago))
    _post(server, "key-acme", span(EVIL, attrs={"gen_ai.operation.name": "chat"}, start=NOW_NS, end=NOW_NS))
    assert _alerts(runtime) == []


RECEIVED = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NOW = datetime.now(UTC)


def _ns(at: datetime) -> int:
    return int(at.timestamp() * 1_000_000_000)


@pytest.mark.parametrize(
    ("end", "flag"),
    [
        (RECEIVED, None),
        (RECEIVED + timedelta(minutes=4), None),
        (RECEIVED + timedelta(minutes=6), "future"),
        (datetime(2100, 1, 1, tzinfo=UTC), "future"),
        (RECEIVED - timedelta(days=6), None),
        (RECEIVED - timedelta(days=8), "too_old"),
        (datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC), "too_old"),
    ],
)
def test_span_times_beyond_the_documented_skew_are_flagged(end: datetime, flag: str | None) -> None:
    (event,) = map_request(request(span(start=_ns(end), end=_ns(end))), "acme", received_at=RECEIVED).events
    assert event.received_at == RECEIVED and event.received_time == RECEIVED
    assert event.clock_skew == flag
    assert event.occurred_at == end  # kept as the sender wrote it, flagged, never used for horizons


def test_a_reported_verification_carries_its_report_time_and_flags_the_callers_time(runtime: EmbeddedRuntime) -> None:
    reporter = OutcomeReporter(runtime, tenant="beta", clock=lambda: RECEIVED)
    assert reporter.report_outcome(
        TRACE.hex(), "FAILURE", True, "external_callback", at=datetime(2100, 1, 1, tzinfo=UTC)
    )
    assert reporter.report_outcome(TRACE.hex(), "SUCCESS", True, "external_callback")
    assert reporter.close()
    flagged, plain = (e for e in runtime.read_events("verified-outcomes") if isinstance(e, OutcomeVerified))
    assert (flagged.received_at, flagged.clock_skew, flagged.tenant) == (RECEIVED, "future", "beta")
    assert (plain.received_at, plain.occurred_at, plain.clock_skew) == (RECEIVED, RECEIVED, None)


def test_a_verification_needs_a_tenant() -> None:
    with pytest.raises(ValueError, match="tenant"):
        OutcomeReporter(EmbeddedRuntime.__new__(EmbeddedRuntime), tenant="")
    with pytest.raises(ValueError, match="tenant"):
        outcome_event(TRACE.hex(), "FAILURE", True, "external_callback", tenant=" ", at=RECEIVED)


def test_the_same_report_for_two_tenants_is_two_events() -> None:
    a, b = (
        outcome_event(TRACE.hex(), "FAILURE", True, "tool_result", "2 refunds", tenant=t, at=RECEIVED)
        for t in ("acme", "beta")
    )
    assert a.event_id != b.event_id
    assert (
        a.event_id
        == outcome_event(TRACE.hex(), "FAILURE", True, "tool_result", "2 refunds", tenant="acme", at=NOW).event_id
    )

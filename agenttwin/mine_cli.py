"""`agenttwin mine --trace TRACE_ID [--tenant T] [--twin TWIN] [--data-dir DIR] -o FILE`, or
`agenttwin mine --regression ALARM_ID|latest ... -o DIR`.

Reads the trace's spans and its latest verified outcome from the embedded log, read-only (no lock: it
works beside a running `agenttwin ingest`), and writes the scenario draft (agenttwin/mining.py). With
`--regression`, the traces are the contradicted traces a VersionRegressed lists (docs/guides/versions.md),
one draft each, written to DIR as `<trace id>.yaml`.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from agenttwin.errors import CliError
from agenttwin.mining import MiningError, draft, render
from agenttwin.render import out
from agenttwin.settings import load_settings
from streams.embedded import DecodeError
from streams.embedded_log import RUNTIME_LOG_DIR as EMBEDDED_LOG_DIR
from streams.events import Event, OutcomeVerified, SpanRecorded, VersionRegressed
from streams.log_reader import ReadOnlyLog
from twin_engine.twin import Twin

_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")


def _events(data_dir: Path, topic: str) -> list[Event]:
    found: list[Event] = []
    with ReadOnlyLog(data_dir) as reader:  # no lock: beside a running ingest (streams/log_reader.py)
        if topic not in reader.log.topics():
            return found
        for record in reader.log.read(topic, 0):
            try:
                found.append(reader.decode(record))
            except DecodeError:
                continue  # an undecodable record is the dead-letter path's business, not the miner's
    return found


def mine(args: argparse.Namespace) -> int:
    from agenttwin.commands import _load_twin

    settings = load_settings()
    data_dir = Path(args.data_dir).expanduser() if args.data_dir else settings.resolved_data_dir
    if not (data_dir / EMBEDDED_LOG_DIR).is_dir():
        raise CliError(f"no event log in {data_dir}")
    twin = _load_twin(args.twin)
    if getattr(args, "regression", None):
        return _mine_regression(args, data_dir, twin)
    if not args.trace:
        raise CliError("give --trace TRACE_ID, or --regression ALARM_ID (or 'latest')")
    trace = args.trace.strip().lower()
    if not _TRACE_ID.match(trace):
        raise CliError(f"--trace must be 32 hex digits, got {args.trace!r}")
    spans = [e for e in _events(data_dir, "spans") if isinstance(e, SpanRecorded) and e.trace_id == trace]
    text, summary = _draft_text(data_dir, twin, trace, spans, args.tenant)
    if args.output == "-":
        out(text.rstrip("\n"))
    else:
        Path(args.output).write_text(text, encoding="utf-8")
        out(f"Wrote {args.output}: {summary}.")
    return 0


def _draft_text(
    data_dir: Path, twin: Twin, trace: str, spans: list[SpanRecorded], tenant_flag: str | None
) -> tuple[str, str]:
    """The draft of one trace and a one-line summary; CliError when the trace cannot be mined."""
    tenants = sorted({s.tenant or "" for s in spans})
    if tenant_flag is not None:
        spans = [s for s in spans if s.tenant == tenant_flag]
    elif len(tenants) > 1:
        raise CliError(
            f"trace {trace} was sent by {len(tenants)} tenants ({', '.join(tenants)}): pick one with --tenant"
        )
    if not spans:
        raise CliError(f"no spans of trace {trace}{f' for tenant {tenant_flag}' if tenant_flag else ''} in {data_dir}")
    tenant = spans[0].tenant
    verifications = [
        e
        for e in _events(data_dir, "verified-outcomes")
        if isinstance(e, OutcomeVerified) and e.trace_id == trace and e.tenant == tenant
    ]
    if not verifications:
        raise CliError(
            f"trace {trace} has no verified outcome: the miner turns what the system of record verified into "
            "expectations (report one with POST /v1/outcomes, by trace id or subject)"
        )
    latest = max(verifications, key=lambda e: (e.received_time, e.event_id))
    try:
        text = render(draft(spans, latest, twin), twin)
    except MiningError as exc:
        raise CliError(str(exc)) from None
    return text, f"scenario draft of trace {trace} ({len(spans)} spans, verified {latest.status})"


def _mine_regression(args: argparse.Namespace, data_dir: Path, twin: Twin) -> int:
    """One draft per contradicted trace of a VersionRegressed, into the directory -o names."""
    alarms = [e for e in _events(data_dir, "version-alerts") if isinstance(e, VersionRegressed)]
    wanted = args.regression.strip().lower()
    if args.tenant is not None:
        alarms = [a for a in alarms if a.tenant == args.tenant]
    if wanted == "latest":
        found = max(alarms, key=lambda a: (a.detected_at, a.event_id), default=None)
    else:
        found = next((a for a in alarms if wanted in (a.alarm_id, a.event_id)), None)
    if found is None:
        raise CliError(f"no version regression {args.regression!r} in {data_dir} (`agenttwin alerts tail` lists them)")
    if not found.contradicted_traces:
        raise CliError(
            f"the regression of {found.agent} {found.candidate_version} ({found.metric}) lists no contradicted trace"
        )
    if args.output == "-":
        raise CliError("--regression writes one draft per trace: give -o a directory")
    target = Path(args.output)
    target.mkdir(parents=True, exist_ok=True)
    wanted_traces = set(found.contradicted_traces)
    spans_by_trace: dict[str, list[SpanRecorded]] = {}
    for e in _events(data_dir, "spans"):
        if isinstance(e, SpanRecorded) and e.trace_id in wanted_traces and e.tenant == found.tenant:
            spans_by_trace.setdefault(e.trace_id, []).append(e)
    written = 0
    for trace in found.contradicted_traces:
        text, _ = _draft_text(data_dir, twin, trace, spans_by_trace.get(trace, []), found.tenant)
        (target / f"{trace}.yaml").write_text(text, encoding="utf-8")
        written += 1
    out(
        f"Wrote {written} scenario draft(s) to {target}: the contradicted traces of {found.agent} "
        f"{found.candidate_version} vs {found.baseline_version} ({found.metric}, alarm {found.alarm_id})."
    )
    return 0

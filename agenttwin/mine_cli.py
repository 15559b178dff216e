"""`agenttwin mine --trace TRACE_ID [--tenant T] [--twin TWIN] [--data-dir DIR] -o FILE`.

Reads the trace's spans and its latest verified outcome from the embedded log, read-only (no lock: it
works beside a running `agenttwin ingest`), and writes the scenario draft (agenttwin/mining.py).
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
from streams.events import Event, OutcomeVerified, SpanRecorded
from streams.log_reader import ReadOnlyLog

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

    trace = args.trace.strip().lower()
    if not _TRACE_ID.match(trace):
        raise CliError(f"--trace must be 32 hex digits, got {args.trace!r}")
    settings = load_settings()
    data_dir = Path(args.data_dir).expanduser() if args.data_dir else settings.resolved_data_dir
    if not (data_dir / EMBEDDED_LOG_DIR).is_dir():
        raise CliError(f"no event log in {data_dir}")
    twin = _load_twin(args.twin)
    spans = [e for e in _events(data_dir, "spans") if isinstance(e, SpanRecorded) and e.trace_id == trace]
    tenants = sorted({s.tenant or "" for s in spans})
    if args.tenant is not None:
        spans = [s for s in spans if s.tenant == args.tenant]
    elif len(tenants) > 1:
        raise CliError(
            f"trace {trace} was sent by {len(tenants)} tenants ({', '.join(tenants)}): pick one with --tenant"
        )
    if not spans:
        raise CliError(f"no spans of trace {trace}{f' for tenant {args.tenant}' if args.tenant else ''} in {data_dir}")
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
    if args.output == "-":
        out(text.rstrip("\n"))
    else:
        Path(args.output).write_text(text, encoding="utf-8")
        out(f"Wrote {args.output}: scenario draft of trace {trace} ({len(spans)} spans, verified {latest.status}).")
    return 0

"""CLI commands for production traces: `agenttwin ingest`, `agenttwin alerts tail`, `agenttwin alerts webhook`.

cli.py calls `register(sub)` with its subparsers; each command sets `func` like the others.
Embedded by default (the data directory's log); `--kafka BOOTSTRAP` (or KAFKA_BOOTSTRAP_SERVERS) uses Kafka.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenttwin.command_context import data_dir_of, kafka_of
from agenttwin.errors import CliError
from agenttwin.render import out

if TYPE_CHECKING:
    from collections.abc import Callable

    from evaluation.claim_status import ClaimReading
    from producers.otlp.live import LiveProcessor
    from producers.otlp.publishing import LockedPublisher
    from streams.embedded import EmbeddedRuntime

DEFAULT_JOIN_EVERY_S = 1.0
TICK_EVERY_S = 1.0  # the joins' horizon timers, however short --join-every is


def register(sub: Any) -> None:
    """Add `ingest` and `alerts` to the top-level subparsers (argparse's _SubParsersAction)."""
    add_ingest_parser(sub)
    add_alerts_parser(sub)


def _data_dir_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data-dir", metavar="DIR", help="embedded runtime data (default $AGENTTWIN_DATA_DIR or ~/.agenttwin)"
    )


def _kafka_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kafka", metavar="BOOTSTRAP", help="Kafka bootstrap servers (default $KAFKA_BOOTSTRAP_SERVERS)")
    from agenttwin.kafka_args import add_naming_args

    add_naming_args(p)


# producers.otlp.server's defaults, repeated so the parser loads no OTLP code (a test keeps them equal)
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 4318


def add_ingest_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "ingest", help="receive OpenTelemetry spans over OTLP/HTTP (POST /v1/traces) from production agents"
    )
    p.add_argument("--host", default=DEFAULT_HOST, help=f"interface to listen on (default {DEFAULT_HOST})")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    p.add_argument(
        "--api-keys",
        metavar="FILE",
        help="KEY=TENANT lines or a JSON object (also $AGENTTWIN_INGEST_API_KEYS / _API_KEYS_FILE)",
    )
    p.add_argument("--max-body-bytes", type=int, default=None, help="largest accepted body (default 4 MiB)")
    p.add_argument(
        "--join-every",
        type=float,
        default=DEFAULT_JOIN_EVERY_S,
        metavar="SECONDS",
        help="embedded only: run the outcome join this often (0 = never; on Kafka the workers run it)",
    )
    _kafka_args(p)
    _data_dir_arg(p)
    p.set_defaults(func=ingest)


def add_alerts_parser(sub: Any) -> None:
    alerts: argparse.ArgumentParser = sub.add_parser("alerts", help="contradiction alerts: tail them, send them on")
    alerts_sub = alerts.add_subparsers(dest="alerts_command", required=True, metavar="SUBCOMMAND")
    tail = alerts_sub.add_parser("tail", help="print contradiction alerts (one line each, or --json)")
    tail.add_argument("--json", action="store_true", help="one JSON object a line")
    tail.add_argument("-f", "--follow", action="store_true", help="keep printing new alerts")
    tail.add_argument("--new", action="store_true", help="embedded: skip the alerts already stored")
    tail.add_argument("--tenant", help="only this tenant's alerts")
    tail.add_argument("--group", default="agenttwin-alerts-tail", help="Kafka consumer group")
    _kafka_args(tail)
    _data_dir_arg(tail)
    tail.set_defaults(func=alerts_tail)

    hook = alerts_sub.add_parser("webhook", help="POST each alert as JSON to a URL (retries, dead letters)")
    hook.add_argument("url", metavar="URL")
    hook.add_argument("--attempts", type=int, default=5, help="POSTs per alert before dead-lettering (default 5)")
    hook.add_argument("--base-delay", type=float, default=0.5, help="first backoff in seconds (doubles; default 0.5)")
    hook.add_argument("--max-delay", type=float, default=30.0, help="backoff cap in seconds (default 30)")
    hook.add_argument("--timeout", type=float, default=10.0, help="per-request timeout in seconds (default 10)")
    hook.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'", help="extra header")
    hook.add_argument("-f", "--follow", action="store_true", help="keep delivering new alerts")
    hook.add_argument("--group", default="alerts-webhook", help="consumer group (its committed offsets)")
    _kafka_args(hook)
    _data_dir_arg(hook)
    hook.set_defaults(func=alerts_webhook)


def live_joins(
    runtime: EmbeddedRuntime, publisher: LockedPublisher, classifier: Callable[[str | None], ClaimReading]
) -> list[LiveProcessor]:
    """What `agenttwin ingest` runs beside the receiver on the embedded log, in the order it steps them."""
    from producers.otlp.live import LiveProcessor
    from streams.processors.outcome_join import OutcomeJoin
    from streams.processors.subject_join import SubjectJoin
    from streams.processors.version_tally import VersionTally
    from streams.processors.version_watch import VersionWatch

    return [
        LiveProcessor(runtime, SubjectJoin(), publisher, tick_every_s=TICK_EVERY_S),
        LiveProcessor(runtime, OutcomeJoin(classifier=classifier), publisher, tick_every_s=TICK_EVERY_S),
        # the version watch over what the joins read (docs/guides/versions.md)
        LiveProcessor(runtime, VersionTally(), publisher),
        LiveProcessor(runtime, VersionWatch(), publisher),
    ]


def ingest(args: argparse.Namespace) -> int:
    from streams.gc_policy import long_running_gc

    with long_running_gc():  # the live joins keep a large state for as long as the receiver runs
        return _ingest(args)


def _ingest(args: argparse.Namespace) -> int:
    from agenttwin.settings import load_settings
    from evaluation.claim_model import claim_classifier
    from producers.otlp.admission import Admission
    from producers.otlp.keys import IngestSettings, KeyFileError, load_api_keys
    from producers.otlp.live import run_every
    from producers.otlp.outcomes import OUTCOMES_PATH
    from producers.otlp.publishing import ConcurrentPublisher, GroupCommitPublisher
    from producers.otlp.server import TRACES_PATH, make_server
    from streams.log_reader import adopt_dead_letters

    settings, ingest_settings = load_settings(), IngestSettings()
    try:
        keys = load_api_keys(ingest_settings, Path(args.api_keys) if args.api_keys else None)
    except KeyFileError as exc:
        raise CliError(str(exc)) from None
    if not len(keys):
        raise CliError("no API keys: pass --api-keys FILE or set AGENTTWIN_INGEST_API_KEYS (KEY=TENANT,...)")
    max_body = args.max_body_bytes or ingest_settings.max_body_bytes
    bootstrap = kafka_of(args, settings)
    try:
        classifier = claim_classifier()
    except ValueError as exc:
        raise CliError(str(exc)) from None
    stop = threading.Event()
    closers: list[Any] = []
    if bootstrap:
        from agenttwin.kafka_cli import naming_for
        from streams.kafka.clients import ensure_topics
        from streams.kafka.publisher import KafkaPublisher

        naming = naming_for(args, settings)
        ensure_topics(bootstrap, naming)
        kafka = KafkaPublisher(bootstrap, naming)
        closers.append(kafka)
        publisher: LockedPublisher = ConcurrentPublisher(kafka)  # each request waits for its own acks
        where = f"Kafka {bootstrap}"
    else:
        from streams.embedded import EmbeddedRuntime

        data_dir = data_dir_of(args, settings)
        data_dir.mkdir(parents=True, exist_ok=True)
        runtime = EmbeddedRuntime(data_dir)
        closers.append(runtime)
        publisher = GroupCommitPublisher(runtime)  # requests arriving together share one fsync
        closers.insert(0, publisher)  # commits what is queued before the log closes
        where = f"embedded log {data_dir}"
    joins: list[LiveProcessor] = []
    if not bootstrap and args.join_every > 0:
        joins = live_joins(runtime, publisher, classifier)
    admission = Admission(joins).admit if joins else None  # spans wait while a join is behind
    try:
        server = make_server(args.host, args.port, publisher, keys, max_body_bytes=max_body, admission=admission)
    except OSError as exc:  # e.g. the port is taken: one line, exit 2, nothing left open
        for closer in closers:
            closer.close()
        raise CliError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    if joins:

        def adopt() -> int:  # dead letters a webhook beside this writer made (streams/log_reader.py)
            with publisher.lock:
                return adopt_dead_letters(runtime)

        run_every(joins, args.join_every, stop, also=[adopt])
        where += f", subject and outcome joins and the version watch every {args.join_every:g} s"
    out(f"agenttwin ingest: {server.url}{TRACES_PATH} and {OUTCOMES_PATH} ({len(keys)} API key(s); {where})")
    sys.stdout.flush()
    try:
        server.serve_forever()
    finally:
        stop.set()
        server.server_close()
        for closer in closers:
            closer.close()
    return 0


def alerts_tail(args: argparse.Namespace) -> int:
    from agenttwin.settings import load_settings
    from consumers.alerts import tail_embedded, tail_kafka

    settings = load_settings()
    bootstrap = kafka_of(args, settings)

    def emit(line: str) -> None:
        out(line)
        sys.stdout.flush()

    if bootstrap:
        from agenttwin.kafka_cli import naming_for

        tail_kafka(
            bootstrap,
            emit,
            group=args.group,
            naming=naming_for(args, settings),
            as_json=args.json,
            follow=args.follow,
            tenant=args.tenant,
        )
        return 0
    tail_embedded(
        data_dir_of(args, settings),
        emit,
        as_json=args.json,
        from_beginning=not args.new,
        follow=args.follow,
        tenant=args.tenant,
    )
    return 0


def parse_headers(values: list[str]) -> dict[str, str]:
    headers = {}
    for value in values:
        name, colon, text = value.partition(":")
        if not colon or not name.strip():
            raise CliError(f"--header {value!r}: expected 'NAME: VALUE'")
        headers[name.strip()] = text.strip()
    return headers


def alerts_webhook(args: argparse.Namespace) -> int:
    from agenttwin.settings import load_settings
    from consumers.webhook import (
        WebhookSender,
        WebhookStats,
        webhook_beside_writer,
        webhook_embedded,
        webhook_kafka,
    )
    from streams._log_support import LogLockedError

    settings = load_settings()
    bootstrap = kafka_of(args, settings)
    sender = WebhookSender(
        args.url,
        attempts=args.attempts,
        base_delay_s=args.base_delay,
        max_delay_s=args.max_delay,
        timeout_s=args.timeout,
        headers=parse_headers(args.header),
    )
    stats: WebhookStats
    try:
        if bootstrap:
            from agenttwin.kafka_cli import naming_for
            from streams.kafka.publisher import KafkaPublisher

            naming = naming_for(args, settings)
            with KafkaPublisher(bootstrap, naming) as dead_letters:
                stats = webhook_kafka(
                    bootstrap, sender, dead_letters, group=args.group, naming=naming, follow=args.follow
                )
        else:
            from streams.embedded import EmbeddedRuntime

            data_dir = data_dir_of(args, settings)
            try:
                runtime = EmbeddedRuntime(data_dir)
            except LogLockedError:  # another process writes: deliver beside it (streams/log_reader.py)
                try:
                    stats = webhook_beside_writer(data_dir, sender, group=args.group, follow=args.follow)
                except LogLockedError as exc:
                    raise CliError(f"{exc}: another `alerts webhook --group {args.group}` is running") from None
            else:
                with runtime:
                    stats = webhook_embedded(runtime, sender, group=args.group, follow=args.follow)
    finally:
        sender.close()
    out(f"delivered {stats.delivered}, dead-lettered {stats.dead_lettered} ({stats.attempts} POST attempt(s))")
    return 0

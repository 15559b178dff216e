"""The Kafka side of the command line (`agenttwin worker`, the naming flags), kept apart from the Kafka code
so that building the CLI's parser imports no Kafka client (agenttwin/kafka_cli.py runs the commands)."""

from __future__ import annotations

import argparse
import importlib

from evaluation.versions import DEFAULT_EVALUATOR_SET
from streams.kafka.naming_defaults import DEFAULT_PREFIX, WIRE_MODES

# `all` = every processor and the sink (the alert tail prints; run it on its own).
ALL_KINDS = (
    "planner",
    "simulator",
    "grader",
    "comparator",
    "subject-join",
    "outcome-join",
    "version-tally",
    "version-watch",
    "sink",
)
WORKER_KINDS = (*ALL_KINDS, "alerts", "all")


def _worker_command(args: argparse.Namespace) -> int:
    code: int = importlib.import_module("agenttwin.kafka_cli").worker_command(args)
    return code


def add_worker_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = subparsers.add_parser("worker", help="run Kafka stream workers until stopped (SIGTERM / Ctrl-C)")
    p.add_argument("kind", choices=WORKER_KINDS, help="which worker; 'all' runs every processor and the sink")
    p.add_argument(
        "--evaluator-version",
        action="append",
        dest="evaluator_versions",
        metavar="VERSION",
        help=f"grader/comparator evaluator set; repeatable (default {DEFAULT_EVALUATOR_SET}); "
        "selects the consumer group grader-<version> (the comparator serves every version in one group)",
    )
    p.add_argument("--kafka", metavar="BOOTSTRAP", help="bootstrap servers (default: KAFKA_BOOTSTRAP_SERVERS)")
    add_naming_args(p)
    p.add_argument("--log-level", default="WARNING", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    p.set_defaults(func=_worker_command)
    return p


def add_naming_args(p: argparse.ArgumentParser) -> None:
    """--topic-prefix, --wire and --schema-registry: where a Kafka command finds the pipeline and how values
    are framed (defaults: AGENTTWIN_TOPIC_PREFIX / `agenttwin.`, AGENTTWIN_WIRE / single-object,
    AGENTTWIN_SCHEMA_REGISTRY_URL)."""
    p.add_argument(
        "--topic-prefix",
        default=None,
        metavar="PREFIX",
        help=f"prefix of every Kafka topic, group and transactional id (default $AGENTTWIN_TOPIC_PREFIX or "
        f"'{DEFAULT_PREFIX}'; '' = unprefixed names)",
    )
    p.add_argument(
        "--wire",
        choices=WIRE_MODES,
        default=None,
        help="value framing written to Kafka: Avro single-object (default) or Confluent (00 + registry id); "
        "readers accept both",
    )
    p.add_argument(
        "--schema-registry", metavar="URL", default=None, help="Confluent-compatible schema registry (confluent wire)"
    )

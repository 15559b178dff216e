"""Where a command's data lives, one definition for every command: the data directory, the Kafka cluster (if
the command runs on Kafka), the embedded runtime or the Kafka-side warehouse, and the evaluator version."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenttwin.errors import CliError

if TYPE_CHECKING:  # settings and the pipeline are imported by the commands that run, not by the parser
    from agenttwin.pipeline import Embedded
    from agenttwin.settings import Settings


def data_dir_of(args: argparse.Namespace, settings: Settings) -> Path:
    """--data-dir, else AGENTTWIN_DATA_DIR, else ~/.agenttwin."""
    given = getattr(args, "data_dir", None)
    return Path(given).expanduser() if given else settings.resolved_data_dir


def kafka_of(args: argparse.Namespace, settings: Settings) -> str | None:
    """The Kafka bootstrap when the command should run on Kafka: --kafka, else KAFKA_BOOTSTRAP_SERVERS."""
    value = (getattr(args, "kafka", None) or settings.kafka_bootstrap_servers or "").strip()
    return value or None


def open_embedded_of(args: argparse.Namespace) -> tuple[Settings, Embedded]:
    from agenttwin.pipeline import open_embedded
    from agenttwin.settings import load_settings

    settings = load_settings()
    data_dir = Path(args.data_dir).expanduser() if getattr(args, "data_dir", None) else None
    return settings, open_embedded(settings, data_dir)


def kafka_warehouse_of(args: argparse.Namespace, settings: Settings) -> Any:
    """The warehouse a Kafka-side command projects into: a ClickHouse server, else chDB in the data directory."""
    from consumers.clickhouse import open_warehouse

    root = data_dir_of(args, settings)
    root.mkdir(parents=True, exist_ok=True)
    return open_warehouse(settings.clickhouse_url, root)


def evaluator_version(value: str | None) -> str:
    """The evaluator set a command grades or reads under (default: the current one); unknown is exit 2."""
    from evaluation.versions import DEFAULT_EVALUATOR_SET, evaluator_set

    version = value or DEFAULT_EVALUATOR_SET
    try:
        evaluator_set(version)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    return version

"""`agenttwin log verify` and `agenttwin log repair`: check the embedded log's files and quarantine damage.

cli.py calls `register(sub)` with its subparsers. Both take the pipeline's `--data-dir` (the log lives in
its `topics-log/`; a log directory itself is accepted too). verify exits 0 when nothing is damaged and 2
otherwise, after listing every damaged block of every topic; repair exits 0 once every damaged block is in
quarantine with a dead letter recorded for it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from agenttwin.errors import CliError
from agenttwin.render import out
from streams._log_support import RUNTIME_LOG_DIR, cli_data_dir


def register(sub: Any) -> None:
    log: argparse.ArgumentParser = sub.add_parser("log", help="check the embedded log's files; repair damage")
    log_sub = log.add_subparsers(dest="log_command", required=True, metavar="SUBCOMMAND")
    verify = log_sub.add_parser("verify", help="report every damaged block of every topic (exit 2 if any)")
    _data_dir_arg(verify)
    verify.set_defaults(func=log_verify)
    repair = log_sub.add_parser(
        "repair", help="move damaged blocks to quarantine, record a dead letter each, keep every valid block"
    )
    _data_dir_arg(repair)
    repair.set_defaults(func=log_repair)


def _data_dir_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data-dir", metavar="DIR", help="embedded runtime data (default $AGENTTWIN_DATA_DIR or ~/.agenttwin)"
    )


def _log_dir(args: argparse.Namespace) -> Path:
    given = getattr(args, "data_dir", None)
    if given:
        root = Path(given).expanduser()
    else:
        from agenttwin.settings import load_settings  # only when it runs: building the parser stays light

        root = load_settings().resolved_data_dir
    for candidate in (root / RUNTIME_LOG_DIR, root):
        if (candidate / "topics").is_dir():
            return candidate
    raise CliError(f"{root}: no embedded log here (no {RUNTIME_LOG_DIR}/topics/); check --data-dir")


def log_verify(args: argparse.Namespace) -> int:
    from streams.log_integrity import verify_log

    log_dir = _log_dir(args)
    report = verify_log(log_dir)
    for notice in report.notices:
        out(f"note: {notice}")
    for damage in report.damaged:
        out(f"DAMAGED {damage.line()}")
    summary = f"{report.topics} topic(s), {report.blocks} valid block(s), {report.records} record(s) in {log_dir}"
    if report.ok:
        out(f"log OK: every block matches its checksum — {summary}")
        return 0
    data_dir = cli_data_dir(log_dir)
    out(
        f"{len(report.damaged)} problem(s) — {summary}; run `agenttwin log repair --data-dir {data_dir}` "
        "(damaged bytes go to quarantine, every valid block keeps its offsets)"
    )
    return 2


def log_repair(args: argparse.Namespace) -> int:
    from streams.embedded import EmbeddedRuntime, quarantine_dead_letter
    from streams.log_integrity import repair_log

    log_dir = _log_dir(args)
    report = repair_log(log_dir)
    for item in report.headers:
        out(f"replaced the damaged container header of topic {item.topic} (old bytes: {item.path})")
    for item in report.quarantined:
        count = "?" if item.count is None else str(item.count)
        out(f"quarantined {item.reason} -> {item.path} ({count} record(s))")
    for topic in report.reindexed:
        out(f"rebuilt the index of topic {topic} (no block was damaged)")
    for reset in report.offsets_reset:
        out(f"set aside the damaged offsets of group {reset.group} -> {reset.quarantine}; it starts again from 0")
    for moved in report.offsets_moved:
        out(f"moved a committed offset past the end back to the end: {moved}")
    letters = [quarantine_dead_letter(q, "log-repair") for q in report.quarantined if q.count != 0]
    if letters and log_dir.name != RUNTIME_LOG_DIR:
        out(f"no dead letters recorded: {log_dir} is not a pipeline data directory's log")
    elif letters:
        with EmbeddedRuntime(log_dir.parent) as runtime:  # opening it also proves the log is whole again
            written = runtime.publish(letters)
        out(f"recorded {written} dead letter(s) on topic dead-letters (stage log-repair)")
    if not report.changed:
        out(f"nothing to repair in {log_dir}")
    else:
        out(f"repaired {log_dir}: every valid block kept with its offsets; quarantine in {log_dir / 'quarantine'}")
    return 0

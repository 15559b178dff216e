"""Command-line arguments of `gate`, `report` and evaluate's report flags, kept apart from the commands so
that building the parser imports nothing heavy; the commands load when they run (cli.py's `lazy`)."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any

REPORT_FORMATS = ("junit", "markdown", "html")


def lazy(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """A command whose module is imported only when it runs: `--help` and `twin check` never load the
    pipeline (chDB, Kafka clients, the judges' SDKs)."""

    def run(args: argparse.Namespace) -> int:
        command: Callable[[argparse.Namespace], int] = getattr(importlib.import_module(module), name)
        return command(args)

    return run


def add_gate_args(p: argparse.ArgumentParser, *, on_evaluate: bool) -> None:
    if on_evaluate:
        p.add_argument(
            "--gate",
            nargs="?",
            const="default",
            metavar="POLICY.yaml",
            help="decide PASS / WARN / BLOCK (exit 0 / --warn-exit / 1) under this gate-policy.v1 file "
            "(no file: the default policy)",
        )
    else:
        p.add_argument("--policy", metavar="POLICY.yaml", help="gate-policy.v1 file (default: the default policy)")
    p.add_argument("--warn-exit", type=int, default=0, metavar="N", help="exit status for a WARN decision (default 0)")


def add_report_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--junit", metavar="FILE", help="write a JUnit XML report (one test case per scenario; - = stdout)")
    p.add_argument("--markdown", metavar="FILE", help="write a Markdown summary for a pull-request comment")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML report")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], data_dir_arg: Any, kafka_arg: Any) -> None:
    g = sub.add_parser("gate", help="decide PASS / WARN / BLOCK for a stored evaluation (again, e.g. after a review)")
    g.add_argument("evaluation_id", metavar="EVALUATION_ID")
    add_gate_args(g, on_evaluate=False)
    g.add_argument("--evaluator-version", default=None)
    g.add_argument("--json", action="store_true")
    data_dir_arg(g)
    kafka_arg(g)
    g.set_defaults(func=lazy("agenttwin.report_commands", "gate"))

    r = sub.add_parser(
        "report",
        help="write JUnit XML, Markdown or HTML reports of a stored evaluation, or of production",
        description="With no format flag, writes the HTML report to ./agenttwin-report-EVALUATION_ID.html.",
    )
    r.add_argument("evaluation_id", metavar="EVALUATION_ID", nargs="?")
    r.add_argument(
        "--production",
        action="store_true",
        help="with --html: agent versions in production (rates over time, version alarms, latest contradictions)",
    )
    add_report_args(r)
    r.add_argument("--evaluator-version", default=None)
    data_dir_arg(r)
    kafka_arg(r)
    r.set_defaults(func=lazy("agenttwin.report_commands", "report"))

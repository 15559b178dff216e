"""The `agenttwin` command: the contract other tools script against.

JSON on stdout with --json, human tables otherwise; exit 0 on success, 2 with a one-line reason on bad input.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable, Sequence

from agenttwin import command_args, commands, log_cli, mcp_cli, traces_cli
from agenttwin.command_args import add_gate_args, lazy
from agenttwin.errors import CliError, Terminated, user_error_types
from agenttwin.kafka_args import add_naming_args, add_worker_parser

DEFAULT_SEED = 42
AGENT_SPEC_HELP = (
    "demo:<version>[+anthropic[/<model>]] | script:<path> | airline:careful|careless | "
    "http://host:port[?timeout=S][&name=NAME][#VERSION] | python:module:attr"
)
NAME_HELP = (
    "an HTTP agent's display name (default: the agent_name its replies give); its version is the #VERSION "
    "or the reply's"
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="agenttwin",
        description="Grade AI agents on what their tools' state shows, not on what they say.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    twin = sub.add_parser("twin", help="check twin definitions, call a twin by hand")
    twin_sub = twin.add_subparsers(dest="twin_command", required=True, metavar="SUBCOMMAND")
    tc = twin_sub.add_parser("check", help="validate twin.v1 files")
    tc.add_argument("files", nargs="+", metavar="FILE")
    tc.add_argument("--json", action="store_true")
    tc.set_defaults(func=commands.twin_check)
    call = twin_sub.add_parser("call", help="run calls from a JSONL file against a twin")
    call.add_argument("twin", metavar="TWIN", help="twin file, or 'demo'")
    call.add_argument("--calls", required=True, metavar="CALLS.jsonl", help="one {tool, arguments, headers} a line")
    call.add_argument("--scenario", metavar="FILE", help="apply this scenario's state, allowedTools, context, faults")
    call.add_argument("--seed", type=int, default=0, help="case seed for probabilistic faults (default 0)")
    call.add_argument("--tenant", help="the caller's tenant (default: the scenario's context tenant)")
    call.add_argument("--json", action="store_true")
    call.set_defaults(func=commands.twin_call)
    mcp = twin_sub.add_parser("mcp", help="serve one twin case over MCP on stdio (for a local agent)")
    mcp.add_argument("twin", metavar="TWIN", help="twin file, or 'demo'")
    mcp.add_argument("--scenario", metavar="FILE", help="apply this scenario's state, allowedTools, context, faults")
    mcp.add_argument("--seed", type=int, default=0, help="case seed for probabilistic faults (default 0)")
    mcp.add_argument("--tenant", help="the caller's tenant (default: the scenario's context tenant)")
    mcp.add_argument("--out", metavar="FILE", help="when the client hangs up: write records, final state, hash here")
    mcp.set_defaults(func=mcp_cli.twin_mcp)

    scen = sub.add_parser("scenario", help="check scenario files")
    scen_sub = scen.add_subparsers(dest="scenario_command", required=True, metavar="SUBCOMMAND")
    sc = scen_sub.add_parser("check", help="validate scenario.v1 files (against a twin with --twin)")
    sc.add_argument("files", nargs="+", metavar="FILE")
    sc.add_argument("--twin", metavar="TWIN", help="twin file, or 'demo'")
    sc.add_argument("--json", action="store_true")
    sc.set_defaults(func=commands.scenario_check)

    sim = sub.add_parser("simulate", help="run one agent version over a suite and grade each case")
    sim.add_argument("--agent", required=True, metavar="SPEC", help=AGENT_SPEC_HELP)
    sim.add_argument("--agent-name", metavar="NAME", help=NAME_HELP)
    _suite_args(sim)
    sim.add_argument("--evaluator-version", default=None, help="evaluator set (default: the current one)")
    sim.add_argument("--json", action="store_true")
    sim.set_defaults(func=commands.simulate)

    mine = sub.add_parser("mine", help="turn a production trace with a verification into a scenario draft")
    mined = mine.add_mutually_exclusive_group(required=True)
    mined.add_argument("--trace", metavar="TRACE_ID", help="32 hex digits")
    mined.add_argument(
        "--regression",
        metavar="ALARM_ID",
        help="a VersionRegressed's alarm id, or 'latest': one draft per contradicted trace it lists (-o a directory)",
    )
    mine.add_argument("--tenant", help="the trace's tenant, when several tenants sent that trace id")
    mine.add_argument("--twin", metavar="TWIN", help="twin file, or 'demo' (default)")
    mine.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="where the scenario draft goes ('-': stdout; a directory with --regression)",
    )
    mine.add_argument("--data-dir", metavar="DIR", help="default $AGENTTWIN_DATA_DIR, else ~/.agenttwin")
    mine.set_defaults(func=lazy("agenttwin.mine_cli", "mine"))

    ev = sub.add_parser("evaluate", help="compare a candidate agent with a baseline as one pinned pair")
    ev.add_argument("--baseline", metavar="SPEC", help=f"{AGENT_SPEC_HELP} (--world airline: airline:careful)")
    ev.add_argument("--candidate", metavar="SPEC", help=f"{AGENT_SPEC_HELP} (--world airline: airline:careless)")
    ev.add_argument("--baseline-name", metavar="NAME", help=NAME_HELP)
    ev.add_argument("--candidate-name", metavar="NAME", help=NAME_HELP)
    _suite_args(ev)
    ev.add_argument("--evaluation-id", help="default: derived from the inputs")
    ev.add_argument(
        "--trials",
        type=int,
        default=1,
        metavar="K",
        help="run each case K times per side (trial n of both sides on the same seed); K >= 3, or 1 (default)",
    )
    ev.add_argument(
        "--concurrency",
        type=int,
        default=1,
        metavar="N",
        help="simulate up to N cases at once (results are byte-identical to a serial run; default 1)",
    )
    ev.add_argument("--evaluator-version", default=None, help="evaluator set (default: the current one)")
    ev.add_argument("--json", action="store_true", help="print the full comparison document")
    _data_dir_arg(ev)
    _kafka_arg(ev)
    ev.add_argument(
        "--workers-running",
        action="store_true",
        help="with Kafka: `agenttwin worker ...` processes do the work (default: run them in this process)",
    )
    add_gate_args(ev, on_evaluate=True)
    command_args.add_report_args(ev)
    ev.set_defaults(func=lazy("agenttwin.pipeline_commands", "evaluate"))

    demo = sub.add_parser("demo", help="the field notes' story: 1.3.0 vs 1.2.4 and 1.3.1 vs 1.3.0, end to end")
    demo.add_argument(
        "--production",
        action="store_true",
        help="the production story instead: a 10 %% canary of 1.3.0 flagged live, then 1.3.1 replaces it",
    )
    _data_dir_arg(demo)
    _kafka_arg(demo)
    demo.set_defaults(func=lazy("agenttwin.pipeline_commands", "demo"))

    rp = sub.add_parser("replay", help="re-grade every stored case under an evaluator version (from offset 0)")
    rp.add_argument("--evaluator-version", required=True, help="e.g. 1.0.0 or 1.1.0")
    _data_dir_arg(rp)
    _kafka_arg(rp)
    rp.set_defaults(func=lazy("agenttwin.pipeline_commands", "replay"))

    rb = sub.add_parser("rebuild", help="drop the ClickHouse projections and project every topic again from offset 0")
    _data_dir_arg(rb)
    _kafka_arg(rb)
    rb.set_defaults(func=lazy("agenttwin.pipeline_commands", "rebuild"))

    q = sub.add_parser("sql", help="query the ClickHouse projections (read-only)")
    q.add_argument("query", metavar="SQL")
    q.add_argument("--format", choices=("table", "json", "csv"), default="table")
    q.add_argument(
        "--timeout", type=float, default=60.0, metavar="SECONDS", help="stop the query after this long (default 60)"
    )
    q.add_argument(
        "--max-rows", type=int, default=100_000, metavar="N", help="refuse a result of more rows (default 100000)"
    )
    q.add_argument(
        "--max-bytes",
        type=int,
        default=64 * 1024 * 1024,
        metavar="N",
        help="refuse a result of more bytes, uncompressed (default 67108864: 64 MiB)",
    )
    _data_dir_arg(q)
    _kafka_arg(q)
    q.set_defaults(func=lazy("agenttwin.pipeline_commands", "sql"))

    events = sub.add_parser("events", help="read the event topics")
    events_sub = events.add_subparsers(dest="events_command", required=True, metavar="SUBCOMMAND")
    tail = events_sub.add_parser("tail", help="decode and print a topic's events")
    tail.add_argument("topic", metavar="TOPIC")
    tail.add_argument("--limit", type=int, default=None, help="only the last N events")
    tail.add_argument("--from-beginning", action="store_true")
    tail.add_argument("--json", action="store_true")
    _data_dir_arg(tail)
    tail.set_defaults(func=lazy("agenttwin.pipeline_commands", "events_tail"))

    ex = sub.add_parser("export", help="write a topic's events as typed records (Avro container, Parquet, JSON lines)")
    ex.add_argument("topic", metavar="TOPIC")
    ex.add_argument("--format", required=True, choices=("avro", "parquet", "jsonl"))
    ex.add_argument("--event", metavar="TYPE", help="the event type, for a topic with several (evaluations)")
    ex.add_argument("--output", "-o", metavar="FILE", help="default: ./<topic>[-<TYPE>].<format>")
    _data_dir_arg(ex)
    _kafka_arg(ex)
    ex.set_defaults(func=lazy("agenttwin.pipeline_commands", "export_topic"))

    rv = sub.add_parser("review", help="a person overrides one expectation result on one side (with a note)")
    rv.add_argument("--evaluation-id", required=True)
    rv.add_argument("--scenario", required=True)
    rv.add_argument("--side", required=True, choices=("baseline", "candidate"))
    rv.add_argument("--expectation", required=True, metavar="ID")
    rv.add_argument("--status", required=True, choices=("pass", "fail"))
    rv.add_argument("--note", required=True, help="why (mandatory; kept with the review)")
    rv.add_argument("--reviewer", required=True)
    rv.add_argument("--evaluator-version", default=None)
    _data_dir_arg(rv)
    rv.set_defaults(func=lazy("agenttwin.pipeline_commands", "review"))

    command_args.register(sub, _data_dir_arg, _kafka_arg)
    traces_cli.register(sub)
    log_cli.register(sub)
    add_worker_parser(sub)

    da = sub.add_parser("demo-agent", help="the Demo Co agent behind the HTTP agent interface")
    da_sub = da.add_subparsers(dest="demo_agent_command", required=True, metavar="SUBCOMMAND")
    serve = da_sub.add_parser("serve", help="serve POST /run on host:port (blocks until Ctrl-C)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8090)
    serve.set_defaults(func=commands.demo_agent_serve)
    return p


def _kafka_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--kafka",
        metavar="BOOTSTRAP",
        help="run through this Kafka cluster instead of the embedded log (default: $KAFKA_BOOTSTRAP_SERVERS)",
    )
    add_naming_args(p)


def _data_dir_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data-dir", metavar="DIR", help="embedded runtime data (default $AGENTTWIN_DATA_DIR or ~/.agenttwin)"
    )


def _suite_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--world",
        choices=("demo", "airline"),
        default="demo",
        help="packaged world: its twin and scenarios are the defaults of --twin and --suite (default demo)",
    )
    p.add_argument(
        "--suite", nargs="+", default=None, metavar="SUITE", help="'demo', 'airline', a directory, or scenario files"
    )
    p.add_argument(
        "--twin",
        metavar="TWIN",
        help="twin file or 'demo' (default: the world's twin; a scenario written for another twin is then an error)",
    )
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"run seed (default {DEFAULT_SEED})")


def _apply_world(args: argparse.Namespace) -> None:
    """--world NAME: the world's twin, suite and (for evaluate) agents, where none were given."""
    name = getattr(args, "world", None)
    if name is None:
        return
    from agenttwin.worlds import WORLDS

    world = WORLDS[name]
    if args.suite is None:
        args.suite = [world.suite]
    if args.twin is None and name != "demo":
        args.twin = str(world.twin_file)
    for side in ("baseline", "candidate"):
        if hasattr(args, side) and getattr(args, side) is None:
            default = getattr(world, side)
            if default is None:
                raise CliError(f"--{side} is required (it has a default only with --world airline)")
            setattr(args, side, default)


def _terminated(signum: int, frame: object) -> None:
    raise Terminated


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    signal.signal(signal.SIGTERM, _terminated)
    try:
        _apply_world(args)
        return func(args)
    except CliError as exc:
        print(f"agenttwin: {exc}", file=sys.stderr)
        return 2
    except user_error_types() as exc:
        print(f"agenttwin: {exc}", file=sys.stderr)
        return 2
    except Terminated:
        print("agenttwin: stopped (SIGTERM)", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("agenttwin: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug, not bad input: one line by default, the traceback on request
        from agenttwin.settings import load_settings

        if load_settings().debug:
            raise
        print(
            f"agenttwin: internal error: {type(exc).__name__}: {' '.join(str(exc).split())[:500]} "
            "(set AGENTTWIN_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())

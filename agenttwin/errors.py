"""Errors the CLI turns into one line and exit status 2 (bad input), never a traceback."""

from __future__ import annotations


class Terminated(KeyboardInterrupt):
    """SIGTERM, taken like Ctrl-C: `finally` blocks close servers and commit queued events. A process started
    in the background by a shell ignores SIGINT, so SIGTERM is how services and tests stop it."""


class CliError(Exception):
    """Bad command-line input: the message is the one line the user sees."""


def user_error_types() -> tuple[type[BaseException], ...]:
    """Every error that means "your input is wrong" (as opposed to a bug in AgentTwin)."""
    from consumers.clickhouse import WarehouseError
    from evaluation.judges.errors import JudgeConfigError
    from evaluation.versions import UnknownEvaluatorSetError
    from producers.agents.errors import AgentSpecError
    from streams.embedded_log import EventLogError
    from streams.registry import RegistryError
    from twin_engine.errors import TwinError

    return (
        TwinError,
        AgentSpecError,
        WarehouseError,
        EventLogError,
        RegistryError,
        JudgeConfigError,
        UnknownEvaluatorSetError,
        FileNotFoundError,
        IsADirectoryError,
        PermissionError,
    )

"""Kafka's own command-line tools (from the jars infra/kafka/kafka.sh fetches), as a user would run them."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from tests.integration.kafka_broker import KAFKA_SH

TOOL_TIMEOUT_S = 180.0


def kafka_tool(name: str, *args: str, classpath: str | None = None) -> str:
    """Run `kafka.sh tool NAME ARGS...` (e.g. consumer-groups = kafka-consumer-groups.sh); its stdout."""
    env = None
    if classpath is not None:
        import os

        env = {**os.environ, "AGENTTWIN_TOOL_CLASSPATH": classpath}
    result = subprocess.run(
        ["bash", str(KAFKA_SH), "tool", name, *args],
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
        env=env,
    )
    if result.returncode != 0:
        raise RuntimeError(f"kafka.sh tool {name} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result.stdout


@dataclass(frozen=True)
class GroupPartition:
    group: str
    topic: str
    partition: int
    current: int | None  # None: the group never committed this partition ("-")
    end: int
    lag: int | None


def describe_groups(bootstrap: str, groups: list[str]) -> list[GroupPartition]:
    """`kafka-consumer-groups.sh --describe` of these groups, one row per partition they committed."""
    args = ["--bootstrap-server", bootstrap, "--describe", "--offsets"]
    for group in groups:
        args += ["--group", group]
    rows = []
    for line in kafka_tool("consumer-groups", *args).splitlines():
        cells = line.split()
        if len(cells) < 6 or cells[0] == "GROUP" or not cells[2].isdigit():
            continue
        number = lambda cell: None if cell == "-" else int(cell)  # noqa: E731
        end = number(cells[4])
        assert end is not None, line
        rows.append(GroupPartition(cells[0], cells[1], int(cells[2]), number(cells[3]), end, number(cells[5])))
    return rows

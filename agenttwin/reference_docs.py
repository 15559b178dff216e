"""The documentation site's reference pages, generated from their sources so they cannot drift: the CLI from
its argument parsers, the events from the `.avsc` files, the tables and views from the ClickHouse DDL.

`docs/gen_pages.py` writes them when the site is built (`mkdocs build`); the tests render them too."""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import schemas

SCHEMAS = Path(schemas.__file__).resolve().parent
HELP_WIDTH = "100"  # argparse wraps to $COLUMNS: fixed, so the page is the same on every machine
CREATE = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?(TABLE|VIEW|MATERIALIZED VIEW)\s+(?:IF NOT EXISTS\s+)?(\S+)")


def cli_reference() -> str:
    from agenttwin.cli import _parser

    lines = [
        "# Commands and flags",
        "",
        "Generated from the argument parsers (`agenttwin COMMAND --help`); exit status 0 on success, 2 with a",
        "one-line reason on bad input.",
        "",
    ]
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH
    try:
        for name, parser in _commands(_parser(), "agenttwin"):
            lines += [f"## `{name}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    finally:
        if before is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = before
    return "\n".join(lines)


def _commands(parser: argparse.ArgumentParser, name: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers:
        yield name, parser
        return
    if name != "agenttwin":
        yield name, parser
    for action in subparsers:
        for sub_name, sub in action.choices.items():
            yield from _commands(sub, f"{name} {sub_name}")


def events_reference() -> str:
    lines = [
        "# Events",
        "",
        "Every event is an Avro record on a topic, encoded with the Avro single-object encoding (or the",
        "Confluent wire format with `--wire confluent`). Generated from the `.avsc` files in `schemas/avro/`;",
        "new fields carry defaults, so a reader of a newer schema reads what an older writer wrote.",
        "",
    ]
    for path in sorted((SCHEMAS / "avro").glob("*.avsc")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        lines += [f"## {schema['name']}", "", f"`{schema.get('namespace', '')}.{schema['name']}` ({path.name})", ""]
        if schema.get("doc"):
            lines += [_one_line(schema["doc"]), ""]
        lines += ["| field | type | default | meaning |", "|---|---|---|---|"]
        for field in schema["fields"]:
            default = json.dumps(field["default"]) if "default" in field else ""
            lines.append(
                f"| `{field['name']}` | {_cell(_type_name(field['type']))} | {_cell(default)} "
                f"| {_cell(_one_line(field.get('doc', '')))} |"
            )
        lines.append("")
    return "\n".join(lines)


def _type_name(avro_type: Any) -> str:
    if isinstance(avro_type, str):
        return avro_type
    if isinstance(avro_type, list):
        return " \\| ".join(_type_name(t) for t in avro_type)
    kind = avro_type.get("type")
    if kind == "array":
        return f"array<{_type_name(avro_type['items'])}>"
    if kind == "map":
        return f"map<{_type_name(avro_type['values'])}>"
    if kind in ("record", "enum", "fixed"):
        return str(avro_type.get("name", kind))
    logical = avro_type.get("logicalType")
    return f"{kind} ({logical})" if logical else str(kind)


def sql_reference() -> str:
    lines = [
        "# Tables and views (DDL)",
        "",
        "Generated from the ClickHouse DDL in `schemas/clickhouse/`: the same statements run on chDB and on a",
        "ClickHouse server. Query them with `agenttwin sql` (read-only).",
        "",
    ]
    for path in sorted((SCHEMAS / "clickhouse").glob("*.sql")):
        lines += [f"## {path.name}", ""]
        for comment, kind, name, statement in _statements(path.read_text(encoding="utf-8")):
            lines += [f"### `{name}`", "", f"{kind.lower()}. {comment}".strip(), "", "```sql", statement, "```", ""]
    return "\n".join(lines)


def _statements(ddl: str) -> Iterator[tuple[str, str, str, str]]:
    """(comment above it, TABLE or VIEW, name, statement) of each CREATE statement."""
    for chunk in re.split(r";\s*\n", ddl):
        comment_lines: list[str] = []
        body: list[str] = []
        for line in chunk.strip().splitlines():
            if not body and not line.strip():
                comment_lines = []  # a blank line ends a file's header comment: keep the statement's own
            elif line.startswith("--") and not body:
                comment_lines.append(line.lstrip("- ").strip())
            else:
                body.append(line)
        statement = "\n".join(body).strip()
        found = CREATE.match(statement)
        if found:
            yield " ".join(comment_lines), found.group(1), found.group(2), statement + ";"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _cell(text: str) -> str:
    return text.replace("|", "\\|")

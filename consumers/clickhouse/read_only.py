"""Read-only SQL for people: what `agenttwin sql` may run against a projection, checked by ClickHouse itself.

Two layers, both in the read-only session the adapter opens for a person's SQL:

1. The session runs with `readonly = 1`: ClickHouse refuses INSERT, DDL, OPTIMIZE, SET (also a query's
   own `SETTINGS readonly = 0`) and the table functions file, url, s3, remote, mysql, postgresql, hdfs,
   executable, … with "Cannot execute query in readonly mode".
2. What `readonly = 1` lets through is checked here, on ClickHouse's own parse of the statement
   (`formatQuery`, then `EXPLAIN AST`; nothing is executed): in chDB (verified with chdb 4.4) the scalar
   `file('/path')` still reads any file, `SELECT … INTO OUTFILE` still writes one, and `SYSTEM STOP MERGES`
   and `KILL QUERY` still run. So: exactly one statement; it must be a SELECT, SHOW, DESCRIBE, EXISTS or
   EXPLAIN; no INTO OUTFILE or FORMAT clause; table functions only from `ALLOWED_TABLE_FUNCTIONS` (they
   touch neither files nor the network), no function anywhere named like another table function
   (`file`, `url`, …) or in `FORBIDDEN_FUNCTIONS`, and no name of a database whose engine reaches outside
   (`OUTSIDE_DATABASE_ENGINES`: chDB's `default` is an Overlay of the file system, where
   `EXISTS TABLE default.<path>` would tell whether any file exists).

The statement that runs is the canonical text `formatQuery` returned, the very text that was checked.

Limits (`QueryLimits`): the read-only session is opened with a time limit (`max_execution_time`) and a
result-size limit (`max_result_rows`, `max_result_bytes`), all with overflow mode `throw`, set before
`readonly = 1` so no query can lift them (`SETTINGS max_execution_time = 0` is refused like any other
change). A query past a limit stops inside the engine and raises `QueryLimitError` naming the limit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from consumers.clickhouse._values import string_literal
from consumers.clickhouse.contract import DEFAULT_LIMITS, QueryLimits, ReadOnlyError, WarehouseError

__all__ = [
    "ALLOWED_TABLE_FUNCTIONS",
    "DEFAULT_LIMITS",
    "FORBIDDEN_FUNCTIONS",
    "READ_ONLY_KINDS",
    "QueryLimitError",
    "QueryLimits",
    "checked_statement",
    "engine_reason",
    "is_readonly_refusal",
    "limit_error",
    "refusal",
]

# Table functions that read only numbers, literals or this server's own tables.
ALLOWED_TABLE_FUNCTIONS = frozenset(
    {
        "numbers",
        "numbers_mt",
        "zeros",
        "zeros_mt",
        "generate_series",
        "generateseries",
        "primes",
        "values",
        "view",
        "viewifpermitted",
        "null",
        "generaterandom",
        "merge",
        "format",
        "loop",
    }
)
# Scalar functions that reach outside the warehouse (compared lower-case), besides every table function's
# name that is not allowed above (so `file(...)`, the scalar twin of the table function, is refused too).
FORBIDDEN_FUNCTIONS = frozenset({"file", "url", "catboostevaluate", "input"})
# Database engines whose tables are files, objects or other servers (chDB's `default` is an Overlay over one).
OUTSIDE_DATABASE_ENGINES = ("Overlay", "Filesystem", "S3", "HDFS", "MySQL", "PostgreSQL", "SQLite")
_IDENTIFIER = re.compile(r"^(?:Table)?Identifier (\S+)")
# The EXPLAIN AST root nodes of reads: SELECT (WITH, UNION, INTERSECT, EXCEPT), SHOW, DESCRIBE, EXISTS, EXPLAIN.
READ_ONLY_KINDS = ("SelectWithUnionQuery", "SelectIntersectExceptQuery", "Show", "Describe", "Exists", "Explain")
_SELECT_KINDS = ("SelectWithUnionQuery", "SelectIntersectExceptQuery")
READ_ONLY_HINT = (
    "`agenttwin sql` is read-only: it runs one SELECT, SHOW, DESCRIBE, EXISTS or EXPLAIN "
    "(the tables are projections of the topics; `agenttwin rebuild` recreates them)"
)
_FUNCTION = re.compile(r"^Function (\S+)")

Run = Callable[[str], list[str]]  # a statement in the read-only session -> the first column of each row




class QueryLimitError(WarehouseError):
    """A read-only query ran past its time limit or its result-size limit; the engine stopped it."""


def limit_error(message: str, limits: QueryLimits) -> QueryLimitError | None:
    """The QueryLimitError for an engine error that is one of our limits (else None)."""
    if "TIMEOUT_EXCEEDED" in message or "Code: 159." in message:
        return QueryLimitError(
            f"the query ran past its time limit of {limits.timeout_s:g} s and was stopped "
            "(raise it with --timeout SECONDS)"
        )
    if "TOO_MANY_ROWS_OR_BYTES" in message or "Code: 396." in message:
        return QueryLimitError(
            f"the query's result is larger than its limit of {limits.max_rows:,} rows or {limits.max_bytes:,} "
            "bytes and was stopped (aggregate or add LIMIT; or raise --max-rows / --max-bytes)"
        )
    return None


@dataclass(frozen=True)
class _Node:
    depth: int
    label: str


def checked_statement(sql: str, run: Run, table_functions: Iterable[str]) -> str:
    """The canonical text of `sql` if it is one read that touches nothing outside the warehouse.

    `run` executes in the read-only session; `table_functions` are the server's table function names
    (system.table_functions). Raises ReadOnlyError with one line saying what was refused.
    """
    if not sql.strip():
        raise ReadOnlyError("empty query: " + READ_ONLY_HINT)
    try:
        formatted = run(f"SELECT formatQuery({string_literal(sql)})")  # one statement, or a syntax error
    except ReadOnlyError:
        raise
    except WarehouseError as exc:
        reason = engine_reason(str(exc))
        if "Multi-statements" in reason:
            raise ReadOnlyError(f"refused several statements in one call: {READ_ONLY_HINT}") from None
        raise WarehouseError(f"not a valid SQL statement: {reason}") from None
    if len(formatted) != 1 or not formatted[0].strip():
        raise ReadOnlyError(f"could not parse the query: {READ_ONLY_HINT}")
    canonical = formatted[0].strip()
    nodes = [_parse_line(line) for line in run(f"EXPLAIN AST {canonical}") if line.strip()]
    if not nodes:
        raise ReadOnlyError(f"could not parse the query: {READ_ONLY_HINT}")
    root = nodes[0].label.split(" ", 1)[0]
    if not root.startswith(READ_ONLY_KINDS):
        raise ReadOnlyError(f"refused {_kind(root)}: {READ_ONLY_HINT}")
    _check_clauses(root, nodes)
    _check_functions(nodes, {name.lower() for name in table_functions})
    engines = ", ".join(string_literal(e) for e in OUTSIDE_DATABASE_ENGINES)
    _check_databases(nodes, set(run(f"SELECT name FROM system.databases WHERE engine IN ({engines})")))
    return canonical


def is_readonly_refusal(message: str) -> bool:
    """Whether ClickHouse refused a statement because the session is read-only (code 164)."""
    return "READONLY" in message or "Code: 164." in message or "readonly mode" in message


def engine_reason(message: str) -> str:
    """The engine's own words in an error message, without the wrapping and the statement we sent."""
    text = message.rsplit("DB::Exception: ", 1)[-1]
    text = re.sub(r"^default: ", "", text)
    text = re.split(r": In scope | \([A-Z_]+\)", text, maxsplit=1)[0]
    return " ".join(text.split()).rstrip(".")[:300]


def refusal(message: str) -> ReadOnlyError:
    """The ReadOnlyError for ClickHouse's own readonly-mode refusal of a person's statement."""
    return ReadOnlyError(f"refused ({engine_reason(message)}): {READ_ONLY_HINT}")


def _parse_line(line: str) -> _Node:
    stripped = line.lstrip(" ")
    return _Node(len(line) - len(stripped), stripped.rstrip())


def _kind(root: str) -> str:
    """`DropQuery` -> `DROP`, `SYSTEM` -> `SYSTEM`, `KillQueryQuery` -> `KILL QUERY`."""
    name = root.removesuffix("Query")
    words = name if name.isupper() else re.sub(r"(?<!^)(?=[A-Z])", " ", name).upper()
    return words.strip() or "this statement"


def _check_clauses(root: str, nodes: list[_Node]) -> None:
    """INTO OUTFILE (a literal child of the root) writes a file; FORMAT would change our result format."""
    children = [n for n in nodes if n.depth == 1]
    if root.startswith(_SELECT_KINDS):
        extra = children[1:]
    else:
        extra = [n for n in children if n.label.startswith("Literal")]
        if root.startswith("Explain"):
            extra += [n for n in children if n.label.startswith("Identifier")]
            query = [n for n in children if not n.label.startswith(("Literal", "Identifier", "Set"))]
            if any(not n.label.startswith(_SELECT_KINDS) for n in query):
                raise ReadOnlyError(f"refused EXPLAIN of a statement that is not a SELECT: {READ_ONLY_HINT}")
    if extra:
        raise ReadOnlyError(
            "refused an INTO OUTFILE or FORMAT clause (use --format table|json|csv and redirect the output): "
            + READ_ONLY_HINT
        )


def _check_functions(nodes: list[_Node], table_functions: set[str]) -> None:
    forbidden = (table_functions - ALLOWED_TABLE_FUNCTIONS) | FORBIDDEN_FUNCTIONS
    for index, node in enumerate(nodes):
        match = _FUNCTION.match(node.label)
        if match is None:
            continue
        name = match.group(1).strip("`")
        parent = next((p for p in reversed(nodes[:index]) if p.depth < node.depth), None)
        as_table = parent is not None and parent.label.startswith("TableExpression")
        if name.lower() in forbidden or (as_table and name.lower() not in ALLOWED_TABLE_FUNCTIONS):
            raise ReadOnlyError(
                f"refused the function {name}(): it reads files, the network or the process "
                f"(table functions allowed: {', '.join(sorted(ALLOWED_TABLE_FUNCTIONS))}); " + READ_ONLY_HINT
            )


def _check_databases(nodes: list[_Node], outside: set[str]) -> None:
    """No identifier may name a database that reaches outside the warehouse (`db` or `db.table`)."""
    for node in nodes:
        match = _IDENTIFIER.match(node.label)
        if match is None:
            continue
        name = match.group(1).strip("`")
        if name in outside or name.split(".", 1)[0] in outside:
            raise ReadOnlyError(
                f"refused the database {name.split('.', 1)[0]}: its tables are files or other servers; "
                + READ_ONLY_HINT
            )

"""The documentation site is tested like code: it builds with --strict (broken links and anchors fail), its
reference pages cover every command, event and table, and every shell, Python and YAML example runs, is
checked, or says why it cannot be (an HTML comment `<!-- not run: REASON -->` just above the block)."""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from agenttwin.reference_docs import cli_reference, events_reference, sql_reference

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BLOCK = re.compile(
    r"(?:<!-- (?P<mark>[^>]*?) -->\n)?^```(?P<lang>bash|sh|shell|python|yaml)\n(?P<body>.*?)^```$", re.S | re.M
)
OURS = {"agenttwin", "streams", "producers", "evaluation", "consumers", "twin_engine"}
QUIET = {"NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}


@dataclass(frozen=True)
class Example:
    where: str
    lang: str
    body: str
    mark: str | None


def _examples() -> list[Example]:
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            line = text[: m.start("lang")].count("\n") + 1
            found.append(Example(f"{page.relative_to(ROOT)}:{line}", m["lang"], m["body"], m["mark"]))
    return found


EXAMPLES = _examples()


def test_the_site_builds_strict(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, **QUIET},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for page in ("reference/cli-commands", "reference/events", "reference/ddl", "concepts", "guides/production"):
        assert (tmp_path / "site" / page / "index.html").is_file(), page


def test_the_cli_reference_has_every_command_and_flag() -> None:
    from agenttwin.cli import _parser

    page = cli_reference()
    commands = next(a for a in _parser()._actions if a.__class__.__name__ == "_SubParsersAction").choices
    for name, parser in commands.items():
        assert f"## `agenttwin {name}" in page, name
        for action in parser._actions:
            for flag in action.option_strings:
                assert flag in page, f"{name} {flag}"


def test_the_events_reference_has_every_field_of_every_schema() -> None:
    page = events_reference()
    for path in (ROOT / "schemas" / "avro").glob("*.avsc"):
        schema = json.loads(path.read_text())
        assert f"## {schema['name']}" in page
        for field in schema["fields"]:
            assert f"| `{field['name']}` |" in page, f"{schema['name']}.{field['name']}"


def test_the_ddl_reference_has_every_table_and_view() -> None:
    page = sql_reference()
    for path in (ROOT / "schemas" / "clickhouse").glob("*.sql"):
        created = re.findall(r"^CREATE (?:OR REPLACE )?(?:TABLE|VIEW) (?:IF NOT EXISTS )?(\w+)", path.read_text(), re.M)
        for name in created:
            assert f"### `{name}`" in page, name


def test_there_are_examples_to_check() -> None:
    langs = {e.lang for e in EXAMPLES}
    assert {"bash", "python", "yaml"} <= langs


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.lang == "python"], ids=lambda e: e.where)
def test_python_examples_compile_and_import_what_exists(example: Example) -> None:
    """Snippets name the reader's own objects (their graph, their model), so they are compiled, and every
    AgentTwin name they import must exist: a moved module or a renamed function fails here."""
    tree = ast.parse(example.body, example.where, feature_version=(3, 11), type_comments=False)
    compile(example.body, example.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in OURS:
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name) or importlib.util.find_spec(f"{node.module}.{alias.name}"), (
                    f"{example.where}: {node.module}.{alias.name}"
                )


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.lang == "yaml"], ids=lambda e: e.where)
def test_yaml_examples_parse_and_whole_documents_load(example: Example, tmp_path: Path) -> None:
    documents = [d for d in yaml.safe_load_all(example.body) if d is not None]
    assert documents, example.where
    for document in documents:
        if isinstance(document, dict) and document.get("kind") == "GatePolicy":
            from agenttwin.release_gate import load_policy

            path = tmp_path / "policy.yaml"
            path.write_text(example.body)
            load_policy(str(path))


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.lang in {"bash", "sh", "shell"}], ids=lambda e: e.where)
def test_shell_examples_run_or_say_why(example: Example, tmp_path: Path) -> None:
    if example.mark is not None:
        assert re.match(r"not run: \S.{10,}", example.mark), f"{example.where}: say why it cannot run"
        return
    bin_dir = Path(sys.executable).parent  # the `agenttwin` of this environment
    env = {**os.environ, "AGENTTWIN_DATA_DIR": str(tmp_path / "data"), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", example.body],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{example.where}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"

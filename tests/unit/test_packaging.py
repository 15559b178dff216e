"""Every package folder is listed in pyproject.toml, so a wheel (not only an editable install) has it all."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOP = ("agenttwin", "twin_engine", "evaluation", "producers", "streams", "consumers", "schemas")


def _folders_with_files() -> set[str]:
    """Every folder under the top packages holding a file the installed package needs (code or data)."""
    return {
        ".".join(p.parent.relative_to(ROOT).parts)
        for top in TOP
        for p in (ROOT / top).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_every_package_and_data_folder_is_listed() -> None:
    # A data folder left out installs with a setuptools warning per folder (and not at all in a future setuptools).
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    assert _folders_with_files() == listed


def test_a_wheel_builds_without_warnings_and_holds_every_file(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "would be ignored" not in out.stdout + out.stderr
    (wheel,) = tmp_path.glob("agenttwin-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    wanted = {
        p.relative_to(ROOT).as_posix()
        for top in TOP
        for p in (ROOT / top).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert wanted - names == set()


def test_pure_layers_import_no_broker_or_warehouse_client() -> None:
    banned = ("confluent_kafka", "faust", "aiokafka", "chdb", "clickhouse_connect")
    # the processors are pure steps too: the embedded runtime and the Kafka workers run the same code
    for layer in ("twin_engine", "evaluation", "streams/processors"):
        for path in (ROOT / layer).rglob("*.py"):
            text = path.read_text()
            for name in banned:
                assert f"import {name}" not in text and f"from {name}" not in text, f"{path} imports {name}"

"""Every schema version that ever shipped stays readable: kept (current or old/) and compatible both ways.

"Shipped" = every version of `schemas/avro/*.avsc` in this checkout's git history. Compatibility is the
Avro library's own ReaderWriterCompatibilityChecker (streams.wire.check_backward_compatible), run in both
directions: the current schema reads every kept version (BACKWARD) and every kept version reads the
current one (FORWARD), so old and new producers and consumers can share a topic in any order.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fastavro.schema import parse_schema

from schemas import AVRO_DIR
from streams._avro_schemas import identify
from streams.wire import SchemaStore, check_backward_compatible, fingerprint_text

REPO = AVRO_DIR.parents[1]


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True).stdout


def shipped_versions() -> dict[str, Any]:
    """(commit:path) -> schema document, for every version of a top-level .avsc in git history."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the released versions come from its history")
    versions: dict[str, Any] = {}
    commits = _git("log", "--format=%H", "--", "schemas/avro/").split()
    for commit in commits:
        for line in _git("ls-tree", commit, "schemas/avro/").splitlines():
            path = line.split("\t", 1)[1]
            if path.endswith(".avsc"):
                versions[f"{commit[:12]}:{path}"] = json.loads(_git("show", f"{commit}:{path}"))
    return versions


def missing_versions(store: SchemaStore, versions: dict[str, Any]) -> list[str]:
    """The shipped versions the store cannot read (each with its fingerprint, in the one notation)."""
    missing = []
    for where, document in sorted(versions.items()):
        schema = identify(parse_schema(document, named_schemas={}), None)
        if store.writer(schema.fingerprint) is None:
            missing.append(f"{where} ({schema.name}, fingerprint {fingerprint_text(schema.fingerprint)})")
    return missing


def incompatibilities(store: SchemaStore) -> list[str]:
    """Every kept version that the current one cannot read, or that cannot read the current one."""
    problems = []
    for name in store.names():
        current, *older = store.versions(name)
        for old in older:
            fp = fingerprint_text(old.fingerprint)
            for direction, reader, writer in (("backward", current, old), ("forward", old, current)):
                for problem in check_backward_compatible(reader.parsed, writer.parsed):
                    problems.append(f"{name} {fp} ({old.source}): not {direction} compatible: {problem}")
    return problems


def test_every_shipped_schema_version_is_kept() -> None:
    versions = shipped_versions()
    assert len(versions) >= 13  # every event type's first version at least
    missing = missing_versions(SchemaStore.from_directory(AVRO_DIR), versions)
    assert missing == [], (
        "schema versions in git history that schemas/avro/ (current or old/) no longer holds; copy each "
        "into schemas/avro/old/<name>.vN.avsc:\n" + "\n".join(missing)
    )


def test_the_first_contradiction_detected_schema_is_readable() -> None:
    store = SchemaStore.from_directory(AVRO_DIR)
    names = [
        (fingerprint_text(v.fingerprint), v.source.name if v.source else None)
        for v in store.versions("dev.agenttwin.events.ContradictionDetected")
    ]
    assert ("29279538014cf2d5", "contradiction_detected.v1.avsc") in names


def test_every_kept_version_is_compatible_both_ways_with_the_current() -> None:
    store = SchemaStore.from_directory(AVRO_DIR)
    assert len([s for n in store.names() for s in store.versions(n)]) > len(store.names())  # some old ones
    assert incompatibilities(store) == []


# --- the checks themselves fail when they should (red first) ---------------------------------------------


def _copy_schemas(tmp_path: Path) -> Path:
    target = tmp_path / "avro"
    shutil.copytree(AVRO_DIR, target)
    return target


def test_a_changed_schema_without_its_predecessor_is_reported(tmp_path: Path) -> None:
    avro = _copy_schemas(tmp_path)
    path = avro / "human_reviewed.avsc"
    before = json.loads(path.read_text())
    after = {**before, "fields": [*before["fields"], {"name": "ticket", "type": ["null", "string"], "default": None}]}
    path.write_text(json.dumps(after))
    changed = SchemaStore.from_directory(avro)
    missing = missing_versions(changed, {"HEAD:schemas/avro/human_reviewed.avsc": before})
    assert len(missing) == 1
    assert "dev.agenttwin.events.HumanReviewed" in missing[0]
    # keeping the predecessor in old/ is the fix
    (avro / "old" / "human_reviewed.v1.avsc").write_text(json.dumps(before))
    assert missing_versions(SchemaStore.from_directory(avro), {"HEAD:x": before}) == []
    assert incompatibilities(SchemaStore.from_directory(avro)) == []


def test_a_kept_version_that_is_not_compatible_both_ways_is_reported(tmp_path: Path) -> None:
    avro = _copy_schemas(tmp_path)
    path = avro / "human_reviewed.avsc"
    before = json.loads(path.read_text())
    (avro / "old" / "human_reviewed.v1.avsc").write_text(json.dumps(before))
    # a new field without a default: the new schema cannot read old records (not backward compatible)
    path.write_text(json.dumps({**before, "fields": [*before["fields"], {"name": "ticket", "type": "string"}]}))
    problems = incompatibilities(SchemaStore.from_directory(avro))
    assert any("not backward compatible" in p and "ticket" in p for p in problems), problems
    # a removed field without a default: old readers cannot read new records (not forward compatible)
    path.write_text(json.dumps({**before, "fields": [f for f in before["fields"] if f["name"] != "note"]}))
    problems = incompatibilities(SchemaStore.from_directory(avro))
    assert any("not forward compatible" in p and "note" in p for p in problems), problems

"""Durable file operations of the embedded log: atomic creation, quarantine, and the repair's swap.

A repair replaces a topic's container and index together. It stages both as `<topic>.avro.repair`
and `<topic>.idx.repair` (fsynced), then creates `<topic>.repair-commit` — the commit point — and
renames the staged files into place. The next writer that opens the topic finishes a swap whose
commit marker exists and deletes staged files whose marker does not (the originals are untouched).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

QUARANTINE_DIR = "quarantine"
_STAGED = (".avro", ".idx")
_SEQ = re.compile(r"^(\d{6})-")


@dataclass(frozen=True)
class Quarantined:
    """Bytes moved out of a topic file into `<log dir>/quarantine/`: never deleted."""

    topic: str
    path: Path
    kind: str  # "damaged" (a damaged block), "torn" (an unacknowledged tail), "header" (a damaged container header)
    position: int  # where the bytes were in the topic file
    size: int
    first_offset: int  # the first offset the bytes held (their offsets stay taken)
    count: int | None  # records they held; None when no checksum or framing says
    reason: str


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durably(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Write a whole file atomically: a temporary file, fsynced, renamed into place, its directory fsynced."""
    tmp = path.with_name(f".{path.name}.tmp")
    _write(tmp, data, fsync=fsync)
    os.replace(tmp, path)
    if fsync:
        fsync_dir(path.parent)


def _write(path: Path, data: bytes, *, fsync: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def quarantine(
    log_dir: Path,
    topic: str,
    data: bytes,
    *,
    kind: str,
    position: int,
    first_offset: int,
    count: int | None,
    reason: str,
) -> Quarantined:
    """Keep `data` as `quarantine/<seq>-<topic>.bin` (+ `.json` saying what it was), durably, before any cut."""
    directory = log_dir / QUARANTINE_DIR
    directory.mkdir(exist_ok=True)
    taken = [int(m.group(1)) for p in directory.iterdir() if (m := _SEQ.match(p.name))]
    stem = f"{max(taken, default=0) + 1:06d}-{topic}"
    path = directory / f"{stem}.bin"
    item = Quarantined(topic, path, kind, position, len(data), first_offset, count, reason)
    meta = {
        "topic": topic,
        "kind": kind,
        "position": position,
        "size": len(data),
        "first_offset": first_offset,
        "count": count,
        "reason": reason,
    }
    _write(path, data, fsync=True)
    _write(directory / f"{stem}.json", (json.dumps(meta, sort_keys=True, indent=1) + "\n").encode(), fsync=True)
    fsync_dir(directory)
    return item


def _staged(topic_dir: Path, name: str, suffix: str) -> Path:
    return topic_dir / f"{name}{suffix}.repair"


def _marker(topic_dir: Path, name: str) -> Path:
    return topic_dir / f"{name}.repair-commit"


def stage_replace(topic_dir: Path, name: str, container: bytes, index: bytes) -> None:
    """Write the repaired files beside the originals and pass the commit point."""
    _write(_staged(topic_dir, name, ".avro"), container, fsync=True)
    _write(_staged(topic_dir, name, ".idx"), index, fsync=True)
    _write(_marker(topic_dir, name), b"", fsync=True)
    fsync_dir(topic_dir)


def complete_replace(topic_dir: Path, name: str) -> None:
    """Move the staged files into place (idempotent: a crash in here is finished by recover_replace)."""
    for suffix in _STAGED:
        staged = _staged(topic_dir, name, suffix)
        if staged.exists():
            os.replace(staged, topic_dir / f"{name}{suffix}")
    fsync_dir(topic_dir)
    _marker(topic_dir, name).unlink()
    fsync_dir(topic_dir)


def replace_pending(topic_dir: Path, name: str) -> bool:
    return _marker(topic_dir, name).exists() or any(_staged(topic_dir, name, s).exists() for s in _STAGED)


def recover_replace(topic_dir: Path, name: str) -> None:
    """Finish a repair that passed its commit point; drop one that did not."""
    if _marker(topic_dir, name).exists():
        complete_replace(topic_dir, name)
        return
    for suffix in _STAGED:
        _staged(topic_dir, name, suffix).unlink(missing_ok=True)

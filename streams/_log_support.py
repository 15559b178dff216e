"""Support for the embedded log: its errors, name rules, the directory lock and group offsets."""

from __future__ import annotations

import fcntl
import json
import os
import re
from pathlib import Path

from streams._errors import StreamsError

_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


class EventLogError(StreamsError):
    """Misuse of the log or an unreadable data directory."""


class LogLockedError(EventLogError):
    """Another process (or another EmbeddedLog in this one) holds the data directory."""


def check_name(kind: str, name: str) -> None:
    """Topic and group names become file names: Kafka's character set, never a path."""
    if not _NAME.match(name) or name in (".", ".."):
        raise EventLogError(f"invalid {kind} name {name!r}: use 1-249 of [A-Za-z0-9._-]")


def acquire_lock(data_dir: Path) -> int:
    """flock `<data_dir>/LOCK` exclusively; returns the descriptor (closing it releases the lock)."""
    path = data_dir / "LOCK"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        raise LogLockedError(
            f"{data_dir} is already open for writing (lock {path} held by pid {holder}); "
            "one process owns an embedded log directory"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


class GroupOffsets:
    """Committed offsets, one JSON file per consumer group, replaced atomically on each commit."""

    def __init__(self, directory: Path, *, fsync: bool, cache: bool) -> None:
        self._directory = directory
        self._fsync = fsync
        self._cache = cache  # False for a read-only view: the writer may commit at any time
        self._groups: dict[str, dict[str, int]] = {}

    def get(self, group: str, topic: str) -> int:
        return self._load(group).get(topic, 0)

    def put(self, group: str, topic: str, offset: int) -> None:
        offsets = {**self._load(group), topic: offset}
        path = self._directory / f"{group}.json"
        tmp = path.with_name(f".{group}.json.tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(offsets, sort_keys=True, indent=1) + "\n")
            handle.flush()
            if self._fsync:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
        self._groups[group] = offsets

    def _load(self, group: str) -> dict[str, int]:
        check_name("group", group)
        if group in self._groups and self._cache:
            return self._groups[group]
        path = self._directory / f"{group}.json"
        try:
            loaded = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        except (OSError, json.JSONDecodeError) as exc:
            raise EventLogError(f"{path}: unreadable committed offsets: {exc}") from exc
        if not isinstance(loaded, dict) or not all(isinstance(v, int) for v in loaded.values()):
            raise EventLogError(f"{path}: committed offsets must be an object of integers")
        self._groups[group] = loaded
        return loaded

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


class LogDamagedError(EventLogError):
    """A topic file, its index or a group's offsets are damaged: the message is one line that says what to run."""


RUNTIME_LOG_DIR = "topics-log"  # where EmbeddedRuntime(data_dir) keeps its log


def cli_data_dir(log_dir: Path) -> Path:
    """The `--data-dir` the CLI takes for a log directory (the runtime keeps its log one level down)."""
    return log_dir.parent if log_dir.name == RUNTIME_LOG_DIR else log_dir


def repair_hint(log_dir: Path) -> str:
    data_dir = cli_data_dir(log_dir)
    return (
        f"run `agenttwin log repair --data-dir {data_dir}` (damaged bytes go to quarantine, every valid block "
        f"keeps its offsets; `agenttwin log verify --data-dir {data_dir}` lists the damage)"
    )


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
            loaded = read_offsets(path)
        except ValueError as exc:
            data_dir = cli_data_dir(self._directory.parent)
            raise LogDamagedError(
                f"{path}: committed offsets of group {group} are damaged ({exc}); run `agenttwin log repair "
                f"--data-dir {data_dir}` to set them aside (the group starts again from offset 0; its consumers "
                "are idempotent)"
            ) from None
        self._groups[group] = loaded
        return loaded


def read_offsets(path: Path) -> dict[str, int]:
    """A group's offsets file ({} if there is none); ValueError says what is wrong with a damaged one."""
    if not path.exists():
        return {}
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(" ".join(str(exc).split())) from None
    if not isinstance(loaded, dict) or not all(
        isinstance(k, str) and type(v) is int and v >= 0 for k, v in loaded.items()
    ):
        raise ValueError("not an object of topic -> non-negative integer offset")
    return loaded

"""Folders a worker process owns under a shared data dir, and removing those whose owner is gone.

Folder `<parent>/<name>/` is owned while a process holds an exclusive flock on `<parent>/<name>.lock`; the
kernel drops the lock when the process ends, however it ends (SIGKILL, the OOM killer). A clean stop removes
both; a starting worker `sweep`s the folders whose lock nobody holds, so a killed worker's store files (its
whole join state on disk) do not pile up. A lock file is only removed by whoever holds its lock, and a taker
checks that the file it locked is still the one at the path (else it was removed meanwhile: take again).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

LOCK_SUFFIX = ".lock"


class OwnedFolder:
    """`<parent>/<name>/`, held by this process until `release`."""

    _fd: int | None

    def __init__(self, parent: Path, name: str) -> None:
        parent.mkdir(parents=True, exist_ok=True)
        self.path = parent / name
        self._lock_path = parent / (name + LOCK_SUFFIX)
        # waits if a sweeper saw the new lock file first: it removes the file, then a new one is taken
        self._fd = _take(self._lock_path, create=True, wait=True)
        if self._fd is None:
            raise RuntimeError(f"could not lock {self._lock_path}")
        self.path.mkdir(exist_ok=True)

    def release(self) -> None:
        if self._fd is None:
            return
        shutil.rmtree(self.path, ignore_errors=True)
        self._lock_path.unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = None


def sweep(parent: Path) -> list[Path]:
    """Remove the folders under `parent` whose owner is gone; returns them."""
    removed = []
    for lock in sorted(parent.glob("*" + LOCK_SUFFIX)) if parent.is_dir() else []:
        fd = _take(lock, create=False, wait=False)
        if fd is None:  # held: its owner runs (or the file is gone already)
            continue
        try:
            folder = lock.with_name(lock.name.removesuffix(LOCK_SUFFIX))
            shutil.rmtree(folder, ignore_errors=True)
            lock.unlink(missing_ok=True)
            removed.append(folder)
        finally:
            os.close(fd)
    return removed


def _take(path: Path, *, create: bool, wait: bool) -> int | None:
    """A descriptor holding the exclusive lock on the file now at `path`; None if another process holds it
    (without `wait`) or there is no file (without `create`)."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o644)
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)  # removed (or replaced) between open and lock
        if not create:
            return None

"""A worker's store folder is its own while it runs; a starting worker removes the folders of workers that
were killed (their lock is gone with them) and never one whose owner runs."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from streams.kafka.owned_folders import LOCK_SUFFIX, OwnedFolder, sweep

_HOLD = """
import sys, time
from pathlib import Path
from streams.kafka.owned_folders import OwnedFolder
folder = OwnedFolder(Path(sys.argv[1]), sys.argv[2])
(folder.path / "p0.sqlite").write_bytes(b"state")
print("held", flush=True)
time.sleep(600)
"""


def _holder(parent: Path, name: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(parent), name], stdout=subprocess.PIPE, text=True, cwd=Path.cwd()
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_the_folders_of_killed_workers_are_swept_and_live_ones_kept(tmp_path: Path) -> None:
    killed, running = _holder(tmp_path, "w-killed"), _holder(tmp_path, "w-running")
    try:
        killed.send_signal(signal.SIGKILL)
        killed.wait(30)
        mine = OwnedFolder(tmp_path, "w-mine")
        assert sweep(tmp_path) == [tmp_path / "w-killed"]
        assert not (tmp_path / "w-killed").exists() and not (tmp_path / f"w-killed{LOCK_SUFFIX}").exists()
        assert (tmp_path / "w-running" / "p0.sqlite").exists() and mine.path.is_dir()
        mine.release()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["w-running", f"w-running{LOCK_SUFFIX}"]
    finally:
        for proc in (killed, running):
            if proc.poll() is None:
                proc.kill()
            proc.wait(30)
            if proc.stdout is not None:
                proc.stdout.close()


def test_a_folder_released_cleanly_leaves_nothing(tmp_path: Path) -> None:
    folder = OwnedFolder(tmp_path, "w")
    (folder.path / "p1.sqlite").write_bytes(b"x")
    folder.release()
    folder.release()  # twice is harmless
    assert list(tmp_path.iterdir()) == [] and sweep(tmp_path) == []
    assert sweep(tmp_path / "absent") == []

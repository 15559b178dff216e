"""What every benchmark records beside its figures: when, on which commit, how loaded the machine was.

`write(name, figures)` writes `benchmarks/results/<name>-<UTC time>.json` (sorted keys, with the command
that ran) and returns its path, so figures can be compared across commits; then docs/performance.md is
rendered again from every results file (benchmarks/render_results.py). `loadavg()` is printed beside every
figure.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def loadavg() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def _commit() -> str:
    try:
        git = ["git", "-C", str(RESULTS.parent)]
        out = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)  # noqa: S603
        dirty = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True, check=False)  # noqa: S603
        return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def command() -> str:
    """How this benchmark was started, with the script's path from the checkout's root."""
    script = Path(sys.argv[0]).resolve()
    try:
        shown = str(script.relative_to(RESULTS.parent.parent))
    except ValueError:
        shown = sys.argv[0]
    return " ".join(["python", shown, *sys.argv[1:]])


def write(name: str, figures: dict[str, Any], *, load_at_start: str) -> Path:
    if str(HERE) not in sys.path:  # run as `python -m benchmarks.NAME`: benchmarks/ is not on the path
        sys.path.insert(0, str(HERE))
    import render_results

    now = datetime.now(UTC)
    doc = {
        "benchmark": name,
        "command": command(),
        "at": now.isoformat(timespec="seconds"),
        "commit": _commit(),
        "python": sys.version.split()[0],
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "loadavg": {"start": load_at_start, "end": loadavg()},
        "figures": figures,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}-{now.strftime('%Y%m%dT%H%M%SZ')}.json"
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    render_results.write()
    return path

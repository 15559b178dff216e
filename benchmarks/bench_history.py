"""Does the cost of a command follow its own work or the history before it? 50 `evaluate` calls on one data dir.

    python benchmarks/bench_history.py [--calls 50]

Each call is `agenttwin evaluate --json` in a process of its own, as a user or CI runs it (start, open
the data directory, plan, simulate, grade, compare, join, project into chDB, read the report back), on the
demo suite with a new seed each time, so every call adds one evaluation of the same size (18 cases).
Prints the wall time and the CPU time (user + system of the process) of calls 1, 10, 25 and 50 (and the
mean of the first and last three), the ratio of the last to the first (target: at most 1.25), and beside
them, as the same-run baseline, one more call that rebuilds every stateful processor from offset 0 (what
each call did before checkpoints).

The machines are shared and noisy: the load average is printed with every figure. Not a timed test.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _results

PAIRS = (("demo:1.2.4", "demo:1.3.0"), ("demo:1.3.0", "demo:1.3.1"), ("demo:1.2.4", "demo:1.3.1"))
SHOWN = (1, 10, 25, 50)
# The baseline call: the same CLI with every stateful processor rebuilt from offset 0 on open.
REBUILDING = (
    "import functools, sys\n"
    "from agenttwin import pipeline_commands\n"
    "from agenttwin.pipeline import open_embedded\n"
    "pipeline_commands.open_embedded = functools.partial(open_embedded, checkpoints=False)\n"
    "from agenttwin.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _evaluate(data_dir: Path, n: int, *, rebuild: bool = False) -> tuple[float, float, str]:
    baseline, candidate = PAIRS[n % len(PAIRS)]
    argv = ["evaluate", "--baseline", baseline, "--candidate", candidate, "--seed", str(1000 + n)]
    argv += ["--json", "--data-dir", str(data_dir)]
    command = [sys.executable, "-c", REBUILDING, *argv] if rebuild else [sys.executable, "-m", "agenttwin.cli", *argv]
    load = _results.loadavg()
    wall, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)  # noqa: S603
    if done.returncode != 0:
        raise SystemExit(f"evaluate call {n + 1} exited {done.returncode}: {done.stderr[-2000:]}")
    return time.perf_counter() - wall, _children_cpu() - cpu, load


def main_(calls: int) -> None:
    start_load = _results.loadavg()
    per_call: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="agenttwin-history-") as tmp:
        data_dir = Path(tmp)
        for n in range(calls):
            wall, cpu, load = _evaluate(data_dir, n)
            per_call.append({"call": n + 1, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "loadavg": load})
            print(f"call {n + 1:3d}: wall {wall:6.2f} s  cpu {cpu:6.2f} s   (load {load})", flush=True)
        # Baseline: the same command once more, with every stateful processor rebuilt from offset 0.
        rebuild_wall, rebuild_cpu, rebuild_load = _evaluate(data_dir, calls, rebuild=True)

    def at(k: int, what: str) -> float:
        return float(per_call[k - 1][what]) if k <= len(per_call) else float("nan")

    first = statistics.mean(c["cpu_s"] for c in per_call[:3])
    last = statistics.mean(c["cpu_s"] for c in per_call[-3:])
    first_wall = statistics.mean(c["wall_s"] for c in per_call[:3])
    last_wall = statistics.mean(c["wall_s"] for c in per_call[-3:])
    print()
    print(f"history: {calls} evaluate calls on one data directory (18 cases each)   load {_results.loadavg()}")
    for k in SHOWN:
        if k <= calls:
            print(f"  call {k:3d}: wall {at(k, 'wall_s'):6.2f} s   cpu {at(k, 'cpu_s'):6.2f} s")
    ratio_cpu, ratio_wall = at(calls, "cpu_s") / at(1, "cpu_s"), at(calls, "wall_s") / at(1, "wall_s")
    print(f"  call {calls} / call 1: cpu {ratio_cpu:.2f}x  wall {ratio_wall:.2f}x   (target <= 1.25x)")
    print(f"  mean of the last 3 / first 3: cpu {last / first:.2f}x  wall {last_wall / first_wall:.2f}x")
    print(
        f"baseline: call {calls + 1} rebuilding every stateful processor from offset 0: "
        f"wall {rebuild_wall:.2f} s  cpu {rebuild_cpu:.2f} s   (load {rebuild_load})"
    )
    path = _results.write(
        "bench_history",
        {
            "calls": per_call,
            "shown": {str(k): {"wall_s": at(k, "wall_s"), "cpu_s": at(k, "cpu_s")} for k in SHOWN if k <= calls},
            "ratio_last_to_first": {"cpu": round(ratio_cpu, 3), "wall": round(ratio_wall, 3)},
            "ratio_mean_last3_to_first3": {"cpu": round(last / first, 3), "wall": round(last_wall / first_wall, 3)},
            "target_ratio": 1.25,
            "baseline_rebuild_from_0": {
                "call": calls + 1,
                "wall_s": round(rebuild_wall, 3),
                "cpu_s": round(rebuild_cpu, 3),
                "loadavg": rebuild_load,
            },
        },
        load_at_start=start_load,
    )
    print(f"results: {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50, help="evaluate calls on one data directory")
    main_(parser.parse_args().calls)

"""The twin call budget's worst case: each pathological twin call of issue 27, one fresh process per case.

Each case is one call of a tool whose handler is written to cost as much as its arguments allow (arguments
within the agent's limits: 1,000-id lists, texts up to 200 KB). For each: the call's answer, its wall time,
the process's peak RSS and what the same process held before the call (so the call's own memory shows),
and the size of its call record. `--source DIR` runs the cases against another checkout (e.g. main before
the budget, with `--timeout` to stop the cases that do not end). Results: benchmarks/results/.

    python -m benchmarks.bench_twin_budget [--only NAME] [--source /path/to/checkout] [--timeout 60]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._results import loadavg, write

IDS = [f"id-{i:05d}" for i in range(1000)]
LISTS = {"type": "object"}


def _loop(items: str, name: str, index: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"forEach": items, "as": name, "index": index, **body}


CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # name: (handler, arguments)
    "pairwise forEach, effects (1,000 x 1,000 ids)": (
        {
            "kind": "mutate",
            "effects": [
                _loop(
                    "args.a",
                    "x",
                    "i",
                    {
                        "effects": [
                            _loop(
                                "args.b",
                                "y",
                                "j",
                                {"effects": [{"op": "set", "path": "p.{vars.x}", "value": "{vars.y}"}]},
                            )
                        ]
                    },
                )
            ],
        },
        {"a": IDS, "b": IDS},
    ),
    "pairwise forEach, expression check (1,000 x 1,000 ids)": (
        {
            "kind": "mutate",
            "preconditions": [
                _loop(
                    "args.a",
                    "x",
                    "i",
                    {"preconditions": [_loop("args.b", "y", "j", {"preconditions": [{"expr": "x != y || true"}]})]},
                )
            ],
            "effects": [{"op": "set", "path": "done", "value": True}],
        },
        {"a": IDS, "b": IDS},
    ),
    "nested comprehensions (1,000^3)": (
        {"kind": "static", "response": {"n": {"$expr": "size(args.a.map(x, args.a.map(y, args.a)))"}}},
        {"a": IDS},
    ),
    "text repetition by join (1,000 x 200 KB)": (
        {"kind": "static", "response": {"n": {"$expr": "size(args.a.map(x, args.s).join(''))"}}},
        {"a": IDS, "s": "x" * 200_000},
    ),
    "text repetition by replace (100 K x 100 K)": (
        {"kind": "static", "response": {"n": {"$expr": "size(args.s.replace('a', args.t))"}}},
        {"s": "a" * 100_000, "t": "b" * 100_000},
    ),
    "concatenation in a comprehension (1,000 x 2 x 100 KB)": (
        {"kind": "static", "response": {"n": {"$expr": "size(args.a.map(x, args.s + args.s))"}}},
        {"a": IDS, "s": "y" * 100_000},
    ),
    "one list shared 1,000 times (result)": (
        {"kind": "static", "response": {"v": {"$expr": "args.a.map(x, args.a)"}}},
        {"a": IDS},
    ),
    "1,000 appends of the argument list (record growth)": (
        {
            "kind": "mutate",
            "effects": [
                _loop(
                    "args.a",
                    "item",
                    "index",
                    {"effects": [{"op": "append", "path": "log", "value": {"$expr": "args.a"}}]},
                )
            ],
        },
        {"a": IDS},
    ),
}

CHILD = """
import json, resource, sys, time
from twin_engine import Twin
from twin_engine.canonical import canonical_json
from twin_engine.case import new_case
handler, arguments = json.loads(sys.stdin.read())
doc = {"apiVersion": "agenttwin.dev/v1", "kind": "TwinDefinition", "metadata": {"name": "bench"},
       "spec": {"initialState": {"p": {}, "log": []}, "tools": {"t": {"handler": handler}}}}
case = new_case(Twin.from_definition(doc))
case.call("t", {"a": ["warm"], "b": ["up"], "s": "a", "t": "b"})  # imports, caches
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
reply = case.call("t", arguments)
seconds = time.perf_counter() - started
print(json.dumps({
    "seconds": round(seconds, 3),
    "rss_before_mib": round(before / 1024, 1),
    "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    "status": reply.http_status,
    "code": reply.record.error_code,
    "record_bytes": len(canonical_json(reply.record.to_dict())),
}))
"""


def run_case(name: str, source: Path, timeout: float) -> dict[str, Any]:
    handler, arguments = CASES[name]
    started = time.perf_counter()
    try:
        done = subprocess.run(  # noqa: S603 - our own interpreter and script
            [sys.executable, "-c", CHILD],
            input=json.dumps([handler, arguments]),
            capture_output=True,
            text=True,
            cwd=source,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"stopped_after_s": timeout, "status": None}
    if done.returncode != 0:
        return {"failed": done.stderr.strip().splitlines()[-1:], "wall_s": round(time.perf_counter() - started, 1)}
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", help="run the cases whose name contains this")
    parser.add_argument("--source", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a case is stopped")
    args = parser.parse_args()
    load = loadavg()
    results: dict[str, Any] = {}
    for name in CASES:
        if args.only and args.only not in name:
            continue
        results[name] = run_case(name, args.source.resolve(), args.timeout)
        print(f"{name}: {json.dumps(results[name])}  (load {loadavg()})", flush=True)
    path = write("twin_budget", {"source": str(args.source), "cases": results}, load_at_start=load)
    print(f"written {path}")


if __name__ == "__main__":
    main()

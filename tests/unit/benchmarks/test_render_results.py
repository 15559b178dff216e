"""docs/performance.md is what benchmarks/render_results.py makes of benchmarks/results/*.json (never edited by
hand, never behind the files), and the renderer shows, per benchmark, the quietest run beside the latest with
command, load, figure, baseline and ratio."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks import render_results

ROOT = Path(__file__).resolve().parents[3]


def test_the_performance_page_is_rendered_from_the_results_files() -> None:
    page = ROOT / "docs" / "performance.md"
    assert page.exists(), "run: python benchmarks/render_results.py"
    assert page.read_text(encoding="utf-8") == render_results.render(ROOT / "benchmarks" / "results"), (
        "docs/performance.md is out of date with benchmarks/results/: run python benchmarks/render_results.py"
    )


def _result(tmp: Path, at: str, load: tuple[str, str], spans_per_s: float, ok: bool = True) -> None:
    doc: dict[str, Any] = {
        "benchmark": "bench_soak_embedded",
        "at": at,
        "command": "python benchmarks/bench_soak.py --minutes 2 --rate 3000",
        "commit": "abc1234",
        "python": "3.11.7",
        "machine": {"cpus": 2, "platform": "Linux"},
        "loadavg": {"start": load[0], "end": load[1]},
        "figures": {
            "spans_per_s": spans_per_s,
            "baseline_spans_per_s": 50_000.0,
            "baseline": "protobuf decode + append",
            "ratio": spans_per_s / 50_000.0,
            "alert_latency_ms": {"p50": 80.0, "p99": 230.0},
            "alerts": {"lost": 0, "duplicated": 0},
            "last_over_first": 0.95,
            "ok": ok,
        },
    }
    name = f"bench_soak_embedded-{at.replace(':', '').replace('-', '')[:15]}Z.json"
    (tmp / name).write_text(json.dumps(doc), encoding="utf-8")


def test_the_quietest_run_is_shown_beside_the_latest(tmp_path: Path) -> None:
    _result(tmp_path, "2026-12-03T14:55:00+00:00", ("0.40 0.50 0.60", "1.30 0.70 0.60"), 2_244.0)
    _result(tmp_path, "2026-12-03T16:00:00+00:00", ("7.70 8.00 8.10", "8.00 8.00 8.10"), 1_229.0, ok=False)
    _result(tmp_path, "2026-12-03T12:00:00+00:00", ("3.60 3.00 3.00", "4.00 3.00 3.00"), 1_725.0)
    page = render_results.render(tmp_path)
    summary = page.split("## Every run")[0]
    rows = [line for line in summary.splitlines() if line.startswith("| `bench_soak_embedded`")]
    assert len(rows) == 2
    quietest, latest = rows
    assert "quietest: 2026-12-03 14:55 UTC" in quietest
    assert "idle, load 0.40 → 1.30 (2 cores)" in quietest
    assert "2,244 spans/s" in quietest
    assert "50,000 spans/s (protobuf decode + append)" in quietest
    assert quietest.endswith("| 0.04 |")
    assert "`python benchmarks/bench_soak.py --minutes 2 --rate 3000`" in quietest
    assert "latest: 2026-12-03 16:00 UTC" in latest
    assert "loaded, load 7.70 → 8.00" in latest
    assert "1,229 spans/s" in latest
    assert "(FAILED)" in latest
    assert "1,725" not in summary  # neither quietest nor latest
    every = page.split("## Every run")[1]
    assert every.count("| `bench_soak_embedded`") == 3
    assert render_results.render(tmp_path) == page  # the same files, the same page


def test_a_run_without_a_recorded_command_says_so(tmp_path: Path) -> None:
    _result(tmp_path, "2026-12-03T14:55:00+00:00", ("0.40 0.50 0.60", "1.30 0.70 0.60"), 2_244.0)
    path = next(tmp_path.glob("*.json"))
    doc = json.loads(path.read_text(encoding="utf-8"))
    del doc["command"]
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert "`python benchmarks/bench_soak.py (arguments not recorded)`" in render_results.render(tmp_path)

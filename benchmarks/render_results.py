"""docs/performance.md from the benchmarks' JSON results (benchmarks/results/), never edited by hand.

Every benchmark writes its figures there (benchmarks/_results.py) and then calls this, so the page follows
the files; `python benchmarks/render_results.py` writes it again, `--check` exits 1 when it is out of date
(a unit test does the same). For each benchmark: its quietest run (lowest load average at its start) beside
its latest, each with the command, commit, load average, figure, same-run baseline and ratio; then every run.
A run is *idle* when the 1-minute load average stayed below the machine's core count from start to end.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
PAGE = HERE.parent / "docs" / "performance.md"
SCRIPTS = {"bench_soak_embedded": "bench_soak", "bench_soak_kafka": "bench_soak"}


@dataclass(frozen=True)
class Run:
    benchmark: str
    at: str
    commit: str
    command: str
    load_start: str
    load_end: str
    cpus: int
    figures: dict[str, Any]
    file: str

    @property
    def load_1min(self) -> tuple[float, float]:
        return float(self.load_start.split()[0]), float(self.load_end.split()[0])

    @property
    def machine(self) -> str:
        start, end = self.load_1min
        state = "idle" if max(start, end) < self.cpus else "loaded"
        return f"{state}, load {start:.2f} → {end:.2f} ({self.cpus} cores)"


def _run(path: Path) -> Run:
    doc = json.loads(path.read_text(encoding="utf-8"))
    name = doc["benchmark"]
    script = SCRIPTS.get(name, name)
    return Run(
        benchmark=name,
        at=doc["at"],
        commit=doc.get("commit", "unknown"),
        command=doc.get("command") or f"python benchmarks/{script}.py (arguments not recorded)",
        load_start=doc["loadavg"]["start"],
        load_end=doc["loadavg"]["end"],
        cpus=int(doc.get("machine", {}).get("cpus") or 1),
        figures=doc["figures"],
        file=path.name,
    )


def _n(value: Any, digits: int = 0) -> str:
    if not isinstance(value, int | float) or math.isnan(value):
        return "—"
    return f"{value:,.{digits}f}"


def _alerts(f: dict[str, Any]) -> str:
    latency = f.get("alert_latency_ms") or {}
    alerts = f.get("alerts") or {}
    text = f"alert p50 {_n(latency.get('p50'))} ms, p99 {_n(latency.get('p99'))} ms"
    text += f"; alerts lost {alerts.get('lost', '—')}, duplicated {alerts.get('duplicated', '—')}"
    return text


def _ingest(f: dict[str, Any]) -> tuple[str, str, str]:
    figure = f"{_n(f.get('spans_per_s'))} spans/s; {_alerts(f)}"
    if "last_over_first" in f and len(f.get("intervals") or [None, None]) > 1:  # one interval: no trend
        figure += f"; last/first interval {_n(f['last_over_first'], 2)}"
    for process, rss in sorted((f.get("rss_mb") or {}).items()):  # memory kept for the horizon shows here
        if isinstance(rss, dict) and "first" in rss and "last" in rss:
            figure += f"; RSS {process} {_n(rss['first'])} → {_n(rss['last'])} MB"
    baseline = f.get("baseline_spans_per_s", f.get("baseline_raw_append_spans_per_s"))
    what = f.get("baseline", "protobuf decode + append of the span bytes")
    verdict = "" if f.get("ok", True) else " (FAILED)"
    return figure + verdict, f"{_n(baseline)} spans/s ({what})", _n(f.get("ratio"), 2)


def _pipeline(f: dict[str, Any]) -> tuple[str, str, str]:
    figure = f"pipeline {_n(f['pipeline']['events_per_s'])} events/s; chDB sink {_n(f['sink']['rows_per_s'])} rows/s"
    baseline = (
        f"fastavro decode {_n(f['baseline_fastavro_c_decode']['events_per_s'])} events/s; "
        f"one bulk insert {_n(f['baseline_bulk_insert']['rows_per_s'])} rows/s"
    )
    return figure, baseline, f"{_n(f['pipeline_ratio'], 3)} / {_n(f['sink_ratio'], 2)}"


def _history(f: dict[str, Any]) -> tuple[str, str, str]:
    cpu = f["ratio_last_to_first"]["cpu"]
    figure = f"CPU of call {len(f['calls'])} / call 1 = {_n(cpu, 2)} (target ≤ {f.get('target_ratio', '—')})"
    rebuild = f["baseline_rebuild_from_0"]
    return figure, f"one call rebuilding from offset 0: {_n(rebuild.get('cpu_s'), 2)} s CPU", _n(cpu, 2)


def _kafka(f: dict[str, Any]) -> tuple[str, str, str]:
    figure = f"{_n(f['end_to_end_events_per_s'])} events/s end to end ({f.get('events', '—')} events)"
    return figure, f"{_n(f['raw_events_per_s'])} events/s raw", _n(f.get("ratio"), 2)


def _peer(f: dict[str, Any]) -> tuple[str, str, str]:
    offered = (f.get("generator") or {}).get("offered_spans_per_s")
    figure = (
        f"agenttwin ingest --kafka {_n(f['spans_per_s'])} spans/s acknowledged and on the topic"
        + (f" ({_n(offered)} offered)" if offered else "")
        + f"; per CPU second {_n(f.get('ratio_per_cpu_s'), 2)} of the collector's"
    )
    verdict = "" if f.get("ok", True) else " (FAILED)"
    return figure + verdict, f"{_n(f['baseline_spans_per_s'])} spans/s ({f['baseline']})", _n(f["ratio"], 2)


def _embedded_cpu(f: dict[str, Any]) -> tuple[str, str, str]:
    figure = (
        f"{_n(f['spans_per_cpu_s'])} spans per CPU second: OTLP mapping + group commit + live join, no HTTP "
        f"({f['alerts']:,} of {f['runs']:,} alerts)"
    )
    return figure, f"{_n(f['baseline_spans_per_cpu_s'])} spans per CPU second (decode + append)", _n(f["ratio"], 3)


def _worker_loaded(f: dict[str, Any]) -> tuple[str, str, str]:
    runs = f["runs"]
    parts = [
        f"{r['workers']} {r.get('loop', 'batch')} worker(s) {_n(r['spans_per_s'])} spans/s "
        f"({_n(r['spans_per_cpu_s'])} per CPU s; {r['alerts']:,} alerts, {r['alerts_doubled']} doubled)"
        for r in runs
    ]
    scale = next((r["ratio_to_first"] for r in runs[1:] if "ratio_to_first" in r), None)
    figure = "; ".join(parts) + (f"; {_n(scale, 2)}× the first" if scale is not None else "")
    return figure, f"{_n(runs[0]['raw_messages_per_s'])} msgs/s raw consume + decode", _n(runs[0]["ratio_to_raw"], 3)


def _worker_offered(f: dict[str, Any]) -> tuple[str, str, str]:
    figure = (
        f"{f['workers']} worker(s), {_n(f['rate_offered'])} spans/s offered for {_n(f['minutes'])} min: "
        f"alert p50 {_n(f['alert_p50_ms'])} ms, p99 {_n(f['alert_p99_ms'])} ms; lag 0 "
        f"{_n(f['lag_zero_after_end_s'], 2)} s after the end; {f['alerts']:,} alerts, {f['alerts_doubled']} doubled"
    )
    return figure, f"{_n(f['spans_per_s_sent'])} spans/s sent", "—"


def _reports(f: dict[str, Any]) -> tuple[str, str, str]:
    figure = f"{_n(f['ms_per_report'], 2)} ms a verification report on a kept-alive connection"
    baseline = f"{_n(f['baseline_ms_per_report_with_nagle'], 2)} ms with Nagle on"
    return figure, baseline, _n(f["ratio_baseline_over_now"], 1)


def _generic(f: dict[str, Any]) -> tuple[str, str, str]:
    return "see the JSON file", "—", _n(f.get("ratio"), 2)


FIGURES: dict[str, Callable[[dict[str, Any]], tuple[str, str, str]]] = {
    "bench_ingest": _ingest,
    "bench_soak_embedded": _ingest,
    "bench_soak_kafka": _ingest,
    "bench_pipeline": _pipeline,
    "bench_history": _history,
    "bench_kafka": _kafka,
    "bench_peer": _peer,
    "bench_outcome_reports": _reports,
    "bench_embedded_cpu": _embedded_cpu,
    "bench_worker_batch1": _worker_loaded,
    "bench_worker_batch1_batch2": _worker_loaded,
    "bench_worker_1": _worker_loaded,
    "bench_worker_1_2": _worker_loaded,
    "bench_worker_faust1_batch1_batch2": _worker_loaded,
    "bench_worker_rate_1": _worker_offered,
    "bench_worker_rate_2": _worker_offered,
}


def _cells(run: Run) -> tuple[str, str, str]:
    try:
        return FIGURES.get(run.benchmark, _generic)(run.figures)
    except (KeyError, TypeError, ValueError):  # a result written before these figures existed
        return _generic(run.figures)


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def render(results: Path = RESULTS) -> str:
    runs = sorted((_run(p) for p in results.glob("*.json")), key=lambda r: (r.benchmark, r.at, r.file))
    by_name: dict[str, list[Run]] = {}
    for run in runs:
        by_name.setdefault(run.benchmark, []).append(run)
    lines = [
        "# Performance",
        "",
        "<!-- Generated by benchmarks/render_results.py from benchmarks/results/*.json: do not edit by hand. -->",
        "",
        "Measured on the project's 2-core machine, shared with other work: read each figure with its load",
        "average and its ratio to the baseline measured in the same run. A run is *idle* when the 1-minute load",
        "average stayed below the core count. Each benchmark writes a JSON file under `benchmarks/results/`;",
        "this page is rendered from them (`python benchmarks/render_results.py`). Hand-measured figures from",
        "before this page was generated: [performance-history.md](performance-history.md).",
        "",
        "The ingest benchmarks (`bench_ingest`, `bench_soak_*`, `bench_peer`) drive the receiver from the client",
        "processes of `benchmarks/loadgen.py`: OTLP/HTTP protobuf, agent runs of 5-15 spans (agent, chat and tool",
        "spans with arguments and results), verifications over `POST /v1/outcomes`; runs before 2026-12-03 20:00",
        "used 3-span runs from threads of the measured process. `bench_peer` is `agenttwin ingest --kafka` beside",
        "the OpenTelemetry Collector v0.165.0 (OTLP receiver → Kafka exporter, acknowledging only what Kafka has),",
        "built from Go modules by `benchmarks/peer/build.sh`, on the same broker and load.",
        "",
        "## Quietest and latest run of each benchmark",
        "",
        "| benchmark | run | command | machine | figure | baseline (same run) | ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, group in by_name.items():
        quietest = min(group, key=lambda r: (r.load_1min[0], r.at))
        latest = group[-1]
        chosen = [("quietest", quietest)] + ([("latest", latest)] if latest is not quietest else [])
        for label, run in chosen:
            figure, baseline, ratio = _cells(run)
            lines.append(
                f"| `{name}` | {label}: {run.at[:16].replace('T', ' ')} UTC, `{run.commit}` | "
                f"`{_escape(run.command)}` | {run.machine} | {_escape(figure)} | {_escape(baseline)} | {ratio} |"
            )
    lines += [
        "",
        "## Every run",
        "",
        "| benchmark | run | machine | figure | ratio | file |",
        "|---|---|---|---|---|---|",
    ]
    for run in sorted(runs, key=lambda r: (r.benchmark, r.at, r.file), reverse=True):
        figure, _, ratio = _cells(run)
        lines.append(
            f"| `{run.benchmark}` | {run.at[:16].replace('T', ' ')} UTC, `{run.commit}` | {run.machine} | "
            f"{_escape(figure)} | {ratio} | `benchmarks/results/{run.file}` |"
        )
    return "\n".join(lines) + "\n"


def write(page: Path = PAGE, results: Path = RESULTS) -> Path:
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(render(results), encoding="utf-8")
    return page


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="exit 1 when docs/performance.md is out of date")
    args = p.parse_args(argv)
    if args.check:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != render():
            print(f"{PAGE} is out of date: run python benchmarks/render_results.py", file=sys.stderr)
            return 1
        return 0
    print(write())
    return 0


if __name__ == "__main__":
    sys.exit(main())

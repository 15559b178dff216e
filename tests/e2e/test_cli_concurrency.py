"""--concurrency N: cases simulated in parallel, every event and the comparison byte-identical to a serial run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agenttwin.cli import main
from evaluation.summary import strip_timings
from streams.embedded_log import EmbeddedLog

# An agent that waits like one behind HTTP or a model, and counts how many of its runs overlap.
SLOW_AGENT = """
import threading, time
from producers.agents.registry import resolve_agent

LOCK = threading.Lock()
STATE = {"active": 0, "peak": 0, "runs": 0}
LOCAL = threading.local()


class SlowDemo:
    name, version, model_kind = "slow-demo", "1.3.0", "deterministic-fake"

    def run(self, request):
        inner = LOCAL.__dict__.setdefault("agent", None) or resolve_agent("demo:1.3.0")
        LOCAL.agent = inner
        with LOCK:
            STATE["active"] += 1
            STATE["runs"] += 1
            STATE["peak"] = max(STATE["peak"], STATE["active"])
        try:
            time.sleep(0.05)
            return inner.run(request)
        finally:
            with LOCK:
                STATE["active"] -= 1


AGENT = SlowDemo()
"""


def topics(data_dir: Path) -> dict[str, list[tuple[str | None, bytes, dict[str, str]]]]:
    with EmbeddedLog(data_dir / "topics-log", read_only=True) as log:
        return {t: [(r.key, r.value, dict(r.headers)) for r in log.read(t)] for t in sorted(log.topics())}


def evaluate(capsys: pytest.CaptureFixture[str], data_dir: Path, *extra: str) -> dict:
    code = main(["evaluate", "--baseline", "demo:1.2.4", "--json", "--data-dir", str(data_dir), *extra])
    out = capsys.readouterr().out
    assert code == 0
    return dict(json.loads(out))


def test_concurrency_4_equals_serial_byte_for_byte(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "slow_demo_agent.py").write_text(SLOW_AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    import slow_demo_agent  # type: ignore[import-not-found]

    candidate = ["--candidate", "python:slow_demo_agent:AGENT"]
    serial = evaluate(capsys, tmp_path / "serial", *candidate)
    assert slow_demo_agent.STATE["peak"] == 1 and slow_demo_agent.STATE["runs"] == 9
    parallel = evaluate(capsys, tmp_path / "parallel", *candidate, "--concurrency", "4")
    assert slow_demo_agent.STATE["runs"] == 18
    assert slow_demo_agent.STATE["peak"] >= 2  # the runs did overlap
    assert json.dumps(strip_timings(serial), sort_keys=True) == json.dumps(strip_timings(parallel), sort_keys=True)
    assert topics(tmp_path / "serial") == topics(tmp_path / "parallel")  # every event, in the same order
    assert {c["classification"] for c in parallel["cases"]} >= {"NEW_CRITICAL_FAILURE", "REGRESSED"}
    sys.modules.pop("slow_demo_agent", None)


def test_concurrency_with_trials_equals_serial(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    args = ("--candidate", "demo:1.3.0", "--trials", "3")
    serial = evaluate(capsys, tmp_path / "serial", *args)
    parallel = evaluate(capsys, tmp_path / "parallel", *args, "--concurrency", "4")
    assert json.dumps(strip_timings(serial), sort_keys=True) == json.dumps(strip_timings(parallel), sort_keys=True)
    assert topics(tmp_path / "serial") == topics(tmp_path / "parallel")


def test_bad_concurrency_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for value in ("0", "65"):
        code = main(
            [
                "evaluate",
                "--baseline",
                "demo:1.2.4",
                "--candidate",
                "demo:1.3.0",
                "--concurrency",
                value,
                "--data-dir",
                str(tmp_path),
            ]
        )
        assert code == 2 and "--concurrency must be between 1 and 64" in capsys.readouterr().err

"""The terminal tells the story: a progress display with true totals and an ETA on a terminal, nothing of it in
piped or --json output."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

SLOW_AGENT = """
import time
from producers.agents.registry import resolve_agent


class Slow:
    name, version, model_kind = "slow", "1.3.0", "deterministic-fake"

    def __init__(self):
        self.inner = resolve_agent("demo:1.3.0")

    def run(self, request):
        time.sleep(0.25)  # a model or an HTTP agent spends its time waiting
        return self.inner.run(request)


AGENT = Slow()
"""


def command(tmp_path: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "agenttwin.cli",
        "evaluate",
        "--baseline",
        "demo:1.2.4",
        "--candidate",
        "python:progress_slow_agent:AGENT",
        "--data-dir",
        str(tmp_path / "data"),
        *extra,
    ]


def environment(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "progress_slow_agent.py").write_text(SLOW_AGENT)
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKA_BOOTSTRAP_SERVERS", "AGENTTWIN_CLICKHOUSE_URL")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    env["COLUMNS"] = "160"
    return env


def run_in_terminal(argv: list[str], env: dict[str, str], timeout_s: float = 300.0) -> tuple[int, bytes]:
    """Run with stdout and stderr on a pseudo-terminal; return the exit status and every byte it drew."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(master)
    return proc.wait(timeout=30), b"".join(chunks)


def test_a_terminal_gets_a_progress_display_with_the_true_total(tmp_path: Path) -> None:
    env = environment(tmp_path)
    code, drawn = run_in_terminal(command(tmp_path), env)
    assert code == 0
    text = drawn.decode("utf-8", "replace")
    assert "simulating cases" in text and "/18" in text  # 9 scenarios x 2 sides, counted, not guessed
    assert "ETA" in text
    assert "Contradictions" in text  # and the table output still follows


def test_piped_and_json_output_carry_no_progress(tmp_path: Path) -> None:
    env = environment(tmp_path)
    piped = subprocess.run(command(tmp_path), env=env, capture_output=True, timeout=300, check=False)
    assert piped.returncode == 0
    assert b"simulating" not in piped.stdout + piped.stderr and b"\x1b[" not in piped.stdout + piped.stderr
    code, drawn = run_in_terminal(command(tmp_path, "--json"), env)
    assert code == 0 and b"simulating" not in drawn and drawn.lstrip().startswith(b"{")

"""The progress display of long runs: cases simulated out of the true total, with an ETA (rich).

Shown only when both stdout and stderr are terminals and the output is not --json, and only once a run
has taken longer than `after_s`; it is drawn on stderr and erased when the run ends, so nothing of it
reaches a pipe, a log or a script's JSON.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any, TextIO

SIMULATOR = "simulator"


def wanted(json_output: bool, stdout: TextIO | None = None, stderr: TextIO | None = None) -> bool:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    return not json_output and out.isatty() and err.isatty()


class RunProgress:
    """A callback for the embedded runtime (`progress(stage, n)`): one bar for the cases, one count for the rest."""

    def __init__(self, total_cases: int, *, enabled: bool, after_s: float = 1.0, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self.after_s = after_s
        self._t0 = time.monotonic()
        self._live = False
        if not enabled:
            return  # rich is imported only for a display that may be shown
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress: Any = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(file=stream or sys.stderr),
            transient=True,
        )
        self._cases = self._progress.add_task("simulating cases", total=total_cases)
        self._events = self._progress.add_task("grading and comparing (events)", total=None)

    def __call__(self, stage: str, n: int) -> None:
        if not self.enabled:
            return
        if stage == SIMULATOR:
            self._progress.advance(self._cases, n)
        else:
            self._progress.advance(self._events, n)
        if not self._live and time.monotonic() - self._t0 >= self.after_s:
            self._progress.start()
            self._live = True

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._live:
            self._progress.stop()
            self._live = False

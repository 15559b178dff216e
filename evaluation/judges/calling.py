"""One judge call with a deadline: a checked verdict or a named failure, never a made-up score."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from evaluation.judges.contract import Judge, JudgeRequest, JudgeVerdict
from evaluation.judges.errors import TIMEOUT, JudgeError
from evaluation.judges.verdicts import ensure_verdict

DEFAULT_SEMANTIC_TIMEOUT_S = 120.0  # a judge call (retries included) that takes longer is an ERROR
JUDGE_CRASHED = "judge_crashed"  # failure kind when a judge raised something other than JudgeError


def call_judge(judge: Judge, request: JudgeRequest, timeout_s: float | None) -> object:
    """Ask the judge, giving up after `timeout_s` (the call keeps its daemon thread until it returns)."""
    if timeout_s is None:
        return judge.judge(request)
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["verdict"] = judge.judge(request)
        except Exception as exc:  # handed back to the caller's thread, raised there
            box["error"] = exc

    worker = threading.Thread(target=run, name="semantic-judge", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise JudgeError(TIMEOUT, f"no verdict within the semantic timeout of {timeout_s:g} s")
    error = box.get("error")
    if isinstance(error, Exception):
        raise error
    return box.get("verdict")


@dataclass(frozen=True)
class JudgeFailure:
    """Why a judge gave no verdict: a JudgeError kind, or JUDGE_CRASHED for a judge that raised a bug."""

    kind: str
    message: str


def ask_judge(judge: Judge, request: JudgeRequest, timeout_s: float | None) -> JudgeVerdict | JudgeFailure:
    """One judge call: a checked verdict, or the failure. Never a made-up score."""
    try:
        return ensure_verdict(call_judge(judge, request, timeout_s))
    except JudgeError as exc:
        return JudgeFailure(exc.kind, exc.message)
    except Exception as exc:  # boundary: a judge's bug becomes an ERROR result that names it
        return JudgeFailure(JUDGE_CRASHED, f"{type(exc).__name__}: {exc}")

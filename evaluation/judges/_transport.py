"""What the HTTP adapters share: mapping HTTP failures to JudgeError kinds, and the retry loop.

Retried: transport errors and HTTP 408, 409, 429, 5xx (incl. 529), waiting `retry-after` when the
provider sends one, else an exponential backoff; every wait is capped at 10 s. Sleep is injected.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Callable, Mapping
from typing import TypeVar

import httpx

from evaluation.judges._limits import BASE_BACKOFF_S as BASE_BACKOFF_S
from evaluation.judges._limits import DEFAULT_MAX_RETRIES as DEFAULT_MAX_RETRIES
from evaluation.judges._limits import DEFAULT_TIMEOUT_S as DEFAULT_TIMEOUT_S
from evaluation.judges._limits import MAX_OUTPUT_TOKENS as MAX_OUTPUT_TOKENS
from evaluation.judges._limits import MAX_WAIT_S as MAX_WAIT_S
from evaluation.judges._limits import SEED as SEED
from evaluation.judges._limits import TEMPERATURE as TEMPERATURE
from evaluation.judges._limits import Sleep as Sleep  # re-exported for the adapters
from evaluation.judges.errors import RATE_LIMITED, REJECTED, TIMEOUT, UNAVAILABLE, JudgeError

T = TypeVar("T")


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """One TLS context for every judge client: building one per call costs tens of milliseconds."""
    return httpx.create_ssl_context()


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """`retry-after-ms` or `retry-after` (seconds); HTTP-date forms are ignored (backoff applies)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = lowered.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) * scale
        except ValueError:
            continue
        if value >= 0:
            return value
    return None


def error_for_status(status: int, headers: Mapping[str, str], detail: str) -> JudgeError:
    snippet = detail.strip().replace("\n", " ")[:200]
    message = f"HTTP {status} from the judge provider" + (f": {snippet}" if snippet else "")
    wait = retry_after_seconds(headers)
    if status == 429:
        return JudgeError(RATE_LIMITED, message, retryable=True, retry_after=wait)
    if status == 408:
        return JudgeError(TIMEOUT, message, retryable=True, retry_after=wait)
    if status == 409 or status >= 500:
        return JudgeError(UNAVAILABLE, message, retryable=True, retry_after=wait)
    return JudgeError(REJECTED, message)


def wait_before_retry(retry_index: int, retry_after: float | None) -> float:
    if retry_after is not None:
        return min(retry_after, MAX_WAIT_S)
    return min(BASE_BACKOFF_S * float(2**retry_index), MAX_WAIT_S)


def with_retries(attempt: Callable[[], T], *, max_retries: int, sleep: Sleep) -> T:
    """Run `attempt`, retrying retryable JudgeErrors up to `max_retries` times; the last error is raised."""
    for index in range(max_retries + 1):
        try:
            return attempt()
        except JudgeError as exc:
            if not exc.retryable or index == max_retries:
                raise
            sleep(wait_before_retry(index, exc.retry_after))
    raise AssertionError("unreachable: the loop returns or raises")

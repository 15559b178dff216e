"""Limits and defaults the judge adapters share; no HTTP client here, so settings import it cheaply."""

from __future__ import annotations

from collections.abc import Callable

MAX_WAIT_S = 10.0
BASE_BACKOFF_S = 0.5
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_RETRIES = 2
TEMPERATURE = 0.0
MAX_OUTPUT_TOKENS = 1024
SEED = 7
Sleep = Callable[[float], None]

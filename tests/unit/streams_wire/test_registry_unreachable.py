"""A schema registry that does not answer is one line naming its URL and exit 2, in bounded time, before a
Kafka command starts (it waited on the registry without saying so)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from agenttwin.cli import main
from streams.registry import CHECK_TIMEOUT_S


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_registry() -> Iterator[str]:
    """A port that accepts connections and never answers (a hung registry, or one behind a dead proxy)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()


@pytest.mark.parametrize("kind", ["refused", "silent"])
def test_replay_against_an_unreachable_registry_is_one_line_exit_2(
    kind: str, silent_registry: str, capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    url = silent_registry if kind == "silent" else f"http://127.0.0.1:{_free_port()}"
    started = time.monotonic()
    code = main(
        [
            "replay",
            "--evaluator-version",
            "1.1.0",
            "--kafka",
            f"127.0.0.1:{_free_port()}",  # never reached: the registry is checked first
            "--wire",
            "confluent",
            "--schema-registry",
            url,
            "--data-dir",
            str(tmp_path),
        ]
    )
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    (line,) = err.splitlines()
    assert f"schema registry {url} unreachable" in line and "internal error" not in line
    assert elapsed < CHECK_TIMEOUT_S + 30  # bounded: one request with a 5 s timeout (slack for a loaded machine)

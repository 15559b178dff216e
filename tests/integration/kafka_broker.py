"""Where integration tests get a real Kafka broker from.

Order: an explicit ``KAFKA_BOOTSTRAP_SERVERS``; a Testcontainers broker when a Docker engine answers;
otherwise the local broker that ``infra/kafka/kafka.sh`` runs from Maven Central jars. No broker is an
error, never a skip: these tests exist to prove the pipeline against a real broker.
"""

from __future__ import annotations

import itertools
import os
import re
import socket
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
KAFKA_SH = REPO_ROOT / "infra" / "kafka" / "kafka.sh"

# Testcontainers' KafkaContainer drives Confluent's image scripts, so it needs a cp-kafka image.
DEFAULT_CONTAINER_IMAGE = "confluentinc/cp-kafka:7.6.0"
# Cold `up` is a Maven fetch (about 10 s) plus format and start (about 7 s); leave a wide margin.
LOCAL_UP_TIMEOUT_S = 300.0

_counter = itertools.count(1)
# Per-process tag: names stay unique across test runs against a broker that keeps its data.
_RUN_TAG = uuid.uuid4().hex[:8]
# What unique_name() leaves in a topic's (or its partition directory's) name: -<run tag>-<pid>-<n>.
_TEST_NAME = re.compile(r"-[0-9a-f]{8}-[0-9]+-[0-9]+")


@dataclass
class _Started:
    """What broker_bootstrap() brought up itself, so release_broker() stops exactly that."""

    bootstrap: str | None = None
    container: Any = None
    local_broker: bool = False
    failure: str | None = None  # why no broker could be had: later tests fail at once, not after another `up`
    topics_before: frozenset[str] | None = None  # the broker's topics when these tests first had it


_state = _Started()


def unique_name(prefix: str) -> str:
    """A topic / group / transactional id no other test (or earlier run) has used."""
    clean = re.sub(r"[^A-Za-z0-9._-]", "-", prefix).strip("-") or "t"
    return f"{clean[:150]}-{_RUN_TAG}-{os.getpid()}-{next(_counter)}"


def broker_bootstrap() -> str:
    """Bootstrap servers of a real broker, starting one if needed. Raises RuntimeError if none works."""
    if _state.bootstrap is not None:
        return _state.bootstrap
    from_env = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if from_env:
        _state.bootstrap = from_env
        return from_env
    if _state.failure is not None:
        raise RuntimeError(_state.failure)
    attempts: list[str] = []
    if _docker_answers(attempts):
        _state.bootstrap = _start_container(attempts)
    if _state.bootstrap is None:
        _state.bootstrap = _start_local_broker(attempts)
    if _state.bootstrap is None:
        _state.failure = "no Kafka broker for integration tests: " + "; ".join(attempts)
        raise RuntimeError(_state.failure)
    _state.topics_before = _topics(_state.bootstrap)
    return _state.bootstrap


def untagged_topics(before: frozenset[str], after: frozenset[str]) -> list[str]:
    """Topics created since `before` that a later run's wipe could not tell from a person's data."""
    return sorted(t for t in after - before if not t.startswith("__") and not _TEST_NAME.search(t))


def _topics(bootstrap: str) -> frozenset[str] | None:
    from confluent_kafka.admin import AdminClient

    try:
        return frozenset(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics)
    except Exception:  # a broker a test left down: nothing to compare, the tests that needed it have failed
        return None


def release_broker() -> None:
    """Stop what broker_bootstrap() started (AGENTTWIN_KAFKA_KEEP=1 leaves a local broker running), and fail
    when the tests created a topic not named by unique_name(): the next run could not wipe it."""
    before, after = _state.topics_before, _topics(_state.bootstrap) if _state.bootstrap else None
    _stop_started()
    untagged = untagged_topics(before, after) if before is not None and after is not None else []
    if untagged:
        raise RuntimeError(f"tests created topics not named by unique_name(), which no wipe recognises: {untagged}")


def _stop_started() -> None:
    if _state.container is not None:
        _state.container.stop()
    if _state.local_broker and os.environ.get("AGENTTWIN_KAFKA_KEEP") != "1":
        subprocess.run(["bash", str(KAFKA_SH), "down"], check=True, capture_output=True, timeout=120)
    _state.bootstrap, _state.container, _state.local_broker, _state.failure = None, None, False, None
    _state.topics_before = None


def not_restartable() -> str | None:
    """Why the tests cannot restart the broker they use (None when they can: only infra/kafka's broker)."""
    if _state.container is not None:
        return "a Testcontainers broker is not restarted by the tests (its port would change)"
    if not _state.local_broker and not _is_local_broker(_state.bootstrap or ""):
        return (
            f"the broker at {_state.bootstrap} is not infra/kafka's (set AGENTTWIN_KAFKA_DIR / KAFKA_PORT to the "
            "kafka.sh instance behind KAFKA_BOOTSTRAP_SERVERS, or unset it)"
        )
    return None


def restart_broker(timeout_s: float = 300.0, *, sigkill: bool = False) -> None:
    """Stop and start infra/kafka's broker, keeping its data (check not_restartable() first). sigkill=True
    stops it as a crash would (`kafka.sh kill`: no clean shutdown), and the start recovers its logs: every
    partition of every test so far, which takes a minute or more on a loaded 2-core machine."""
    env = {**os.environ, "KAFKA_READY_TIMEOUT": str(int(timeout_s - 30))}
    for command in ("kill", "up") if sigkill else ("restart",):
        result = subprocess.run(
            ["bash", str(KAFKA_SH), command], capture_output=True, text=True, timeout=timeout_s, env=env
        )
        if result.returncode != 0:
            raise RuntimeError(f"infra/kafka/kafka.sh {command} failed:\n{result.stdout}{result.stderr}")


def _is_local_broker(bootstrap: str) -> bool:
    """True when infra/kafka's broker (per AGENTTWIN_KAFKA_DIR / KAFKA_PORT) is up and is `bootstrap`."""
    if bootstrap.strip() != f"127.0.0.1:{os.environ.get('KAFKA_PORT', '9092')}":
        return False
    status = subprocess.run(["bash", str(KAFKA_SH), "status"], capture_output=True, text=True, timeout=60)
    return status.returncode == 0


def _docker_answers(attempts: list[str]) -> bool:
    """Quick engine check. Plain sockets for unix:// and tcp:// hosts: the docker SDK leaks its socket
    when the engine is missing, which filterwarnings=error turns into a failure."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        if host.startswith("unix://"):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(3)
                sock.connect(host.removeprefix("unix://"))
                return _http_ping(sock)
        if host.startswith("tcp://") and os.environ.get("DOCKER_TLS_VERIFY", "") in ("", "0"):
            address, _, port = host.removeprefix("tcp://").rstrip("/").rpartition(":")
            with socket.create_connection((address, int(port)), timeout=3) as sock:
                return _http_ping(sock)
        return _sdk_ping()
    except OSError as exc:
        attempts.append(f"no Docker engine at {host} ({type(exc).__name__})")
        return False


def _http_ping(sock: socket.socket) -> bool:
    sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
    reply = b""
    while chunk := sock.recv(4096):
        reply += chunk
    return reply.startswith(b"HTTP/1.") and b" 200 " in reply.split(b"\r\n", 1)[0]


def _sdk_ping() -> bool:
    # TLS or ssh:// engines: leave the protocol to the docker SDK.
    import docker  # type: ignore[import-untyped, unused-ignore]
    from docker.errors import DockerException  # type: ignore[import-untyped, unused-ignore]

    try:
        client = docker.from_env(timeout=3)
    except DockerException as exc:
        raise OSError(str(exc)) from exc
    try:
        return bool(client.ping())
    except DockerException as exc:
        raise OSError(str(exc)) from exc
    finally:
        client.close()


def _start_container(attempts: list[str]) -> str | None:
    try:
        from testcontainers.community.kafka import KafkaContainer
    except ImportError:
        attempts.append("testcontainers[kafka] not installed")
        return None
    image = os.environ.get("AGENTTWIN_KAFKA_IMAGE", DEFAULT_CONTAINER_IMAGE)
    container = (
        KafkaContainer(image)
        .with_kraft()
        # One node: the transaction log must be replicated once, or transactional producers hang.
        .with_env("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR", "1")
        .with_env("KAFKA_TRANSACTION_STATE_LOG_MIN_ISR", "1")
    )
    try:
        container.start(timeout=120)
    except Exception as exc:  # boundary: any container failure means "try the local broker", recorded
        attempts.append(f"testcontainers {image} failed: {type(exc).__name__}: {exc}")
        return None
    _state.container = container
    return str(container.get_bootstrap_server())


def holds_only_earlier_test_runs(log_dirs: Path) -> bool:
    """True when the broker's partitions are all earlier test runs' topics or Kafka's own (`__...`).

    Every run leaves thousands of partitions behind, and a broker recovers every one of them at each start:
    after a few runs its start (and the broker-restart tests') outlasts any timeout on a loaded machine."""
    if not log_dirs.is_dir():
        return False
    names = [p.name for p in log_dirs.iterdir() if p.is_dir()]
    tests = [n for n in names if _TEST_NAME.search(n)]
    return bool(tests) and all(n.startswith("__") or _TEST_NAME.search(n) for n in names)


def _start_local_broker(attempts: list[str]) -> str | None:
    was_up = subprocess.run(["bash", str(KAFKA_SH), "status"], capture_output=True, text=True, timeout=60)
    state_root = Path(os.environ.get("AGENTTWIN_KAFKA_DIR") or KAFKA_SH.parent)
    if was_up.returncode != 0 and holds_only_earlier_test_runs(state_root / "data" / "logs"):
        subprocess.run(["bash", str(KAFKA_SH), "wipe"], check=True, capture_output=True, timeout=120)
    try:
        result = subprocess.run(
            ["bash", str(KAFKA_SH), "up"], capture_output=True, text=True, timeout=LOCAL_UP_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        attempts.append(f"infra/kafka/kafka.sh up did not finish within {LOCAL_UP_TIMEOUT_S:.0f} s")
        return None
    if result.returncode != 0:
        tail = (result.stderr.strip() or result.stdout.strip()).splitlines()[-15:]
        attempts.append("infra/kafka/kafka.sh up failed:\n" + "\n".join(tail))
        return None
    # Only stop it later if it was not already running before this session.
    _state.local_broker = was_up.returncode != 0
    return f"127.0.0.1:{os.environ.get('KAFKA_PORT', '9092')}"

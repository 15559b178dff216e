"""Where integration tests get a real Confluent-compatible schema registry from.

Order: an explicit ``AGENTTWIN_SCHEMA_REGISTRY_URL``; otherwise the Apicurio Registry that
``infra/registry/registry.sh`` runs from Maven Central (``REGISTRY_PORT``, default 8081). No registry is an
error, never a skip: the Confluent-mode tests exist to prove the wire format against a real one.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REGISTRY_SH = Path(__file__).resolve().parents[2] / "infra" / "registry" / "registry.sh"
UP_TIMEOUT_S = 600.0  # a cold start downloads the registry (about 160 MB) first

_started = False


def registry_url() -> str:
    global _started
    from_env = os.environ.get("AGENTTWIN_SCHEMA_REGISTRY_URL", "").strip()
    if from_env:
        return from_env
    was_up = subprocess.run(["bash", str(REGISTRY_SH), "status"], capture_output=True, text=True, timeout=60)
    result = subprocess.run(["bash", str(REGISTRY_SH), "up"], capture_output=True, text=True, timeout=UP_TIMEOUT_S)
    if result.returncode != 0:
        raise RuntimeError(f"infra/registry/registry.sh up failed:\n{(result.stderr or result.stdout)[-3000:]}")
    _started = was_up.returncode != 0
    url = subprocess.run(["bash", str(REGISTRY_SH), "url"], capture_output=True, text=True, check=True).stdout
    return url.strip()


def release_registry() -> None:
    """Stop the registry if registry_url() started it (AGENTTWIN_KAFKA_KEEP=1 keeps it, like the broker)."""
    global _started
    if _started and os.environ.get("AGENTTWIN_KAFKA_KEEP") != "1":
        subprocess.run(["bash", str(REGISTRY_SH), "down"], capture_output=True, timeout=120, check=False)
    _started = False

"""The Java interop tools (infra/java): built once per source version into the cache, one JVM per use."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
INTEROP_SH = REPO_ROOT / "infra" / "java" / "interop.sh"
BUILD_TIMEOUT_S = 600.0


@functools.cache
def interop_classpath() -> str:
    """The runtime classpath of infra/java's jar (Apache Avro and its dependencies); builds it if needed."""
    result = subprocess.run(
        ["bash", str(INTEROP_SH), "classpath"], capture_output=True, text=True, timeout=BUILD_TIMEOUT_S
    )
    if result.returncode != 0:
        raise RuntimeError(f"infra/java/interop.sh classpath failed:\n{result.stderr[-3000:]}")
    return result.stdout.strip()


def run_java(main_class: str, *args: str, timeout_s: float = 300.0) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["java", "-Xmx512m", "-cp", interop_classpath(), main_class, *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    if result.returncode != 0:
        raise RuntimeError(f"java {main_class} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result

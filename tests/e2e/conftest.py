"""The e2e tier exercises the embedded default: a Kafka cluster in the environment must not redirect it."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _embedded_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    monkeypatch.delenv("AGENTTWIN_CLICKHOUSE_URL", raising=False)


# Jenkins' xunit-plugin junit-10.xsd (MIT), the schema pytest validates its own --junitxml output against; it
# ships in pytest's source distribution, so pip (the ordinary PyPI client) fetches it once per virtualenv.
JUNIT_XSD_MEMBER = "testing/example_scripts/junit-10.xsd"
XSD_CACHE = Path(sys.prefix) / "share" / "agenttwin-tests" / "junit-10.xsd"


@pytest.fixture(scope="session")
def junit_xsd() -> Path:
    """The common JUnit XML schema (see JUNIT_XSD_MEMBER)."""
    if XSD_CACHE.is_file():
        return XSD_CACHE
    version = pytest.__version__
    download = XSD_CACHE.parent / "sdist"
    download.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"pytest=={version}",
            "-d",
            str(download),
        ],
        check=True,
        timeout=600,
    )
    archive = next(download.glob(f"pytest-{version}.tar.gz"))
    with tarfile.open(archive) as tar:
        member = tar.extractfile(f"pytest-{version}/{JUNIT_XSD_MEMBER}")
        assert member is not None, "pytest's sdist no longer ships junit-10.xsd"
        XSD_CACHE.write_bytes(member.read())
    return XSD_CACHE

"""The Demo Co world shipped with the package: twin, nine scenarios, agent manifests."""

from pathlib import Path

DEMO_DIR = Path(__file__).resolve().parent
TWIN_FILE = DEMO_DIR / "twin.yaml"
SCENARIO_DIR = DEMO_DIR / "scenarios"
MANIFEST_DIR = DEMO_DIR / "manifests"

__all__ = ["DEMO_DIR", "MANIFEST_DIR", "SCENARIO_DIR", "TWIN_FILE"]

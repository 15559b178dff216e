"""The Demo Co world shipped with the package: twin, nine scenarios, agent manifests."""

from pathlib import Path

DEMO_DIR = Path(__file__).resolve().parent
TWIN_FILE = DEMO_DIR / "twin.yaml"
SCENARIO_DIR = DEMO_DIR / "scenarios"
MANIFEST_DIR = DEMO_DIR / "manifests"
STORY_DIR = DEMO_DIR / "stories"

# Named suites: `--suite demo` is the nine Demo Co scenarios; `demo-retry-rule` is the replay story.
NAMED_SUITES = {
    "demo": SCENARIO_DIR,
    "demo-retry-rule": STORY_DIR / "refund-timeout-retry-rule.yaml",
}

__all__ = ["DEMO_DIR", "MANIFEST_DIR", "NAMED_SUITES", "SCENARIO_DIR", "STORY_DIR", "TWIN_FILE"]

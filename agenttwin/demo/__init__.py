"""The Demo Co world shipped with the package: twin, nine scenarios, agent manifests."""

from pathlib import Path

DEMO_DIR = Path(__file__).resolve().parent
TWIN_FILE = DEMO_DIR / "twin.yaml"
SCENARIO_DIR = DEMO_DIR / "scenarios"
MANIFEST_DIR = DEMO_DIR / "manifests"
STORY_DIR = DEMO_DIR / "stories"
MULTITURN_DIR = DEMO_DIR / "multiturn"
AIRLINE_SCENARIO_DIR = DEMO_DIR.parent / "worlds" / "airline" / "scenarios"  # = agenttwin.worlds.airline's

# Named suites: `--suite demo` is the nine Demo Co scenarios; `demo-retry-rule` is the replay story;
# `demo-multiturn` the two conversations (kept apart so the nine's published counts stay as they are);
# `airline` the airline world's scenarios (agenttwin/worlds/airline).
NAMED_SUITES = {
    "demo": SCENARIO_DIR,
    "demo-retry-rule": STORY_DIR / "refund-timeout-retry-rule.yaml",
    "demo-multiturn": MULTITURN_DIR,
    "airline": AIRLINE_SCENARIO_DIR,
}

__all__ = ["DEMO_DIR", "MANIFEST_DIR", "MULTITURN_DIR", "NAMED_SUITES", "SCENARIO_DIR", "STORY_DIR", "TWIN_FILE"]

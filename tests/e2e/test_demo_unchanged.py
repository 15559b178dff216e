"""The published demo is untouched by multi-turn scenarios and MCP: same events, same printed story.

`data/demo_digest.json` and `data/demo_output.txt` were taken from `agenttwin demo` before conversations
existed (main's own code, at the commit this branch last rebased on). A change meant to alter the demo
regenerates both:
`python -c "from tests.e2e.demo_digest import demo_digest; ..."` over a fresh `agenttwin demo --data-dir`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agenttwin.cli import main
from tests.e2e.demo_digest import demo_digest

DATA = Path(__file__).resolve().parent / "data"


def test_the_demo_writes_the_same_events_and_prints_the_same_story(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--data-dir", str(tmp_path)]) == 0
    # line 1 names the data directory; other mentions of it are written <DATA>
    printed = capsys.readouterr().out.replace(str(tmp_path), "<DATA>").splitlines()[1:]
    assert printed == (DATA / "demo_output.txt").read_text(encoding="utf-8").splitlines()
    assert demo_digest(tmp_path) == json.loads((DATA / "demo_digest.json").read_text(encoding="utf-8"))

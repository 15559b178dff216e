"""Gate policy files: every broken or hostile file is one located error, never a crash or a silent default."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.gate import BLOCK, DEFAULT_POLICY
from evaluation.gate_policy import load_gate_policy
from twin_engine.errors import DefinitionError

GOOD = """\
apiVersion: agenttwin.dev/v1
kind: GatePolicy
metadata:
  name: payments-strict
spec:
  classifications:
    REGRESSED: BLOCK
  tags:
    refunds: {FLAKY: WARN}
  metrics:
    - metric: candidate.duplicate_side_effects
      max: 0
      action: BLOCK
"""


def write(tmp_path: Path, text: str, name: str = "policy.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_good_policy_loads_with_defaults_for_what_it_leaves_out(tmp_path: Path) -> None:
    policy = load_gate_policy(write(tmp_path, GOOD))
    assert policy.name == "payments-strict"
    assert policy.classifications["REGRESSED"] == BLOCK
    assert policy.classifications["NEW_CRITICAL_FAILURE"] == BLOCK
    assert policy.tags == {"refunds": {"FLAKY": "WARN"}}
    assert policy.metrics[0].metric == "candidate.duplicate_side_effects" and policy.metrics[0].max == 0
    assert policy.hash != DEFAULT_POLICY.hash


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD.replace("REGRESSED: BLOCK", "REGRESSED: STOP"), ":7: spec.classifications.REGRESSED:"),
        (GOOD.replace("REGRESSED: BLOCK", "REGRESED: BLOCK"), "unknown property 'REGRESED'; did you mean 'REGRESSED'?"),
        (
            GOOD.replace("candidate.duplicate_side_effects", "candidate.dupes"),
            ":11: spec.metrics[0].metric: unknown metric",
        ),
        (GOOD.replace("      max: 0\n", ""), "spec.metrics[0]"),
        (GOOD.replace("kind: GatePolicy", "kind: Scenario"), "kind: must be 'GatePolicy'"),
        ("- just\n- a list\n", "policy.yaml"),
        ("apiVersion: [unclosed\n", "YAML syntax error"),
        (GOOD.replace("refunds:", "Bad Tag!:"), "spec.tags"),
        (GOOD + "  anchors: &a [1]\n  again: *a\n", "policy.yaml"),
    ],
)
def test_broken_policies_are_one_located_error(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(DefinitionError) as info:
        load_gate_policy(write(tmp_path, text))
    message = str(info.value)
    assert expected in message and "\n" not in message


def test_an_oversized_policy_is_refused_before_parsing(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match=r"KiB|bytes|large"):
        load_gate_policy(write(tmp_path, GOOD + "#" * (300 * 1024)))


def test_a_missing_policy_file_is_one_line_naming_it(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match=r"nope\.yaml: cannot read the file"):
        load_gate_policy(tmp_path / "nope.yaml")

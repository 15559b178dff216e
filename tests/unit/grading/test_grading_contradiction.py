from __future__ import annotations

import pytest

from evaluation.contradiction import is_contradiction


@pytest.mark.parametrize(
    ("claimed", "status", "verified", "expected"),
    [
        ("SUCCESS", "FAILURE", True, True),
        ("SUCCESS", "PARTIAL", True, True),
        ("SUCCESS", "SUCCESS", True, False),
        ("SUCCESS", "UNKNOWN", True, False),
        ("SUCCESS", "FAILURE", False, False),  # an unverifiable claim is never disproved
        ("SUCCESS", "PARTIAL", False, False),
        ("PARTIAL", "FAILURE", True, False),
        ("FAILURE", "FAILURE", True, False),
        ("UNKNOWN", "FAILURE", True, False),
        (None, "FAILURE", True, False),
        ("success", "FAILURE", True, False),  # claims are normalized before they get here
    ],
)
def test_truth_table(claimed: str | None, status: str, verified: bool, expected: bool) -> None:
    assert is_contradiction(claimed, status, verified) is expected

"""What the tracked files must never say: references a reader cannot follow.

The product brief does not ship and the tracker's numbers mean nothing outside it, so code,
tests and docs point to a page under docs/ instead (docs/design/*.md for the why).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("what", "pattern"),
    [
        # Spelled with a class so that this file does not match itself.
        ("a reference to the product brief", ["-w", "-E", "S[P]EC"]),
        ("a tracker number instead of an explanation", ["-E", "[Ii]ssue [0-9]+"]),
    ],
)
def test_no_tracked_file_names_what_does_not_ship(what: str, pattern: list[str]) -> None:
    found = subprocess.run(
        ["git", "-C", str(ROOT), "grep", "-n", *pattern],
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.returncode in (0, 1), found.stderr  # 1: no match; anything else: git failed
    assert found.stdout.splitlines() == [], f"{what}; point to a docs/ page instead"

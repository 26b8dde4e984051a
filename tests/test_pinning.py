"""Pinned boundaries: a moved boundary the properties fix in place is a note, not a finding.

A real repository whose ``size`` rolls over to kilobytes one unit too late (``<=`` where
``<`` is right). The honest fix moves that boundary. Under a contract whose property checks
both sides of it, every nudge of the new boundary fails the property: pinned,
``spec_review: pass``. Under a contract that only checks 1024, the nudge to ``n < 1023``
passes too: the spec does not say where the boundary is, and a human must look.
"""

from __future__ import annotations

import pytest

from patchwarden.sandbox import SandboxConfig
from patchwarden.scorer import ScorerConfig, ScoreRequest, Verdict, score
from patchwarden.scorer.checks import boundary_nudges
from tests._git_repos import commit, init_repo

pytestmark = pytest.mark.bwrap

CONTRACT = "contract/differential-contract.yaml"
BASE = '''\
def size(n):
    """Bytes as text: plain below a kilobyte, whole kilobytes from 1024 up."""
    if n <= 1024:
        return f"{n}B"
    return f"{n // 1024}K"
'''
PROPERTY = """\
from units import size


def test_rollover():
    assert size(1023) == "1023B"
    assert size(1024) == "1K"


def test_rollover_at_1024_only():
    assert size(1024) == "1K"
"""
HONEST = BASE.replace("n <= 1024", "n < 1024")
CONTRACTS = {
    "both-sides": "test_rollover",
    "one-side": "test_rollover_at_1024_only",
}


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Verdict]:
    root = tmp_path_factory.mktemp("pinning") / "units-repo"
    repo = init_repo(root)
    files = {"units.py": BASE, "tests/properties/test_units.py": PROPERTY}
    for name, test in CONTRACTS.items():
        files[f"contract/{name}.yaml"] = (
            "seeds: [1, 2]\nspec_paths: [tests/properties]\nproperties:\n"
            f"  - id: prop.rollover\n    test: tests/properties/test_units.py::{test}\n"
        )
    commit(repo, files, "base")
    repo.create_tag("base")
    commit(repo, {"units.py": HONEST}, "honest")
    repo.create_tag("honest")
    state, logs = tmp_path_factory.mktemp("state"), tmp_path_factory.mktemp("logs")
    config = ScorerConfig(state_dir=str(state), log_dir=str(logs))
    return {
        name: score(
            ScoreRequest(root, f"contract/{name}.yaml", "base", "honest"), config, SandboxConfig()
        )
        for name in CONTRACTS
    }


def test_nudges_move_the_new_boundary_once_more() -> None:
    [found] = boundary_nudges("units.py", BASE, HONEST)
    assert found.scope == "size" and found.pinnable
    assert [(n.before, n.after) for n in found.nudges] == [
        ("n < 1024", "n <= 1024"),
        ("n < 1024", "n < 1025"),
        ("n < 1024", "n < 1023"),
    ]
    assert "if n <= 1024:" in found.nudges[0].source
    # A boundary that disappears leaves nothing to nudge: it cannot be pinned.
    gone = BASE.replace('    if n <= 1024:\n        return f"{n}B"\n', "")
    [lost] = boundary_nudges("units.py", BASE, gone)
    assert not lost.pinnable


def test_a_boundary_the_property_pins_is_a_note(verdicts: dict[str, Verdict]) -> None:
    verdict = verdicts["both-sides"]
    assert verdict.decision == "accept"
    check = {c.check: c for c in verdict.scorecard}["spec_review"]
    assert check.outcome == "pass"
    assert check.evidence == [
        "note (moved, but pinned: every nudge of it fails a property): "
        "units.py: size: comparison operators: removed LtE; added Lt",
        "note (nudge): units.py:3: size: nudge `n < 1024` to `n <= 1024`: a property fails",
        "note (nudge): units.py:3: size: nudge `n < 1024` to `n < 1025`: a property fails",
        "note (nudge): units.py:3: size: nudge `n < 1024` to `n < 1023`: a property fails",
    ]


def test_a_boundary_the_property_leaves_open_is_reviewed(verdicts: dict[str, Verdict]) -> None:
    verdict = verdicts["one-side"]
    assert verdict.gate.decision == "accept"
    check = {c.check: c for c in verdict.scorecard}["spec_review"]
    assert check.outcome == "review"
    assert check.evidence[:2] == [
        "units.py: size: comparison operators: removed LtE; added Lt",
        "parent_fail_cleared: prop.rollover",
    ]
    assert check.evidence[2:] == [
        "note (nudge): units.py:3: size: nudge `n < 1024` to `n <= 1024`: a property fails",
        "note (nudge): units.py:3: size: nudge `n < 1024` to `n < 1025`: a property fails",
        "note (nudge): units.py:3: size: nudge `n < 1024` to `n < 1023`: every property "
        "still passes",
    ]

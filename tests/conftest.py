"""Fixtures shared across the suite: one example repository per test session.

Building it is cheap; scoring it is not (six sandboxed pytest processes per
patch), so suites that score share this repository and its state directory.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import pytest

from tests._artefacts import ARTEFACT_LINES

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "orders"
CONTRACT = "contract/differential-contract.yaml"
BUNDLE_FILES = {
    "contract.resolved.json",
    "decision.json",
    "scorecard.json",
    "review-note.txt",
    "parent.jsonl",
    "patch.jsonl",
    "patch.diff",
    "restored.json",
    "layout.json",
    "seeds.json",
    "extra-seeds.resolved.json",
    "runs",
}
"""What every evidence bundle holds (docs/reviewer-guide.md)."""


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say where tests left artefacts for people (tests/_artefacts.py)."""
    for line in terminalreporter.config.stash.get(ARTEFACT_LINES, []):
        terminalreporter.write_line(line)


def _make_repo(dest: Path) -> dict[str, str]:
    spec = importlib.util.spec_from_file_location("orders_make_repo", EXAMPLE / "make_repo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shas: dict[str, str] = module.make_repo(dest)
    return shas


@pytest.fixture(scope="session")
def example_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Orders example; tags: base, patch-fix, patch-regression, patch-refactor, patch-fix-docs."""
    dest = tmp_path_factory.mktemp("example") / "orders"
    _make_repo(dest)
    return dest


@pytest.fixture(scope="session")
def scorer_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment for ``patchwarden`` subprocesses: a private state dir, shared by the session."""
    state = tmp_path_factory.mktemp("state")
    return {**os.environ, "XDG_STATE_HOME": str(state)}


SCORED_PATCHES = ("fix", "regression", "refactor")


@pytest.fixture(scope="session")
def scored_logs(
    example_repo: Path, scorer_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A log directory with real verdicts of the example's fix (accept), regression (reject)
    and refactor (propose_freeze) patches, scored once per session (about 3 s a patch).
    Read it, never write it: copy it first to add lines."""
    logs = tmp_path_factory.mktemp("scored") / "logs"
    for patch in SCORED_PATCHES:
        done = subprocess.run(
            [
                "patchwarden",
                "score",
                "--repo",
                str(example_repo),
                "--contract",
                CONTRACT,
                "--parent",
                "base",
                "--patch",
                f"patch-{patch}",
                "--log-dir",
                str(logs),
            ],
            capture_output=True,
            text=True,
            env=scorer_env,
            timeout=600,
            check=False,
        )
        assert done.returncode in (0, 1, 3), (patch, done.stderr)
    return logs

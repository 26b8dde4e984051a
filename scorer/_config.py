"""The scorer section of the operator configuration."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat

from patchwarden.sandbox import Limits

DEFAULT_PROTECTED_PATHS = (
    "tests/**",
    "test/**",
    # Tests inside a product package (pkg/tests/) are the isolated oracle's own code, as the
    # top-level ones are: they come from the parent (docs/design/isolated-oracle.md).
    "**/tests/**",
    "**/test/**",
    "**/conftest.py",
    "conftest.py",
    "pytest.ini",
    "tox.ini",
    "setup.cfg",
)


MAX_EXTRA_SEEDS = 64
"""Each extra seed costs two sandboxed runs per submission; more than this is a typo."""


def default_state_dir() -> str:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return str(Path(base) / "patchwarden" / "scorer")


class ScorerConfig(BaseModel):
    """How the scorer runs the contract and judges the patch."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    state_dir: str = Field(default_factory=default_state_dir)
    """The scorer's own directory (mode 0700): scratch clone and worktrees."""
    log_dir: str = "patchwarden-logs"
    """Where evidence bundles and verdicts.jsonl are written (reviewers read it)."""
    jobs: int = Field(default=0, ge=0)
    """Parallel sandboxed pytest processes; 0 means the number of cores."""
    protected_paths: list[str] = list(DEFAULT_PROTECTED_PATHS)
    """Globs restored from the parent before the runs; changing them is test_tampering."""
    test_tampering: Literal["review", "reject"] = "review"
    """Outcome of the test_tampering check when the patch changes a protected path."""
    isolation: Literal["review", "reject", "pass"] = "review"
    """Outcome of the isolation check when a property could not run with the product in a
    process of its own and ran in-process (docs/design/isolated-oracle.md)."""
    probes: Literal["review", "reject"] = "review"
    """Outcome of the probes check when the patch's code probes its environment in a way the
    parent's did not (docs/design/isolated-oracle.md, "Probes")."""
    runner_trust: Literal["review", "reject", "pass"] = "review"
    """Outcome of the runner_trust check when the contract's runner has no isolated oracle
    (``runner: ctest``: the assertions share the product's process; docs/threat-model.md)."""
    run_limits: Limits = Limits(wall_time_s=600, idle_time_s=300)
    """Limits of one scorer run (one tree, one seed, every property)."""
    held_out_dir: str | None = None
    """A directory outside the repository holding held-out.yaml and its test files: the
    operator's properties, run on both trees like the contract's and never shown to the
    agent (docs/design/held-out.md). None: no held-out properties."""
    extra_seeds: int = Field(default=1, ge=0, le=MAX_EXTRA_SEEDS)
    """Seeds drawn fresh for every submission and run on both trees besides the schedule;
    recorded in the evidence, never shown to the agent. 0 only by the operator's explicit
    choice, which `doctor` and every bundle name: without one, a patch that recognises the
    inputs of the contract's seeds is tried on no other (docs/design/differential-gate.md)."""
    trees_dir: str | None = None
    """Where the scorer checks out the trees its sandboxed runs see. A run can read its
    tree's host path (in /proc/self/mountinfo), so the default is a neutral private directory,
    `patchwarden-trees-<uid>` in the system's temporary directory, not the state directory."""

    request_timeout_s: PositiveFloat | None = None
    """`serve` only: how long the server waits for the scorer's answer to one request before
    it stops the scorer as hung and starts a new one. Null: derived from run_limits, jobs
    and the contract's seeds, so that no run staying within its limits can reach it (a
    patch that hangs its runs gets a verdict, not a free retry)."""
    max_restarts: int = Field(default=5, ge=0)
    """`serve` only: restarts of a crashed, killed or hung scorer allowed within
    restart_window_s; past them the scorer stays down and submissions are refused."""
    restart_window_s: PositiveFloat = 600
    """`serve` only: the window max_restarts counts in, in seconds."""
    restart_backoff_s: PositiveFloat = 1.0
    """`serve` only: the wait before the first restart; it doubles with each restart in the
    window, up to a minute."""

    def worker_count(self) -> int:
        return self.jobs or (os.cpu_count() or 1)

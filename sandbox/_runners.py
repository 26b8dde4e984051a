"""The property runners, by name: what a contract's ``runner`` chooses (docs/design/runners.md).

A runner takes one tree, the contract's targets and one seed and returns a ``PropertyRun``:
one record per target that reported (pass or fail, with its witness), the others missing.
Everything after it (rows, gate, scorecard, bundle) reads only that, so a new runner is one
module and one entry in ``RUNNERS`` (docs/architecture.md, "How to add a test runner").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchwarden._runner_names import (
    DEFAULT_RUNNER,
    DEFAULT_SEED_ENV,
    RUNNER_NAMES,
    env_name_problem,
)

from ._config import Limits, SandboxConfig
from ._ctest_runner import TRUST as CTEST_TRUST
from ._ctest_runner import run_ctest_properties
from ._entropy import RunEntropy
from ._layout import ImportLayout
from ._pytest_runner import PropertyRun, PropertyTarget, run_properties

__all__ = ["DEFAULT_RUNNER", "DEFAULT_SEED_ENV", "RUNNERS", "env_name_problem", "runner_named"]


@dataclass(frozen=True)
class RunRequest:
    """One (tree, seed) run of a contract's targets, whatever the runner."""

    tree: Path
    targets: Sequence[PropertyTarget]
    seed: int
    config: SandboxConfig
    contract_paths: Sequence[str] = ()
    limits: Limits | None = None
    layout: ImportLayout | None = None
    tests_dir: Path | None = None
    seed_env: str = DEFAULT_SEED_ENV
    entropy: RunEntropy | None = None
    """A scored run's hash seed and ``random`` seed (sandbox/_entropy.py); None: drawn fresh.
    Runners whose processes are not Python ignore it."""


@dataclass(frozen=True)
class Runner:
    name: str
    trust: str
    """Who reports a result: ``isolated`` (an oracle process apart from the product; for
    pytest ``sandbox.oracle: in-process`` lowers it, and the ``isolation`` check says so) or
    ``compiled-in`` (the assertions are in the product's own binary). Shown by ``contract
    check``, the bundle and the view; the ``runner_trust`` check reports a runner without an
    isolated oracle (docs/design/runners.md)."""
    why: str
    """One line for the reviewer: what the trust level means here."""
    run: Callable[[RunRequest], PropertyRun]
    python: bool
    """The project is Python (the agent's run_python, the import layout apply)."""


def _pytest(request: RunRequest) -> PropertyRun:
    return run_properties(
        request.tree,
        request.targets,
        request.seed,
        request.config,
        contract_paths=request.contract_paths,
        limits=request.limits,
        layout=request.layout,
        tests_dir=request.tests_dir,
        entropy=request.entropy,
    )


def _ctest(request: RunRequest) -> PropertyRun:
    return run_ctest_properties(
        request.tree,
        request.targets,
        request.seed,
        request.config,
        seed_env=request.seed_env,
        limits=request.limits,
    )


RUNNERS: Mapping[str, Runner] = {
    "pytest": Runner(
        "pytest",
        "isolated",
        "the oracle process imports no product code (docs/design/isolated-oracle.md)",
        _pytest,
        python=True,
    ),
    "ctest": Runner(
        "ctest",
        CTEST_TRUST,
        "the assertions are compiled into the binary that runs the product's code: product "
        "code shares the process that reports the result",
        _ctest,
        python=False,
    ),
}
# The contract checks its runner against the pure list of names (package/_runner_names.py):
# a runner added here and not there (or the reverse) fails at import, not at a score.
assert tuple(RUNNERS) == RUNNER_NAMES, (tuple(RUNNERS), RUNNER_NAMES)


def runner_named(name: str) -> Runner:
    """The runner a contract names (its loader has already refused an unknown one)."""
    try:
        return RUNNERS[name]
    except KeyError:
        raise ValueError(f"no runner named {name!r}; known: {', '.join(RUNNERS)}") from None

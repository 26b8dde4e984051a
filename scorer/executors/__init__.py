"""Executors: where the runs of a score go (docs/design/scoring.md, "Executors").

Executor        the interface: submit(RunUnit) -> Future[RunOutcome]
LocalExecutor   --jobs sandboxed processes on this machine (the default)
RayExecutor     Ray tasks on a cluster (``pip install 'patchwarden[ray]'``), imported
                only when asked for: ``make_executor("ray", ...)``
"""

from __future__ import annotations

from typing import Literal

from patchwarden.sandbox import SandboxConfig

from .._config import ScorerConfig
from ._base import Executor, RunOutcome, RunUnit, TreeSource, UnitKey, collect
from ._local import LocalExecutor
from ._trees import rebuilt_tree, tree_digest, worker_clone

ExecutorName = Literal["local", "ray"]


def make_executor(
    name: ExecutorName,
    scorer_config: ScorerConfig,
    sandbox_config: SandboxConfig,
    *,
    address: str | None = None,
    jobs: int | None = None,
) -> Executor:
    """An executor by name; ``ray`` needs the ``patchwarden[ray]`` extra (ConfigError if
    it is not installed). ``jobs``: slots (default: scorer.jobs or the core count; for Ray,
    the cluster's CPUs)."""
    if name == "ray":
        from ._ray import RayExecutor

        return RayExecutor(scorer_config, sandbox_config, address=address, jobs=jobs)
    return LocalExecutor(jobs or scorer_config.worker_count(), sandbox_config)


__all__ = [
    "Executor",
    "ExecutorName",
    "LocalExecutor",
    "RunOutcome",
    "RunUnit",
    "TreeSource",
    "UnitKey",
    "collect",
    "make_executor",
    "rebuilt_tree",
    "tree_digest",
    "worker_clone",
]

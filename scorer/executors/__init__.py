"""Executors: where the runs of a score go (docs/design/scoring.md, "Executors").

    Executor        the interface: submit(RunUnit) -> Future[RunOutcome]
    LocalExecutor   --jobs sandboxed processes on this machine (the default)
    RayExecutor     Ray tasks on a cluster (``pip install 'patchwarden[ray]'``), imported
                    only when asked for: ``make_executor("ray", ...)``
"""

from __future__ import annotations

from ._base import Executor, RunOutcome, RunUnit, TreeSource, UnitKey, collect
from ._local import LocalExecutor
from ._trees import rebuilt_tree, tree_digest, worker_clone

__all__ = [
    "Executor",
    "LocalExecutor",
    "RunOutcome",
    "RunUnit",
    "TreeSource",
    "UnitKey",
    "collect",
    "rebuilt_tree",
    "tree_digest",
    "worker_clone",
]

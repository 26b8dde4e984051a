"""``contract_tampered``: the patch changes a contract path (docs/design/contract.md).

The paths are restored from the parent before the runs, so the change never ran; the
check shows it and rejects the patch.
"""

from __future__ import annotations

from patchwarden._treepaths import under

from ._base import BeforeRuns, Check, found
from ._context import PlanContext


def _run(context: PlanContext) -> Check:
    paths = context.contract_paths
    hits = [f"{c.status} {c.path}" for c in context.changes if under(c.path, paths)]
    return found("contract_tampered", hits)


CONTRACT_TAMPERED = BeforeRuns("contract_tampered", _run)

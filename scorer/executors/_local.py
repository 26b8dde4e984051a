"""The local executor: ``jobs`` sandboxed processes at once on this machine.

Each worker thread waits on one sandboxed pytest process (``run_properties``), so ``jobs``
threads keep ``jobs`` cores busy; units queue in submission order, which keeps earlier
requests finishing first. The one-time sandbox check starts as soon as the executor does and
runs while the driver plans, instead of before it.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

from patchwarden.sandbox import SandboxConfig, require_sandbox, run_properties

from ._base import Executor, RunOutcome, RunUnit


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, jobs: int, sandbox_config: SandboxConfig) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, got {jobs}")
        self._jobs = jobs
        self._sandbox = sandbox_config
        self.import_roots = sandbox_config.import_roots
        self._pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="patchwarden-run")
        self._checked = self._pool.submit(require_sandbox, sandbox_config)

    @property
    def jobs(self) -> int:
        return self._jobs

    def submit(self, unit: RunUnit) -> Future[RunOutcome]:
        return self._pool.submit(self._run, unit)

    def _run(self, unit: RunUnit) -> RunOutcome:
        self._checked.result()  # a sandbox that does not work fails every unit the same way
        run = run_properties(
            unit.tree,
            unit.targets,
            unit.seed,
            self._sandbox,
            contract_paths=unit.contract_paths,
            limits=unit.limits,
            layout=unit.layout,
            tests_dir=unit.tests_dir,
            entropy=unit.entropy,
        )
        return RunOutcome(run=run)

    def close(self) -> None:
        # Queued units are dropped; running ones finish (their processes are ours to reap).
        self._pool.shutdown(wait=True, cancel_futures=True)

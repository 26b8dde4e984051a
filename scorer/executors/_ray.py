"""The Ray executor: the same units as the local executor, as Ray tasks on a cluster.

Ray does the scheduling (one CPU per unit), the placement and the retries of a unit whose
worker or node died (``max_retries``); nothing here queues work of its own.

- Start: with no address a local Ray is started for the command (``ray.init(num_cpus=...,
  include_dashboard=False)``) and stopped by :meth:`RayExecutor.close`; with an address we
  connect and only disconnect after. Then every alive node runs the sandbox check
  (``require_sandbox``, the same as ``patchwarden doctor``) pinned to it, and reports its
  patchwarden version; a node that fails, or runs another version, stops the command before
  any work is sent. Each task checks again before it runs (once per worker process).
- Trees: a unit carries commit ids and the restore to apply (``TreeSource``), never files.
  The driver bundles the commits it needs from its scorer clone (``git bundle create``): a
  base commit's history once for every request on that base, and each patch's own commits
  as a thin bundle on top; they go to Ray's object store, and the worker fetches what its
  clone lacks, rebuilds the tree and checks its digest against the plan's before running.
  With the operator's fetch URL for the repository (``TreeSource.fetch_url``) no bundle is
  sent: the worker fetches the commits it lacks from the URL, then rebuilds and checks the
  same way. The URL is used by git on the worker only, never inside a sandbox.
- Held-out properties: the held-out directory's files go to the object store once per
  digest; each node writes them once, read-only, under its state directory and checks the
  digest before each run (``_held_out_files.py``), then mounts them as the local executor does.
- Results: the worker returns the run and any change to its tree copy; it writes nothing to
  the log directory (only the driver does). A failure on the worker comes back as a one-line
  error, never as a traceback in a verdict. The driver collects results on a thread of its
  own (``ray.wait`` with a timeout), never in a callback of ``ObjectRef.future()``: those run
  on Ray's core-worker thread, and the batch's code that a settled unit sets off (progress,
  the next submission) would then call into Ray from Ray's own thread, which deadlocks
  (ray-project/ray#50980; seen as a batch that stopped with its workers idle).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, InvalidStateError
from importlib import metadata
from pathlib import Path
from typing import Any

from patchwarden.sandbox import (
    GitError,
    SandboxConfig,
    SandboxError,
    bundle_commits,
    check_sandbox,
    fetch_commits,
    fetch_from_url,
    git_errors,
    open_repo,
    require_sandbox,
    runner_named,
)

from .._checkout import state_dir
from .._config import ScorerConfig
from .._errors import ConfigError, PatchwardenError
from ._base import Executor, RunOutcome, RunUnit, TreeSource
from ._held_out_files import HeldOutFiles, held_out_on_worker, pack_held_out
from ._trees import rebuilt_tree, tree_digest, worker_clone

PATCHWARDEN_VERSION = metadata.version("patchwarden")
RAY_MISSING = "the ray executor needs Ray: pip install 'patchwarden[ray]'"
RUN_RETRIES = 3
"""Times Ray runs a unit again when its worker process or node dies (not when it fails: a
failed run is data, and an error on the worker is reported, not retried)."""
LOCAL_OBJECT_STORE_BYTES = 256 * 1024 * 1024
"""Object store of a local Ray: it holds the git bundles of the requests in flight."""
KEPT_BUNDLES = 32
"""Bundles the driver keeps for later requests (a base commit's history is the big one, and
requests on one base usually come together)."""
KEPT_HELD_OUT = 4
"""Held-out directories (by digest) the driver keeps in the object store; a batch usually
uses one."""
WAIT_POLL_S = 0.2
"""How long the collecting thread waits in ``ray.wait`` before it looks for units submitted
since (the latency a new unit can add, once, to its own result)."""
NODE_CHECK_TIMEOUT_S = 300.0
"""Time for every node to run the sandbox check (a cold node imports patchwarden first)."""


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(RAY_MISSING, where="--executor ray") from None
    return ray


class RayExecutor(Executor):
    name = "ray"
    remote = True

    def __init__(
        self,
        scorer_config: ScorerConfig,
        sandbox_config: SandboxConfig,
        *,
        address: str | None = None,
        jobs: int | None = None,
    ) -> None:
        ray = _import_ray()
        self._ray = ray
        self._local = address is None
        # Ray would otherwise report usage over the network and print its start-up banner.
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        common: dict[str, Any] = {
            "include_dashboard": False,
            "logging_level": logging.ERROR,
            "log_to_driver": False,
            "ignore_reinit_error": False,
        }
        if address is None:
            ray.init(
                num_cpus=jobs or os.cpu_count() or 1,
                object_store_memory=LOCAL_OBJECT_STORE_BYTES,
                **common,
            )
        else:
            ray.init(address=address, **common)
        try:
            self._jobs = jobs or max(1, int(ray.cluster_resources().get("CPU", 1)))
            self._sandbox_json = sandbox_config.model_dump_json()
            self.import_roots = sandbox_config.import_roots
            self._state_dir = scorer_config.state_dir
            self._task = ray.remote(num_cpus=1, max_retries=RUN_RETRIES)(run_unit_on_worker)
            self._bundles: OrderedDict[tuple[str, str, str | None], Any] = OrderedDict()
            self._held_out: OrderedDict[str, Any] = OrderedDict()
            self._lock = threading.Lock()
            self._pending: dict[Any, Future[RunOutcome]] = {}
            self._submitted = threading.Condition(self._lock)
            self._closing = False
            self._collector = threading.Thread(
                target=self._collect, name="patchwarden-ray-results", daemon=True
            )
            self._scratch = Path(
                tempfile.mkdtemp(prefix="ray-bundles-", dir=state_dir(scorer_config))
            )
            check_nodes(ray, self._sandbox_json)
            self._collector.start()
        except BaseException:
            ray.shutdown()
            raise

    @property
    def jobs(self) -> int:
        return self._jobs

    def submit(self, unit: RunUnit) -> Future[RunOutcome]:
        if unit.source is None:
            raise ValueError("a unit for the ray executor needs its TreeSource")
        held_out = None if unit.tests_dir is None else self._held_out_files(unit.tests_dir)
        bundles = [] if unit.source.fetch_url else self._bundles_for(unit.source)
        ref = self._task.remote(unit, self._sandbox_json, self._state_dir, held_out, *bundles)
        outcome: Future[RunOutcome] = Future()
        with self._submitted:
            if self._closing:
                raise SandboxError("the ray executor is closed", where="--executor ray")
            self._pending[ref] = outcome
            self._submitted.notify()
        return outcome

    def _collect(self) -> None:
        """Settle each unit's future from this thread as its task finishes (see the module
        docstring for why not from Ray's callbacks)."""
        while True:
            with self._submitted:
                while not self._pending and not self._closing:
                    self._submitted.wait()
                if self._closing:
                    orphans = list(self._pending.values())
                    self._pending.clear()
                    break
                refs = list(self._pending)
            error: Exception | None = None
            try:
                ready, _ = self._ray.wait(
                    refs, num_returns=1, timeout=WAIT_POLL_S, fetch_local=False
                )
            except Exception as exc:  # Ray itself is gone: every unit in flight failed
                ready, error = refs, exc
            for ref in ready:
                with self._lock:
                    outcome = self._pending.pop(ref, None)
                if outcome is not None:
                    _settle(outcome, self._ray, ref, error)
        for outcome in orphans:
            if not outcome.done():
                outcome.set_exception(SandboxError("ray task failed: the executor was closed"))

    def _held_out_files(self, directory: Path) -> Any:
        """The object-store ref of the held-out directory's files, one per digest. Packed
        again for every unit (a few test files), so a change to the directory is sent as
        a new digest, never mixed with the old one."""
        files = pack_held_out(directory)
        with self._lock:
            if files.digest not in self._held_out:
                self._held_out[files.digest] = self._ray.put(files)
                while len(self._held_out) > KEPT_HELD_OUT:
                    self._held_out.popitem(last=False)
            self._held_out.move_to_end(files.digest)
            return self._held_out[files.digest]

    def _bundles_for(self, source: TreeSource) -> list[Any]:
        """Object-store refs of the bundles a unit's worker fetches, in order: the base
        commit (the parent) with its history, shared by every request on that base; for a
        patch unit then the patch's own commits on top of it (a thin bundle). A worker
        fetches only what its clone lacks, so a node gets a base's history once."""
        base = source.restore_from or source.sha
        refs = [self._bundle(source.clone, base, None)]
        if source.restore_from is not None:
            clone = open_repo(source.clone)
            with git_errors(source.clone):
                contained = clone.is_ancestor(clone.commit(source.sha), clone.commit(base))
            if not contained:
                refs.append(self._bundle(source.clone, source.sha, base))
        return refs

    def _bundle(self, clone: Path, sha: str, on_top_of: str | None) -> Any:
        key = (str(clone), sha, on_top_of)
        with self._lock:
            if key in self._bundles:
                self._bundles.move_to_end(key)
                return self._bundles[key]
            path = self._scratch / f"{sha}-{on_top_of}.bundle"
            exclude = [on_top_of] if on_top_of else None
            bundle_commits(open_repo(clone), [sha], path, exclude=exclude)
            try:
                ref = self._ray.put(path.read_bytes())
            finally:
                path.unlink(missing_ok=True)
            # Forgetting a ref here frees nothing a queued task still needs: Ray keeps an
            # object while a task that takes it is pending.
            self._bundles[key] = ref
            while len(self._bundles) > KEPT_BUNDLES:
                self._bundles.popitem(last=False)
            return ref

    def close(self) -> None:
        with self._submitted:
            self._closing = True
            self._submitted.notify()
        if self._collector.is_alive():
            self._collector.join()
        try:
            self._ray.shutdown()
            if self._local:  # our own Ray's workers are gone: so may their trees be
                _remove_dead_workers_trees(Path(self._state_dir) / "ray-trees")
        finally:
            with self._lock:
                self._bundles.clear()
                self._held_out.clear()
            if self._scratch.exists():
                for leftover in self._scratch.iterdir():
                    leftover.unlink()
                self._scratch.rmdir()


def _settle(outcome: Future[RunOutcome], ray: Any, ref: Any, error: Exception | None) -> None:
    """Set a unit's future from its finished task's answer (never raises; a future the
    caller cancelled meanwhile stays cancelled)."""
    result: Any = None
    if error is None:
        try:
            result = ray.get(ref)
        except Exception as exc:
            error = exc
    with contextlib.suppress(InvalidStateError):
        if error is not None:
            # Ray's own failure (a node lost after the retries, a cancelled task).
            first = str(error).strip().splitlines()
            outcome.set_exception(
                SandboxError(f"ray task failed: {first[0] if first else type(error).__name__}")
            )
        elif isinstance(result, RunOutcome):
            outcome.set_result(result)
        else:
            kind, message = result
            error_class = {"git": GitError, "sandbox": SandboxError}.get(kind, SandboxError)
            outcome.set_exception(error_class(message))


# -- on the nodes ------------------------------------------------------------------------------


def node_report(sandbox_json: str) -> tuple[str, str, str]:
    """(node address, patchwarden version, "" or why the sandbox does not work there)."""
    config = SandboxConfig.model_validate_json(sandbox_json)
    failed = [c for c in check_sandbox(config) if not c.ok]
    why = f"sandbox check '{failed[0].name}': {failed[0].detail}" if failed else ""
    return _node_address(), PATCHWARDEN_VERSION, why


def check_nodes(ray: Any, sandbox_json: str) -> None:
    """Run the sandbox check on every alive node with CPUs; refuse to start otherwise."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    report = ray.remote(num_cpus=0)(node_report)
    nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU")]
    if not nodes:
        raise SandboxError("the Ray cluster has no alive node with CPUs", where="--executor ray")
    refs = [
        report.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=n["NodeID"], soft=False)
        ).remote(sandbox_json)
        for n in nodes
    ]
    for address, version, why in ray.get(refs, timeout=NODE_CHECK_TIMEOUT_S):
        if why:
            raise SandboxError(f"node {address}: {why}", where="--executor ray")
        if version != PATCHWARDEN_VERSION:
            raise ConfigError(
                f"node {address} runs patchwarden {version}, the driver {PATCHWARDEN_VERSION}",
                where="--executor ray",
            )


def run_unit_on_worker(
    unit: RunUnit,
    sandbox_json: str,
    state_dir: str,
    held_out: HeldOutFiles | None,
    *bundles: bytes,
) -> RunOutcome | tuple[str, str]:
    """One unit on a Ray worker: rebuild its tree from the bundles or the fetch URL (or reuse
    this worker's copy of it), check the digest, run (with the held-out files, written and
    checked on this node, when the unit has them).

    Returns the outcome, or (kind, one-line message) when the unit could not run.
    """
    node = _node_address()
    try:
        config = SandboxConfig.model_validate_json(sandbox_json)
        require_sandbox(config)
        source = unit.source
        assert source is not None
        tree = _worker_trees(state_dir).tree_for(source, bundles)  # makes the state dir 0700
        if tree is None:
            return (
                "sandbox",
                f"node {node}: the {unit.tree_name} tree rebuilt from "
                f"{source.sha[:12]} differs from the planned one; not run",
            )
        tests_dir = None if held_out is None else held_out_on_worker(Path(state_dir), held_out)
        run = runner_named(unit.runner).run(unit.request(tree, config, tests_dir))
        drift: tuple[str, ...] = ()
        if tree_digest(tree) != source.digest:
            _worker_trees(state_dir).drop(source)
            drift = (f"{unit.tree_name}: the tree changed during the run (seed {unit.seed})",)
        return RunOutcome(run=run, drift=drift, where=node)
    except GitError as exc:
        return ("git", f"node {node}: {exc}")
    except PatchwardenError as exc:
        return ("sandbox", f"node {node}: {exc}")


WORKER_TREES = 4
"""Rebuilt trees a worker process keeps: a request's parent serves three seeds and the
patch's restore, so a few cover the requests in flight."""

_trees_of_this_process: dict[str, WorkerTrees] = {}


def _worker_trees(state_dir: str) -> WorkerTrees:
    if state_dir not in _trees_of_this_process:
        _trees_of_this_process[state_dir] = WorkerTrees(state_dir)
    return _trees_of_this_process[state_dir]


class WorkerTrees:
    """The trees one worker process rebuilt, by digest, reused by later units (mounted
    read-only, as the local executor shares a tree between seeds). They live under
    ``<state>/ray-trees/<pid>``; a worker process that was killed leaves its directory
    behind, and the next worker on the node removes it."""

    def __init__(self, state_dir: str) -> None:
        self._clones = ScorerConfig(state_dir=state_dir)
        root = Path(state_dir) / "ray-trees"
        _remove_dead_workers_trees(root)
        self._own = ScorerConfig(state_dir=str(root / str(os.getpid())))
        self._trees: OrderedDict[str, tuple[contextlib.ExitStack, Path]] = OrderedDict()

    def tree_for(self, source: TreeSource, bundles: Sequence[bytes]) -> Path | None:
        """The tree ``source`` describes, or None when the rebuilt one has another digest."""
        if source.digest in self._trees:
            self._trees.move_to_end(source.digest)
            return self._trees[source.digest][1]
        clone = worker_clone(self._clones, source)
        shas = [source.sha] + ([source.restore_from] if source.restore_from else [])
        if source.fetch_url is not None:
            fetch_from_url(clone, source.fetch_url, shas)
        for bundle in bundles:  # the base first: a thin bundle needs its commits
            with tempfile.NamedTemporaryFile(suffix=".bundle", dir=clone.git_dir) as handle:
                handle.write(bundle)
                handle.flush()
                fetch_commits(clone, Path(handle.name), shas)
        stack = contextlib.ExitStack()
        try:
            tree = stack.enter_context(rebuilt_tree(clone, source, self._own))
            if tree_digest(tree) != source.digest:
                stack.close()
                return None
        except BaseException:
            stack.close()
            raise
        self._trees[source.digest] = (stack, tree)
        while len(self._trees) > WORKER_TREES:
            _, (oldest, _) = self._trees.popitem(last=False)
            oldest.close()
        return tree

    def drop(self, source: TreeSource) -> None:
        entry = self._trees.pop(source.digest, None)
        if entry is not None:
            entry[0].close()


def _remove_dead_workers_trees(root: Path) -> None:
    if not root.is_dir():
        return
    for entry in root.iterdir():
        if entry.name.isdigit() and not Path(f"/proc/{entry.name}").exists():
            shutil.rmtree(entry, ignore_errors=True)


def _node_address() -> str:
    try:
        from ray.util import get_node_ip_address
    except ImportError:  # not on a Ray node
        return socket.gethostname()
    return str(get_node_ip_address())  # type: ignore[no-untyped-call]

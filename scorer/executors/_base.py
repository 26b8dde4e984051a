"""What an executor runs, what it returns, and the interface every executor has.

Scoring is three phases (docs/design/scoring.md): a *plan* (commits, trees, restore, the
checks that need no runs), the *runs* (independent units: one tree, one seed, every property,
in one sandboxed process), and the *decision* (gate, scorecard, bundle). Only the middle one
is the executor's: it takes :class:`RunUnit` objects and answers each with a
:class:`RunOutcome` through a ``concurrent.futures.Future``, so a driver can keep units of
many requests in flight and finish each request as soon as its own units are done.

Executors (SWE-ReX style, one module per backend): ``local`` (threads, each waiting on one
sandboxed process on this machine) and ``ray`` (Ray tasks on a cluster).
"""

from __future__ import annotations

import abc
import secrets
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from patchwarden.sandbox import (
    DEFAULT_RUNNER,
    DEFAULT_SEED_ENV,
    ImportLayout,
    Limits,
    PropertyRun,
    PropertyTarget,
    RunEntropy,
    RunRequest,
    SandboxConfig,
)

UnitKey = tuple[str, int]
"""(run name, seed): a unit's place in one request's schedule. The run name is the tree's
(``parent``, ``patch``) for the contract's schedule, and ``group:tree`` for a group the
agent never sees (``held_out:patch``, ``extra_seeds:parent``; scorer/_groups.py)."""
CONTRACT_GROUP = "contract"


@dataclass(frozen=True)
class TreeSource:
    """How a worker elsewhere rebuilds the tree a unit runs on, byte for byte.

    A fresh checkout of ``sha`` from the scorer's clone; for the patch tree the guarded paths
    are then restored from a checkout of ``restore_from`` (the same ``restore_from_parent``
    the plan ran); bytecode is removed. The result must hash to ``digest`` (the plan's own
    tree, see :func:`tree_digest`), or the unit fails closed.
    """

    repo_key: str
    """Names the worker's own clone of the repository."""
    clone: Path
    """The driver's scorer clone, where bundles of the needed commits are made."""
    sha: str
    restore_from: str | None
    contract_paths: tuple[str, ...]
    protected_paths: tuple[str, ...]
    digest: str
    fetch_url: str | None = None
    """The operator's URL the worker fetches ``sha`` (and ``restore_from``) from; None: the
    driver sends them as git bundles. The URL never reaches a sandbox."""


@dataclass(frozen=True)
class RunUnit:
    """One sandboxed run: one tree of one request, one seed, every scheduled property."""

    label: str
    """Who it is for, for progress lines and errors (a request id, or the patch sha)."""
    tree_name: str
    seed: int
    tree: Path
    """The planned tree on the driver's machine (mounted read-only)."""
    targets: tuple[PropertyTarget, ...]
    contract_paths: tuple[str, ...]
    limits: Limits
    source: TreeSource | None = None
    """Set when the plan was made for an executor that runs elsewhere."""
    layout: ImportLayout | None = None
    """Where the project's code is imported from: the parent's, for both trees (None: read
    from the tree the unit runs on)."""
    group: str = CONTRACT_GROUP
    """The run group (scorer/_groups.py): the contract's schedule, extra seeds, held-out."""
    tests_dir: Path | None = None
    """A held-out directory the targets' tests live in, mounted read-only apart from the tree
    (a remote executor ships its files to the workers); None: the tests are the tree's."""
    runner: str = DEFAULT_RUNNER
    """The contract's runner (sandbox ``RUNNERS``): what runs the targets."""
    seed_env: str = DEFAULT_SEED_ENV
    """The environment variable the seed reaches the tests in (runners that use one)."""
    entropy: RunEntropy | None = None
    """The hash seed and ``random`` seed of the run's processes, from the score's secret
    (scorer/_seeds.py): the same for the parent's and the patch's unit of one seed. None:
    drawn fresh by the run."""
    recheck: bool = False
    """A run, in-process, of properties that failed isolated on both trees of this seed
    (scorer/_recheck.py): the operator's oracle setting is overridden for it alone."""

    def request(self, tree: Path, config: SandboxConfig, tests_dir: Path | None) -> RunRequest:
        """What the unit's runner is asked, on ``tree`` (the planned one, or a worker's
        rebuild of it)."""
        if self.recheck:
            config = config.model_copy(update={"oracle": "in-process"})
        return RunRequest(
            tree=tree,
            targets=self.targets,
            seed=self.seed,
            config=config,
            contract_paths=self.contract_paths,
            limits=self.limits,
            layout=self.layout,
            tests_dir=tests_dir,
            seed_env=self.seed_env,
            entropy=self.entropy,
        )

    @property
    def key(self) -> UnitKey:
        if self.group == CONTRACT_GROUP:
            return (self.tree_name, self.seed)
        return (f"{self.group}:{self.tree_name}", self.seed)


@dataclass(frozen=True)
class RunOutcome:
    """A unit's run, and what the executor saw of its tree."""

    run: PropertyRun
    drift: tuple[str, ...] = ()
    """Changes to the tree the run saw (a remote worker checks its own copy; locally the
    plan's trees are checked once after every run, in the decision phase)."""
    where: str = "local"
    """The machine that ran it (a Ray node's address, or ``local``)."""
    run_id: str = field(default_factory=lambda: secrets.token_hex(8))
    """Names this run in the evidence: ``score-batch`` gives one run to every request
    whose unit had the very same inputs, and their bundles show the same id."""


class Executor(abc.ABC):
    """Runs units; every unit submitted gets exactly one outcome or one exception."""

    name: str = "executor"
    remote: bool = False
    """Units run on other machines, so plans must describe their trees (``TreeSource``)."""
    import_roots: tuple[str, ...] | None = None
    """The operator's ``sandbox.import_roots`` of the sandbox the units run in: plans read
    the parent's import layout with it."""

    @property
    @abc.abstractmethod
    def jobs(self) -> int:
        """How many units run at once."""

    @abc.abstractmethod
    def submit(self, unit: RunUnit) -> Future[RunOutcome]:
        """Queue one unit; the future holds its outcome, or the error that stopped it."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop taking work and release what the executor holds."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def collect(futures: Mapping[UnitKey, Future[RunOutcome]]) -> dict[UnitKey, RunOutcome]:
    """The outcomes of one request's units; the first error in schedule order is raised,
    after every unit has finished (nothing of the request is left running)."""
    for future in futures.values():
        future.exception()  # waits, without raising yet
    return {key: future.result() for key, future in futures.items()}

"""Clean checkouts for the scorer's own pytest runs: sweeps, release checks, freezes.

Every run gets a fresh worktree of one commit, made from the scorer's scratch
clone in its state directory (the same clone ``score`` uses), so no run sees
what an earlier run left behind and the user's working tree is never touched.
Tests run with the agent's profile (the project's own pytest configuration,
``run_agent_tests``), because the sweep and the freeze procedure judge the
tests the agent's feedback loop runs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import git

from patchwarden._treepaths import tree_path_problem
from patchwarden.sandbox import (
    AgentRun,
    Limits,
    SandboxConfig,
    fetch_commits,
    file_at,
    new_tree_parent,
    open_worktree,
    prepare_writable_tree,
    repo_root,
    run_agent_tests,
    scratch_clone,
)

from ._config import ScorerConfig
from ._contract import Contract, load_contract, parse_contract
from ._errors import ContractError, PatchwardenError
from ._faults import pause_point
from ._fixtures import parse_manifest
from ._hashing import hash_json

AGENT_PYTEST_ARGS = ("-p", "no:cacheprovider", "-v")
"""What the agent's ``run_tests`` passes before its own selection (server/tools/_run_tests.py)."""


def state_dir(config: ScorerConfig) -> Path:
    """The scorer's state directory, created with mode 0700."""
    state = Path(config.state_dir)
    state.mkdir(parents=True, exist_ok=True)
    os.chmod(state, 0o700)
    return state


def envs_dir(config: ScorerConfig) -> Path:
    """Where ``env build`` keeps the projects' environments (inside the state directory)."""
    return state_dir(config) / "envs"


def repo_key(repo: Path) -> str:
    """A short stable name for a repository in the state directory."""
    return hash_json(str(repo.resolve()))[7:23]


def scorer_clone(repo: Path, shas: Sequence[str], config: ScorerConfig) -> git.Repo:
    """The scorer's bare clone of ``repo``, holding every commit in ``shas``."""
    source = repo.resolve()
    # Fetched only when a commit is missing: a fetch costs a tenth of a second or more, and
    # scoring many patches of one repository would pay it every time.
    clone = scratch_clone(source, state_dir(config) / "clones" / repo_key(source), refresh=False)
    fetch_commits(clone, source, list(shas))
    pause_point("clone")
    return clone


@contextlib.contextmanager
def clean_checkout(clone: git.Repo, sha: str, config: ScorerConfig) -> Iterator[Path]:
    """A fresh worktree of ``sha`` under a random name in the trees directory (its host path
    is visible to the runs; see sandbox/_trees.py), removed on exit."""
    work = new_tree_parent(config.trees_dir)
    try:
        with open_worktree(clone, sha, work / "tree") as tree:
            yield tree
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_pytest_once(
    clone: git.Repo,
    sha: str,
    pytest_args: Sequence[str],
    seed: int,
    config: ScorerConfig,
    sandbox_config: SandboxConfig,
    *,
    contract_paths: Sequence[str] = (),
    limits: Limits | None = None,
    prepare: Callable[[Path], None] | None = None,
) -> AgentRun:
    """One sandboxed pytest process (agent profile) on a fresh checkout of ``sha``.

    ``prepare`` may change the checkout before the run (e.g. put a frozen
    fixture in place); it runs before the tree is handed to the sandbox uid.
    """
    with clean_checkout(clone, sha, config) as tree:
        if prepare is not None:
            prepare(tree)
        prepare_writable_tree(tree, sandbox_config)
        return run_agent_tests(
            tree,
            [*AGENT_PYTEST_ARGS, *pytest_args],
            seed,
            sandbox_config,
            contract_paths=contract_paths,
            limits=limits,
        )


def contract_at(repo: Path, sha: str, contract: str) -> tuple[Contract, str]:
    """The contract committed at ``sha`` and its tree path."""
    if tree_path_problem(contract):
        raise ContractError("the contract must be a path inside the repository", where=contract)
    rel = Path(contract)
    data = file_at(repo, sha, rel.as_posix())
    if data is None:
        raise ContractError(f"contract not found in commit {sha[:12]}", where=contract)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ContractError("contract is not UTF-8 text", where=contract) from None
    return parse_contract(text, f"{sha[:12]}:{rel.as_posix()}"), rel.as_posix()


def working_tree(repo: Path) -> Path:
    """The top of ``repo``'s working tree (where operator-reviewed files are written)."""
    return repo_root(repo)


def read_contract_at(repo: Path, sha: str, contract: str) -> tuple[Contract, str | None]:
    """The contract as committed at ``sha`` (with its tree path), else an operator's file
    on disk (tree path None)."""
    try:
        return contract_at(repo, sha, contract)
    except ContractError:
        if not Path(contract).is_file():
            raise
    return load_contract(Path(contract)), None


def read_only_paths_at(
    repo: Path, sha: str, contract: Contract, contract_file: str | None
) -> list[str]:
    """Every contract path (docs/design/contract.md) at ``sha``, the manifest's fixtures
    included."""
    fixtures: list[str] = []
    if contract.fixture_manifest:
        data = file_at(repo, sha, contract.fixture_manifest)
        if data is not None:
            where = f"{sha[:12]}:{contract.fixture_manifest}"
            manifest = parse_manifest(data.decode("utf-8", "replace"), where)
            fixtures = [entry.fixture for entry in manifest.fixtures]
    return contract.contract_paths(contract_file, fixtures=fixtures)


def working_copy_note(repo: Path, sha: str, contract: str) -> str:
    """One line when the working tree's copy of the contract differs from the one committed
    at ``sha``, which the command reads (empty when they agree, or there is no copy)."""
    if tree_path_problem(contract):
        return ""
    committed = file_at(repo, sha, contract)
    if committed is None:
        return ""
    try:
        current = (repo_root(repo) / contract).read_bytes()
    except (OSError, PatchwardenError):
        return ""
    if current == committed:
        return ""
    return (
        f"{contract} in the working tree differs from the one committed at {sha[:12]}; "
        "this uses the committed one (commit the change to use it)"
    )

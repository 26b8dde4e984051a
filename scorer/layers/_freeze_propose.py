"""``freeze propose``: the five steps that may lead to a freeze record
(docs/design/contract-layers.md).

In order, stopping at the first reject, and adding no record before step 5
accepts:

1. copy the fixture (as committed at HEAD) into ``.freeze/`` and record its
   SHA-256 before any test process starts; re-hash the copy;
2. run the test id twice, each in its own sandboxed process on a clean
   checkout of HEAD whose contract and protected paths are restored from
   HEAD^ (tests come from the parent, as in ``score``): exit 0 = passed,
   exit 5 = a selection error (reject), anything else = failed; the runs
   must disagree;
3. resolve the oracle's blob at HEAD^ and confirm the patch does not touch it;
4. run HEAD^'s property file against the copied fixture (every contract
   seed): a failing property blocks the freeze;
5. write the record and check it (``check_freeze_record``); only a record
   that holds is put in place, for a human to review.

Nothing is ever skipped here: the outcome is ``proposed_for_review`` or
``rejected`` with the reason.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from patchwarden._treepaths import tree_path_problem
from patchwarden.sandbox import (
    AgentRun,
    SandboxConfig,
    blob_id_at,
    changed_paths,
    file_at,
    first_parent,
    prepare_writable_tree,
    resolve_commit,
    run_agent_ctest,
)

from .._checkout import (
    clean_checkout,
    contract_at,
    read_only_paths_at,
    run_pytest_once,
    scorer_clone,
    working_tree,
)
from .._config import ScorerConfig
from .._contract import DEFAULT_CONTRACT_PATH, FREEZE_DIR, Contract
from .._errors import ContractError, InputError, PatchwardenError
from .._fixtures import Manifest, parse_manifest
from .._hashing import sha256_bytes, sha256_file
from ..checks._restore import restore_from_parent  # checks reads layers: no cycle via the facade
from ._freeze import (
    DEFAULT_RECORD,
    SELECTION_ERROR_EXIT,
    FreezeRecord,
    RunEvidence,
    check_freeze_record,
    node_id_problem,
)
from ._quarantine import utc_stamp, write_json_atomic

Status = Literal["proposed_for_review", "rejected"]
STAGED_RECORD = f"{FREEZE_DIR}/.record.proposed.json"
PROPOSALS_DIR = "freeze"
"""Under the log directory: one directory per ``request_freeze`` from an agent."""


class FreezeProposal(BaseModel):
    """The outcome of the procedure; ``summary()`` is all an agent sees."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: Status
    reason: str
    """One line: the field and why (rejected), or where the record is (proposed)."""
    step: int
    """The step that rejected, or 5 when the record was proposed."""
    steps: list[str]
    """One line per step that ran, for the reviewer."""
    record: str = ""
    """Host path of the proposed record (empty when rejected)."""

    def summary(self) -> dict[str, str]:
        return {"status": self.status, "reason": self.reason}


class _Rejected(Exception):
    def __init__(self, step: int, line: str) -> None:
        super().__init__(line)
        self.step = step
        self.line = line


@dataclass
class _Context:
    repo: Path
    head: str
    parent: str | None
    test_id: str
    fixture: str
    oracle: str
    out_root: Path
    contract: Contract | None
    contract_paths: list[str]
    config: ScorerConfig
    sandbox_config: SandboxConfig
    on_step: Callable[[str], None]
    steps: list[str] = field(default_factory=list)
    """One line per step that held, for the reviewer."""
    created: list[Path] = field(default_factory=list)
    """What this proposal wrote, removed again if it is rejected."""

    def say(self, line: str) -> None:
        self.steps.append(line)
        self.on_step(line)

    @property
    def seeds(self) -> list[int]:
        return list(self.contract.seeds) if self.contract else [0]

    @property
    def runner(self) -> str:
        return self.contract.runner if self.contract else "pytest"


def _run_once(
    ctx: _Context,
    clone: Any,
    sha: str,
    tests: list[str],
    seed: int,
    prepare: Callable[[Path], None] | None,
) -> AgentRun:
    """One sandboxed run of ``tests`` on a fresh checkout of ``sha``, by the contract's
    runner (docs/design/runners.md): pytest node ids, or ctest test names built with CMake
    (its build cached by content) and run with the seed in the contract's ``seed_env``."""
    if ctx.runner != "ctest" or ctx.contract is None:
        return run_pytest_once(
            clone,
            sha,
            tests,
            seed,
            ctx.config,
            ctx.sandbox_config,
            contract_paths=ctx.contract_paths,
            prepare=prepare,
        )
    with clean_checkout(clone, sha, ctx.config) as tree:
        if prepare is not None:
            prepare(tree)
        prepare_writable_tree(tree, ctx.sandbox_config)
        return run_agent_ctest(
            tree,
            seed,
            ctx.sandbox_config,
            seed_env=ctx.contract.seed_env,
            tests=tests,
            limits=ctx.config.run_limits,
        )


def _relative_path(value: str, what: str) -> str:
    if tree_path_problem(value):
        raise InputError(f"{what} must be a path inside the repository, got {value!r}")
    return PurePosixPath(value).as_posix()


def _safe_target(root: Path, rel: str) -> Path:
    """``root/rel`` with no symlink on the way (a planted link must not redirect our writes)."""
    path = root
    for part in PurePosixPath(rel).parts:
        path = path / part
        if path.is_symlink():
            raise _Rejected(1, f"fixture_path: {path} is a symlink; refusing to write through it")
    return path


def _write_copy(ctx: _Context, data: bytes) -> Path:
    rel = f"{FREEZE_DIR}/{ctx.fixture}"
    target = _safe_target(ctx.out_root, rel)
    missing = [p for p in [*reversed(target.parents)] if not p.exists()]
    target.parent.mkdir(parents=True, exist_ok=True)
    ctx.created.extend(p for p in missing if p != target)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    with os.fdopen(os.open(target, flags, 0o644), "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    ctx.created.append(target)
    return target


def _step1_fixture(ctx: _Context) -> tuple[str, str]:
    """Copy the fixture; return (copy path relative to out_root, its digest)."""
    data = file_at(ctx.repo, ctx.head, ctx.fixture)
    if data is None:
        raise _Rejected(1, f"fixture_path: {ctx.fixture} is not a file in HEAD")
    digest = sha256_bytes(data)  # recorded before any test process starts
    copy = _write_copy(ctx, data)
    again = sha256_file(copy)
    if again != digest:
        raise _Rejected(1, f"fixture_sha256: the copy hashes {again}, the fixture {digest}")
    rel = copy.relative_to(ctx.out_root).as_posix()
    ctx.say(f"step 1 fixture: {ctx.fixture} copied to {rel} (sha256 {digest})")
    return rel, digest


def _evidence(run: AgentRun) -> RunEvidence:
    code = run.process.exit_code
    if code is None:
        why = "cancelled" if run.process.cancelled else "killed at a time limit"
        raise _Rejected(2, f"disagreement: a run of {run.process.argv[-1]} was {why}")
    return RunEvidence(passed=code == 0, exit_code=code)


@contextlib.contextmanager
def _restoring_parent(ctx: _Context) -> Iterator[Callable[[Path], None] | None]:
    """A ``prepare`` that makes a HEAD checkout's contract and protected paths HEAD^'s."""
    if ctx.parent is None:
        yield None
        return
    clone = scorer_clone(ctx.repo, [ctx.parent], ctx.config)
    with clean_checkout(clone, ctx.parent, ctx.config) as parent_tree:

        def restore(tree: Path) -> None:
            restore_from_parent(parent_tree, tree, ctx.contract_paths, ctx.config.protected_paths)

        yield restore


def _step2_runs(ctx: _Context, copy: Path, digest: str) -> list[RunEvidence]:
    clone = scorer_clone(ctx.repo, [ctx.head], ctx.config)
    runs: list[RunEvidence] = []
    with _restoring_parent(ctx) as restore:
        for _ in range(2):
            agent_run = _run_once(ctx, clone, ctx.head, [ctx.test_id], ctx.seeds[0], restore)
            if ctx.runner == "ctest" and not any(
                o.node_id == ctx.test_id for o in agent_run.outcomes
            ):
                raise _Rejected(
                    2, f"disagreement: ctest ran no test named {ctx.test_id} (a selection error)"
                )
            runs.append(_evidence(agent_run))
    for number, evidence in enumerate(runs, start=1):
        if evidence.exit_code == SELECTION_ERROR_EXIT:
            raise _Rejected(
                2,
                f"disagreement: run {number} exit code 5 is a selection error "
                "(no test collected), not a flake",
            )
    if runs[0].passed == runs[1].passed:
        both = "passed" if runs[0].passed else "failed"
        codes = f"{runs[0].exit_code}, {runs[1].exit_code}"
        raise _Rejected(2, f"disagreement: both runs {both} (exit codes {codes}): no flake")
    if sha256_file(copy) != digest:
        raise _Rejected(2, "fixture_sha256: the copy's digest changed between runs")
    codes = ", ".join(f"{'passed' if r.passed else 'failed'} (exit {r.exit_code})" for r in runs)
    ctx.say(f"step 2 runs: {codes}")
    return runs


def _step3_oracle(ctx: _Context) -> str:
    if ctx.parent is None:
        raise _Rejected(
            3, "oracle_path: HEAD^ is not available (root commit or shallow clone); failing closed"
        )
    blob = blob_id_at(ctx.repo, ctx.parent, ctx.oracle)
    if blob is None:
        raise _Rejected(3, f"oracle_path: missing at HEAD^: {ctx.oracle}")
    if ctx.oracle in changed_paths(ctx.repo, ctx.parent, ctx.head):
        raise _Rejected(
            3, f"oracle_blob: {ctx.oracle} is in the patch's diff (git diff --name-only HEAD^ HEAD)"
        )
    ctx.say(f"step 3 oracle: {ctx.oracle} is blob {blob} at HEAD^, untouched by the patch")
    return blob


def _step4_property(ctx: _Context, copy: Path) -> None:
    assert ctx.parent is not None  # step 3 rejected otherwise
    frozen = copy.read_bytes()
    clone = scorer_clone(ctx.repo, [ctx.parent], ctx.config)

    def put_fixture(tree: Path) -> None:
        target = tree / ctx.fixture
        if target.is_symlink():
            target.unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(frozen)

    # pytest runs the property file; ctest, the contract's tests that the fixture covers
    # (its manifest's ``covers``; all the contract's properties when it names none).
    checks = [ctx.oracle] if ctx.runner != "ctest" else _ctest_checks(ctx)
    for seed in ctx.seeds:
        run = _run_once(ctx, clone, ctx.parent, checks, seed, put_fixture)
        failing = [o.node_id for o in run.outcomes if o.outcome in ("failed", "error")]
        passed = [o for o in run.outcomes if o.outcome == "passed"]
        code = run.process.exit_code
        if code != 0 or failing or not passed:
            detail = f"exit code {code}" + (f", {len(failing)} failing" if failing else "")
            raise _Rejected(
                4,
                f"oracle_path: {ctx.oracle} fails on HEAD^ against the frozen fixture "
                f"(seed {seed}: {detail})",
            )
    what = ctx.oracle if ctx.runner != "ctest" else f"{ctx.oracle} (ctest {', '.join(checks)})"
    ctx.say(f"step 4 property: {what} holds on HEAD^ with the frozen fixture")


def _ctest_checks(ctx: _Context) -> list[str]:
    """The ctest tests that check the fixture on a ctest contract: the properties its
    manifest entry covers, else every property of the contract."""
    assert ctx.contract is not None and ctx.parent is not None
    manifest = _manifest_at(ctx.repo, ctx.parent, ctx.contract)
    covers = {
        prop
        for entry in (manifest.fixtures if manifest else [])
        if entry.fixture == ctx.fixture
        for prop in entry.covers
    }
    chosen = [p.test for p in ctx.contract.properties if not covers or p.id in covers]
    return chosen or [p.test for p in ctx.contract.properties]


def _step5_record(ctx: _Context, record: FreezeRecord) -> Path:
    staged = ctx.out_root / STAGED_RECORD
    write_json_atomic(staged, record.model_dump(mode="json"))
    ctx.created.append(staged)
    problems = check_freeze_record(
        record.model_dump(mode="json"),
        repo=ctx.repo,
        head=ctx.head,
        fixture_root=ctx.out_root,
        config=ctx.config,
        sandbox_config=ctx.sandbox_config,
        contract_paths=ctx.contract_paths,
    )
    if problems:
        raise _Rejected(5, "; ".join(p.line() for p in problems))
    final = ctx.out_root / DEFAULT_RECORD
    os.replace(staged, final)
    ctx.created.remove(staged)
    ctx.say(f"step 5 check: every field holds; record written to {final}")
    return final


def _undo(created: list[Path]) -> None:
    """Remove what a rejected proposal wrote (files, then the directories it made)."""
    for path in reversed(created):
        if path.is_dir() and not path.is_symlink():
            with contextlib.suppress(OSError):  # not empty: something else lives there
                path.rmdir()
        else:
            path.unlink(missing_ok=True)


def _load_contract(
    repo: Path, head: str, parent: str | None, contract: str | None
) -> tuple[Contract | None, list[str]]:
    """The contract (from HEAD^, else HEAD) and its paths; none is fine unless named."""
    name = contract or DEFAULT_CONTRACT_PATH
    for sha in (parent, head):
        if sha is None:
            continue
        try:
            found, rel = contract_at(repo, sha, name)
        except ContractError:
            continue
        return found, read_only_paths_at(repo, sha, found, rel)
    if contract is not None:
        raise ContractError("contract not found at HEAD^ nor at HEAD", where=contract)
    return None, [FREEZE_DIR]


def propose_freeze(
    repo: Path,
    test_id: str,
    fixture: str,
    oracle: str,
    config: ScorerConfig,
    sandbox_config: SandboxConfig,
    *,
    head: str = "HEAD",
    contract: str | None = None,
    out_root: Path | None = None,
    reason: str = "",
    say: Callable[[str], None] = lambda line: None,
) -> FreezeProposal:
    """Run the five steps for ``test_id``; the record goes to ``out_root/.freeze/record.json``
    (default: the repository's working tree) only when step 5 accepts."""
    problem = node_id_problem(test_id)
    if problem:
        raise InputError(f"--test-id {problem}, got {test_id!r}")
    top = working_tree(repo) if out_root is None else Path(repo).resolve()
    root = (out_root or top).resolve()
    if (root / DEFAULT_RECORD).exists():
        raise InputError(
            "a freeze record already exists (one record per repository: review or remove it)",
            where=str(root / DEFAULT_RECORD),
        )
    head_sha = resolve_commit(top, head)
    parent = first_parent(top, head_sha)
    found, contract_paths = _load_contract(top, head_sha, parent, contract)
    ctx = _Context(
        repo=top,
        head=head_sha,
        parent=parent,
        test_id=test_id,
        fixture=_relative_path(fixture, "--fixture"),
        oracle=_relative_path(oracle, "--oracle"),
        out_root=root,
        contract=found,
        contract_paths=contract_paths,
        config=config,
        sandbox_config=sandbox_config,
        on_step=say,
    )
    try:
        copy_rel, digest = _step1_fixture(ctx)
        copy = root / copy_rel
        runs = _step2_runs(ctx, copy, digest)
        blob = _step3_oracle(ctx)
        _step4_property(ctx, copy)
        record = FreezeRecord(
            test_id=test_id,
            fixture_path=copy_rel,
            fixture_sha256=digest,
            disagreement=runs,
            oracle_path=ctx.oracle,
            oracle_blob=blob,
            notes={
                "fixture_source": ctx.fixture,
                "head": head_sha,
                "parent": parent or "",
                "proposed_at": utc_stamp(),
                "reason": reason,
            },
        )
        final = _step5_record(ctx, record)
    except BaseException as exc:
        _undo(ctx.created)
        if isinstance(exc, _Rejected):
            return FreezeProposal(
                status="rejected", reason=exc.line, step=exc.step, steps=ctx.steps
            )
        raise
    return FreezeProposal(
        status="proposed_for_review",
        reason="freeze record proposed for review; a reviewer decides",
        step=5,
        steps=ctx.steps,
        record=str(final),
    )


def _manifest_at(repo: Path, sha: str, contract: Contract) -> Manifest | None:
    if not contract.fixture_manifest:
        return None
    data = file_at(repo, sha, contract.fixture_manifest)
    if data is None:
        return None
    where = f"{sha[:12]}:{contract.fixture_manifest}"
    return parse_manifest(data.decode("utf-8", "replace"), where)


def derive_fixture_and_oracle(
    repo: Path, parent: str, test_id: str, contract: Contract
) -> tuple[str, str]:
    """The pinned fixture and property file a freeze of ``test_id`` is checked against,
    when the contract leaves exactly one choice (an agent cannot name them)."""
    manifest = _manifest_at(repo, parent, contract)
    if manifest is None or not manifest.fixtures:
        raise InputError("the contract pins no fixture to freeze against")
    entries = manifest.fixtures
    if len(entries) > 1:
        test_file = test_id.split("::", 1)[0]
        by_prop = {p.id: p.test.split("::", 1)[0] for p in contract.properties}
        entries = [e for e in entries if any(by_prop.get(c) == test_file for c in e.covers)]
        if len(entries) != 1:
            raise InputError(
                "several pinned fixtures; an operator must choose one "
                "(patchwarden freeze propose --fixture)"
            )
    entry = entries[0]
    files = sorted({p.test.split("::", 1)[0] for p in contract.properties if p.id in entry.covers})
    if not files:
        files = sorted({p.test.split("::", 1)[0] for p in contract.properties})
    if len(files) != 1:
        raise InputError(
            "the fixture is checked by several property files; an operator must choose one "
            "(patchwarden freeze propose --oracle)"
        )
    return entry.fixture, files[0]


def propose_freeze_record(
    repo: Path,
    patch_sha: str,
    test_id: str,
    config: ScorerConfig,
    sandbox_config: SandboxConfig,
    *,
    contract: str = DEFAULT_CONTRACT_PATH,
    reason: str = "",
    fixture: str | None = None,
    oracle: str | None = None,
) -> FreezeProposal:
    """The freeze procedure for the scorer process (MCP ``request_freeze``).

    HEAD is ``patch_sha``, HEAD^ its parent. The record and the fixture copy
    go to ``<log_dir>/freeze/<id>/.freeze/`` for a reviewer (never into the
    agent's tree), with ``proposal.json`` holding the outcome and each step.
    Without ``fixture``/``oracle`` they come from the contract when it leaves
    one choice. Never skips anything; any problem is a ``rejected``.
    """
    out_root = Path(config.log_dir) / PROPOSALS_DIR / _proposal_id(patch_sha)
    out_root.mkdir(parents=True, exist_ok=False)
    try:
        if fixture is None or oracle is None:
            parent = first_parent(repo, patch_sha)
            if parent is None:
                raise InputError("the patch has no parent commit; failing closed")
            contract_obj, _ = contract_at(repo, parent, contract)
            derived = derive_fixture_and_oracle(repo, parent, test_id, contract_obj)
            fixture, oracle = fixture or derived[0], oracle or derived[1]
        proposal = propose_freeze(
            repo,
            test_id,
            fixture,
            oracle,
            config,
            sandbox_config,
            head=patch_sha,
            contract=contract,
            out_root=out_root,
            reason=reason,
        )
    except PatchwardenError as exc:
        proposal = FreezeProposal(status="rejected", reason=exc.message, step=0, steps=[])
    write_json_atomic(
        out_root / "proposal.json",
        {
            "test_id": test_id,
            "patch_sha": patch_sha,
            "agent_reason": reason,
            **proposal.model_dump(mode="json"),
        },
    )
    return proposal


def _proposal_id(patch_sha: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{patch_sha[:10]}-{secrets.token_hex(2)}"

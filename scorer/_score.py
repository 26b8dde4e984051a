"""``score``: both trees, every seed, the gate, the scorecard, the evidence.

Three phases, in a fixed order (docs/design/scoring.md):

- plan (:func:`plan_score`): resolve commits → scratch clone → worktrees → restore contract
  and protected paths of the patch tree from the parent → guard fixtures → hashes and the
  resolved contract → snapshot → the run units;
- runs: an executor (``scorer/executors``) runs every unit (tree, seed) in its own sandboxed
  process, trees read-only;
- decide (:func:`finish_score`): guard fixtures again and check the trees are unchanged →
  save the rows → decide → scorecard → publish the bundle.

``score`` is the three in a row for one request; ``score-batch`` (scorer/_batch.py) keeps
many requests' units in one executor.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import itertools
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from pathlib import Path

import git

from patchwarden.sandbox import (
    ImportLayout,
    PropertyRun,
    PropertyTarget,
    SandboxConfig,
    detect_layout,
    diff_changes,
    file_at,
    require_sandbox,
    resolve_commit,
)

from ._bundle import BundleWriter
from ._checkout import clean_checkout, repo_key, scorer_clone
from ._config import ScorerConfig
from ._contract import (
    Contract,
    compute_fixture_closure_hash,
    compute_spec_hash,
    load_contract,
    manifest_fixtures,
)
from ._errors import ContractError, InputError
from ._faults import pause_point
from ._groups import (
    RunGroup,
    combine_decisions,
    extra_seeds_gate,
    hidden_decision,
    hidden_json,
    hidden_note,
    plan_groups,
    split_run_name,
)
from ._held_out import HeldOut, load_held_out
from ._index import IndexLine, derive_decided_by, review_findings
from ._pinning import Pinning, Submit, pin_boundaries
from ._recheck import recheck, reconcile
from ._seeds import SEEDS_FILE, ScoreSecret, seeds_record
from .checks import (
    Change,
    Check,
    PlanContext,
    ScoreContext,
    SourceChange,
    check_lines,
    final_decision,
    fixture_drifts,
    matches,
    property_inputs_in,
    remove_bytecode,
    restore_from_parent,
    run_before_runs,
    run_scorecard,
    snapshot,
    under,
)
from .executors import (
    Executor,
    LocalExecutor,
    RunOutcome,
    RunUnit,
    TreeSource,
    UnitKey,
    collect,
    tree_digest,
)
from .gate import Decision, GateResult, Reason, RunRow, SkipReason, decide, dump_rows, review_note
from .layers import ticket_path as ticket_file
from .layers import write_ticket

TREES = ("parent", "patch")

RunProgress = Callable[[int, int, str], None]
"""``(done, total, what finished)``, called after each sandboxed run of a long command
(e.g. ``(4, 6, "patch seed 29")``); the command line draws it as a progress line."""


@dataclass(frozen=True)
class Verdict:
    """What ``score`` decided and where the evidence is."""

    verdict_id: str
    decision: Decision
    gate: GateResult
    resolved_contract_hash: str
    """The contract's hash with both commits and tree hashes (gate.contract_hash is the
    contract's content hash, the same for every verdict of one contract file)."""
    scorecard: list[Check]
    parent_sha: str
    patch_sha: str
    bundle: Path
    review_note: str
    """What ``score`` prints: the four-line review note (review-note.txt), then one
    line per scorecard check."""
    ticket: str | None = None
    """The freeze ticket id of a propose_freeze verdict (``<log_dir>/tickets/<id>.json``)."""
    request_id: str | None = None
    """The ``score-batch`` request this verdict answers (kept in the index, for resume)."""
    hidden: dict[str, GateResult] = field(default_factory=dict)
    """The gates of the groups the agent never sees (extra_seeds, held_out), by group."""
    extra_seeds: list[int] = field(default_factory=list)
    held_out: HeldOut | None = None

    @property
    def hidden_decision(self) -> Decision | None:
        """The hidden groups' decision; None when there are none."""
        return hidden_decision(self.hidden)

    @property
    def decided_by(self) -> list[str]:
        """What decided this verdict (scorer/_index.py ``derive_decided_by``): what the review
        note, ``decision.json`` and the index line all say."""
        return derive_decided_by(self._record())

    def to_json(self) -> dict[str, object]:
        """``decision.json``."""
        out = self._record()
        out["decided_by"] = derive_decided_by(out)
        return out

    def _record(self) -> dict[str, object]:
        out: dict[str, object] = {
            **self.gate.to_json(),
            "decision": self.decision,
            "gate_decision": self.gate.decision,
            "resolved_contract_hash": self.resolved_contract_hash,
            "verdict_id": self.verdict_id,
            "parent_sha": self.parent_sha,
            "patch_sha": self.patch_sha,
            "scorecard": [c.model_dump() for c in self.scorecard],
        }
        if self.ticket is not None:
            out["ticket"] = self.ticket
        if self.request_id is not None:
            out["request_id"] = self.request_id
        out.update(hidden_json(self.hidden, extra_seeds=self.extra_seeds, held_out=self.held_out))
        return out

    def index_line(self) -> IndexLine:
        """Its line in ``verdicts.jsonl`` (what ``verdicts list``, resume and the view read)."""
        request = {"request_id": self.request_id} if self.request_id else {}
        hidden = {"hidden": {n: g.decision for n, g in self.hidden.items()}} if self.hidden else {}
        return IndexLine.model_validate(
            {
                **request,
                "verdict_id": self.verdict_id,
                "decision": self.decision,
                "gate_decision": self.gate.decision,
                "parent_sha": self.parent_sha,
                "patch_sha": self.patch_sha,
                "contract_hash": self.gate.contract_hash,
                "resolved_contract_hash": self.resolved_contract_hash,
                "results": [r.model_dump(mode="json") for r in self.gate.results],
                **hidden,
                "decided_by": self.decided_by,
                "findings": review_findings(self._record()),
                "bundle": str(self.bundle),
            }
        )


@dataclass(frozen=True)
class ScoreRequest:
    repo: Path
    contract: str
    """Tree-relative path of the contract (read from the parent commit), or a file path."""
    parent: str
    patch: str
    request_id: str | None = None
    """A ``score-batch`` request id, recorded with the verdict."""
    held_out: Path | None = None
    """A held-out directory for this request; None: the config's ``held_out_dir``."""
    fetch_url: str | None = None
    """Where a remote executor's workers fetch the commits from (the operator's URL of the
    repository); None: the driver sends them as git bundles."""


def _changes(clone: git.Repo, parent: str, patch: str) -> list[Change]:
    return [Change(status=d.status, path=d.path) for d in diff_changes(clone, parent, patch)]


def _load_contract(tree: Path, request: ScoreRequest) -> tuple[Contract, str | None]:
    rel = Path(request.contract)
    in_tree = tree / rel
    if not rel.is_absolute() and ".." not in rel.parts and in_tree.is_file():
        return load_contract(in_tree), rel.as_posix()
    outside = Path(request.contract)
    if outside.is_file():
        return load_contract(outside), None
    raise ContractError(
        "contract not found in the parent commit nor on disk", where=request.contract
    )


def _targets(contract: Contract) -> list[PropertyTarget]:
    return [PropertyTarget(prop=p.id, node_id=p.test) for p in contract.properties]


def _rows(
    group: RunGroup,
    name: str,
    sha: str,
    runs: dict[tuple[str, int], PropertyRun],
    spec_hash: str,
    fixture_hash: str,
) -> list[RunRow]:
    """One side's rows of one group, in schedule order, under the group's contract hash; a
    held-out row carries its directory's spec hash (the same on both sides) and is marked."""
    contract = group.contract
    flags = {group.row_flag: True} if group.row_flag else {}
    rows = []
    for seed in contract.seeds:
        for record in runs[(group.run_name(name), seed)].records:
            rows.append(
                RunRow(
                    prop=record.prop,
                    seed=seed,
                    status=record.status,
                    witness=record.witness,
                    tree=name,
                    sha=sha,
                    contract_hash=contract.contract_hash,
                    spec_hash=contract.spec_hash if group.name == "held_out" else spec_hash,
                    fixture_closure_hash=fixture_hash,
                    duration_s=record.duration_s,
                    **flags,
                )
            )
    return rows


def _layout_evidence(layout: ImportLayout) -> dict[str, list[str]]:
    return {
        **layout.to_json(),
        "sources": list(layout.sources),
        "notes": list(layout.notes),
    }


def _run_evidence(bundle: BundleWriter, outcomes: Mapping[tuple[str, int], RunOutcome]) -> None:
    for (run_name, seed), outcome in outcomes.items():
        run = outcome.run
        group, name = split_run_name(run_name)
        folder = "runs/held-out" if group == "held_out" else "runs"
        stem = f"{folder}/{name}-seed{seed}"
        bundle.write_text(f"{stem}.stdout.txt", run.process.stdout)
        bundle.write_text(f"{stem}.stderr.txt", run.process.stderr)
        bundle.write_text(f"{stem}.channel.txt", run.channel)
        if run.product is not None:
            # Isolated: the product ran in a process of its own; what it printed is its own.
            bundle.write_text(f"{stem}.product.stdout.txt", run.product.stdout)
            bundle.write_text(f"{stem}.product.stderr.txt", run.product.stderr)
        bundle.write_json(
            f"{stem}.json",
            {
                "group": group,
                "tree": name,
                "seed": seed,
                "complete": run.complete,
                "missing": run.missing,
                "shadowed": run.shadowed,
                "problems": run.problems,
                "forged": run.forged,
                "observed": run.observed,
                "probes": run.probes,
                "canaries": run.canaries,
                "configuration": run.configuration,
                "isolation": {r.prop: r.isolation for r in run.records},
                "causes": {r.prop: r.cause for r in run.records if r.cause},
                "recheck": {r.prop: r.recheck for r in run.records if r.recheck},
                "product": None
                if run.product is None
                else {"exit_code": run.product.exit_code, "stderr": run.product.stderr[-4000:]},
                "exit_code": run.process.exit_code,
                "signal": run.process.signal,
                "timed_out": run.process.timed_out,
                "idle_timed_out": run.process.idle_timed_out,
                "truncated": run.process.truncated,
                "duration_s": run.process.duration_s,
                "backend": run.process.backend,
                "entropy": run.entropy.to_json() if run.entropy is not None else None,
                "where": outcome.where,
                "run_id": outcome.run_id,
                "drift": list(outcome.drift),
            },
        )


def score(
    request: ScoreRequest,
    config: ScorerConfig,
    sandbox_config: SandboxConfig,
    *,
    quarantined: Sequence[str] | None = None,
    executor: Executor | None = None,
    on_run: RunProgress | None = None,
    secret: ScoreSecret | None = None,
    extra_seed_count: int | None = None,
) -> Verdict:
    """Score ``request.patch`` against ``request.parent``; write the bundle; return the verdict.

    ``quarantined``: the tests the agent's loop left out; None reads them
    from the quarantine list in the parent commit. ``executor``: where the runs go
    (default: a local executor with ``config.jobs`` slots, for this request alone).
    ``on_run`` hears of each finished run. ``secret`` and ``extra_seed_count``: a replay's
    (``plan_score``).
    """
    with contextlib.ExitStack() as stack:
        if executor is None:
            executor = stack.enter_context(LocalExecutor(config.worker_count(), sandbox_config))
        elif not executor.remote:
            require_sandbox(sandbox_config)
        plan = plan_score(
            request,
            config,
            stack,
            quarantined=quarantined,
            describe_trees=executor.remote,
            import_roots=executor.import_roots,
            secret=secret,
            extra_seed_count=extra_seed_count,
        )
        futures = {unit.key: executor.submit(unit) for unit in plan.units}
        if on_run is not None:
            _report_runs(futures, on_run)
        with settle_on_error(futures):
            before = check_without_runs(plan)  # while the runs go
            outcomes = collect(futures)
        outcomes = recheck(plan.units, outcomes, executor.submit)
        pinning = pin_moved_boundaries(plan, before, outcomes, executor.submit, executor.remote)
        return finish_score(plan, outcomes, before, pinning)


def pin_moved_boundaries(
    plan: ScorePlan,
    before: ChecksWithoutRuns,
    outcomes: Mapping[UnitKey, RunOutcome],
    submit: Submit,
    remote: bool,
) -> Pinning:
    """The nudges of the boundaries the patch moved, run through the executor (local only:
    a nudged tree exists on this machine alone; elsewhere a moved boundary stays a finding)."""
    if remote:
        return Pinning(frozenset(), ())
    return pin_boundaries(
        plan.trees["patch"],
        plan.resolved,
        before.sources,
        outcomes,
        submit,
        label=plan.label,
        contract_paths=plan.contract_paths,
        limits=plan.config.run_limits,
        layout=plan.layout,
        state=Path(plan.config.state_dir),
        entropy=plan.secret.entropy,
    )


def _report_runs(futures: Mapping[UnitKey, Future[RunOutcome]], on_run: RunProgress) -> None:
    """``on_run(done, total, "patch seed 29")`` as each unit finishes, in any thread."""
    done = itertools.count(1)
    lock = threading.Lock()

    def finished(key: UnitKey) -> Callable[[Future[RunOutcome]], None]:
        def call(_: Future[RunOutcome]) -> None:
            with lock:
                on_run(next(done), len(futures), f"{key[0]} seed {key[1]}")

        return call

    for key, future in futures.items():
        future.add_done_callback(finished(key))


@contextlib.contextmanager
def settle_on_error(futures: Mapping[UnitKey, Future[RunOutcome]]) -> Iterator[None]:
    """On an error, drop the queued units and wait for the running ones before it goes on:
    the trees they run on are removed next."""
    try:
        yield
    except BaseException:
        for future in futures.values():
            future.cancel()
        wait(list(futures.values()))
        raise


@dataclass
class ScorePlan:
    """Everything settled before the first run: the trees as they will run, the resolved
    contract, what the checks before the runs found, and the units to run."""

    request: ScoreRequest
    config: ScorerConfig
    clone: git.Repo
    parent_sha: str
    patch_sha: str
    trees: dict[str, Path]
    contract: Contract
    resolved: Contract
    contract_paths: list[str]
    changes: list[Change]
    restored: list[str]
    drifts: list[str]
    hashes: dict[str, tuple[str, str]]
    snapshots: dict[str, dict[str, tuple[int, int]]]
    quarantined: Sequence[str] | None
    layout: ImportLayout
    """Where the project's code is imported from, read from the parent: both trees use it,
    so a patch cannot move the code out of sight."""
    groups: list[RunGroup] = field(default_factory=list)
    """The contract's schedule first, then the groups the agent never sees."""
    extra_seeds: list[int] = field(default_factory=list)
    held_out: HeldOut | None = None
    units: list[RunUnit] = field(default_factory=list)
    secret: ScoreSecret = field(default_factory=ScoreSecret.draw)
    """Where every run's hash seed and random seed and the extra seeds come from."""

    @property
    def label(self) -> str:
        return self.request.request_id or self.patch_sha[:12]


def plan_score(
    request: ScoreRequest,
    config: ScorerConfig,
    stack: contextlib.ExitStack,
    *,
    quarantined: Sequence[str] | None = None,
    describe_trees: bool = False,
    import_roots: Sequence[str] | None = None,
    secret: ScoreSecret | None = None,
    extra_seed_count: int | None = None,
) -> ScorePlan:
    """The plan phase: commits, trees (owned by ``stack``), restore, hashes, the units.

    ``secret``: the score's (scorer/_seeds.py); None draws one. A batch passes its own, so
    that its requests' identical units stay identical; a replay passes the bundle's, with
    ``extra_seed_count`` (None: ``config.extra_seeds``).

    ``describe_trees``: say how a worker elsewhere rebuilds each tree (``TreeSource``), for
    executors that do not run on this machine. ``import_roots``: the operator's
    ``sandbox.import_roots`` (None: the layout is read from the parent tree).
    """
    parent_sha = resolve_commit(request.repo, request.parent)
    patch_sha = resolve_commit(request.repo, request.patch)
    clone = scorer_clone(request.repo, [parent_sha, patch_sha], config)
    # GitPython keeps `git cat-file` helpers per Repo until it is closed: a long-lived
    # scorer (warm, hosted) would hold them between requests.
    stack.callback(clone.close)
    trees = {
        "parent": stack.enter_context(clean_checkout(clone, parent_sha, config)),
        "patch": stack.enter_context(clean_checkout(clone, patch_sha, config)),
    }
    contract, contract_file = _load_contract(trees["parent"], request)
    if not contract.properties:
        raise ContractError("the contract lists no properties to run", where=request.contract)
    held_out = _held_out(request, config, contract)
    contract_paths = contract.contract_paths(
        contract_file, fixtures=manifest_fixtures(trees["parent"], contract)
    )
    changes = _changes(clone, parent_sha, patch_sha)
    restored = restore_from_parent(
        trees["parent"], trees["patch"], contract_paths, config.protected_paths
    )
    for name, tree in trees.items():
        restored += [f"{name}: {line}" for line in remove_bytecode(tree)]
    drifts = fixture_drifts(trees, contract)
    secret = secret if secret is not None else ScoreSecret.draw()
    extra_count = config.extra_seeds if extra_seed_count is None else extra_seed_count
    hashes = {
        name: (compute_spec_hash(tree, contract), compute_fixture_closure_hash(tree, contract))
        for name, tree in trees.items()
    }
    resolved = contract.model_copy(
        update={
            "parent_sha": parent_sha,
            "patch_sha": patch_sha,
            "spec_hash": contract.spec_hash or hashes["parent"][0],
            "fixture_closure_hash": contract.fixture_closure_hash or hashes["parent"][1],
        }
    )
    plan = ScorePlan(
        request=request,
        config=config,
        clone=clone,
        parent_sha=parent_sha,
        patch_sha=patch_sha,
        trees=trees,
        contract=contract,
        resolved=resolved,
        contract_paths=contract_paths,
        changes=changes,
        restored=restored,
        drifts=drifts,
        hashes=hashes,
        snapshots={name: snapshot(tree) for name, tree in trees.items()},
        quarantined=quarantined,
        layout=detect_layout(trees["parent"], override=import_roots, start=contract.tests_dir()),
        held_out=held_out,
        extra_seeds=secret.extra_seeds(extra_count, taken=resolved.seeds),
        secret=secret,
    )
    plan.groups = plan_groups(resolved, plan.extra_seeds, held_out)
    plan.units = _units(plan, describe_trees)
    return plan


def _held_out(request: ScoreRequest, config: ScorerConfig, contract: Contract) -> HeldOut | None:
    """The request's held-out directory, else the config's, loaded and checked; or None."""
    directory = request.held_out or (Path(config.held_out_dir) if config.held_out_dir else None)
    if directory is None:
        return None
    # As root, sandboxed code runs as another uid: the files must be readable by others.
    return load_held_out(directory, contract, repo=request.repo, other_uid=os.geteuid() == 0)


def _units(plan: ScorePlan, describe_trees: bool) -> list[RunUnit]:
    """Every (group, tree, seed): each group's schedule in order, parent first. A hidden
    group never shares a process with the contract's properties, so a crash it causes
    cannot show as a missing row of a property the agent sees."""
    shas = {"parent": plan.parent_sha, "patch": plan.patch_sha}
    sources: dict[str, TreeSource | None] = {name: None for name in TREES}
    if describe_trees:
        key = repo_key(plan.request.repo)
        for name in TREES:
            sources[name] = TreeSource(
                repo_key=key,
                clone=Path(plan.clone.git_dir),
                sha=shas[name],
                restore_from=plan.parent_sha if name == "patch" else None,
                contract_paths=tuple(plan.contract_paths),
                protected_paths=tuple(plan.config.protected_paths),
                digest=tree_digest(plan.trees[name]),
                fetch_url=plan.request.fetch_url,
            )
    return [
        RunUnit(
            label=plan.label,
            tree_name=name,
            seed=seed,
            tree=plan.trees[name],
            targets=tuple(_targets(group.contract)),
            contract_paths=tuple(plan.contract_paths),
            limits=plan.config.run_limits,
            source=sources[name],
            layout=plan.layout,
            group=group.name,
            tests_dir=group.tests_dir,
            runner=group.contract.runner,
            seed_env=group.contract.seed_env,
            entropy=plan.secret.entropy(seed),
        )
        for group in plan.groups
        for name in TREES
        for seed in group.contract.seeds
    ]


@dataclass(frozen=True)
class ChecksWithoutRuns:
    """What reads only the commits and the planned trees, worked out while the runs go: the
    checks' context and the outcome of the checks that need no run."""

    context: PlanContext
    checks: dict[str, Check]
    """The ``before_runs`` checks' results, by name."""
    diff: str

    @property
    def sources(self) -> Sequence[SourceChange]:
        return self.context.sources


def check_without_runs(plan: ScorePlan) -> ChecksWithoutRuns:
    contract = plan.contract
    sources = _changed_sources(
        plan.clone,
        plan.parent_sha,
        plan.patch_sha,
        plan.changes,
        plan.contract_paths,
        plan.config.protected_paths,
    )
    context = PlanContext(
        config=plan.config,
        contract=contract,
        trees=plan.trees,
        changes=plan.changes,
        contract_paths=plan.contract_paths,
        sources=sources,
        tests=_changed_sources(
            plan.clone,
            plan.parent_sha,
            plan.patch_sha,
            plan.changes,
            plan.contract_paths,
            plan.config.protected_paths,
            tests=True,
        ),
        inputs=property_inputs_in(
            plan.trees["parent"],
            [(p.id, p.test) for p in contract.properties],
            contract.spec_paths,
        ),
        quarantined=plan.quarantined,
        drifts=plan.drifts,
        snapshots=plan.snapshots,
    )
    return ChecksWithoutRuns(
        context=context,
        checks=run_before_runs(context),
        diff=plan.clone.git.diff(plan.parent_sha, plan.patch_sha, "--binary") + "\n",
    )


Rows = dict[tuple[str, str], list[RunRow]]
"""Each group's rows by (group, tree)."""


def finish_score(
    plan: ScorePlan,
    outcomes: Mapping[UnitKey, RunOutcome],
    before: ChecksWithoutRuns | None = None,
    pinning: Pinning | None = None,
) -> Verdict:
    """The decision phase: rows, gates, scorecard, ticket, bundle.

    ``pinning``: what the nudges of moved boundaries showed (None: none ran)."""
    if before is None:
        before = check_without_runs(plan)
    if pinning is None:
        pinning = Pinning(frozenset(), ())
    log_dir = Path(plan.config.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    outcomes = reconcile(outcomes)  # isolated failures checked in-process: scorer/_recheck.py
    runs = {key: outcome.run for key, outcome in outcomes.items()}
    rows: Rows = {
        (group.name, name): _rows(group, name, sha, runs, *plan.hashes[name])
        for group in plan.groups
        for name, sha in (("parent", plan.parent_sha), ("patch", plan.patch_sha))
    }
    bundle = BundleWriter.create(log_dir, plan.patch_sha)
    ticket: str | None = None
    try:
        gates = _gates(plan, rows, skip=_save_rows(bundle, plan, rows))
        gate = gates.pop("contract")
        context = ScoreContext(
            plan=before.context,
            outcomes=outcomes,
            gate=gate,
            hidden=gates,
            pinned=pinning.pinned,
            nudges=pinning.evidence,
        )
        scorecard = run_scorecard(before.checks, context)
        decision = final_decision(
            combine_decisions([gate.decision, *(g.decision for g in gates.values())]), scorecard
        )
        if decision == "propose_freeze":
            ticket = _write_ticket(log_dir, plan, bundle.verdict_id, [gate, *gates.values()])
        verdict = Verdict(
            verdict_id=bundle.verdict_id,
            decision=decision,
            gate=gate,
            resolved_contract_hash=plan.resolved.resolved_contract_hash,
            scorecard=scorecard,
            parent_sha=plan.parent_sha,
            patch_sha=plan.patch_sha,
            bundle=bundle.final,
            review_note="",
            ticket=ticket,
            request_id=plan.request.request_id,
            hidden=gates,
            extra_seeds=plan.extra_seeds,
            held_out=plan.held_out,
        )
        note = _note(gate, gates, verdict, plan.extra_seeds)
        verdict = dataclasses.replace(verdict, review_note=note + check_lines(scorecard))
        _write_bundle(bundle, plan, verdict, note, before.diff, outcomes)
        pause_point("bundle")
        bundle.publish(verdict.index_line())
    except BaseException:
        bundle.discard()
        if ticket is not None:
            ticket_file(log_dir, ticket).unlink(missing_ok=True)
        raise
    return verdict


def _save_rows(bundle: BundleWriter, plan: ScorePlan, rows: Rows) -> SkipReason | None:
    """Both sides' rows on disk before anything is decided from them; a failure skips the
    gate (``rows_not_saved``)."""
    try:
        for side in TREES:
            text = "".join(dump_rows(rows[(g.name, side)]) for g in plan.groups)
            bundle.write_text(f"{side}.jsonl", text, sync=True)
    except OSError:
        return SkipReason.ROWS_NOT_SAVED
    return None


def _gates(plan: ScorePlan, rows: Rows, skip: SkipReason | None) -> dict[str, GateResult]:
    """Each group's gate, by group (the contract's first); the extra seeds' with the
    schedule's rows (``extra_seeds_gate``)."""
    gates: dict[str, GateResult] = {}
    for g in plan.groups:
        side = {name: rows[(g.name, name)] for name in TREES}
        if g.name == "extra_seeds":
            contract_rows = {name: rows[("contract", name)] for name in TREES}
            gates[g.name] = extra_seeds_gate(
                plan.resolved, gates["contract"], contract_rows, g.contract, side, skip_reason=skip
            )
        else:
            gates[g.name] = decide(g.contract, side["parent"], side["patch"], skip_reason=skip)
    return gates


def _note(
    gate: GateResult,
    hidden: Mapping[str, GateResult],
    verdict: Verdict,
    extra_seeds: Sequence[int],
) -> str:
    """The four-line review note: the decision and what decided it (the verdict's
    ``decided_by``, as decision.json and the index line have it), the findings that did not
    pass and did not decide; then the hidden groups' lines."""
    decided = verdict.decided_by
    findings = [
        f"{name}: {g.decision}"
        for name, g in hidden.items()
        if g.decision != "accept" and name not in decided
    ]
    findings += [
        f"{c.check}: {c.outcome}"
        for c in verdict.scorecard
        if c.outcome not in ("pass", "note")
        and c.check != "differential"
        and c.check not in decided
    ]
    note = review_note(gate, final=verdict.decision, findings=findings, decided_by=decided)
    return note + hidden_note(hidden, extra_seeds=extra_seeds)


def _write_ticket(
    log_dir: Path, plan: ScorePlan, verdict_id: str, gates: Sequence[GateResult]
) -> str:
    """The freeze ticket of a propose_freeze verdict (its id is the verdict's)."""
    write_ticket(
        log_dir,
        verdict_id=verdict_id,
        patch_sha=plan.patch_sha,
        parent_sha=plan.parent_sha,
        contract_hash=plan.resolved.contract_hash,
        properties=[
            r.prop for g in gates for r in g.results if r.reason == Reason.SHARED_VARIANT_FAIL
        ],
    )
    return verdict_id


def _write_bundle(
    bundle: BundleWriter,
    plan: ScorePlan,
    verdict: Verdict,
    note: str,
    diff: str,
    outcomes: Mapping[UnitKey, RunOutcome],
) -> None:
    """Every file of the bundle but the rows (written first, before the gate)."""
    bundle.write_json("contract.resolved.json", plan.resolved.model_dump(mode="json"))
    for group in plan.groups[1:]:
        bundle.write_json(
            f"{group.name.replace('_', '-')}.resolved.json",
            group.contract.model_dump(mode="json"),
        )
    bundle.write_json("decision.json", verdict.to_json())
    bundle.write_json("scorecard.json", [c.model_dump() for c in verdict.scorecard])
    bundle.write_text("review-note.txt", note)
    bundle.write_text("patch.diff", diff)
    bundle.write_json("restored.json", plan.restored)
    bundle.write_json("layout.json", _layout_evidence(plan.layout))
    seeds = [seed for group in plan.groups for seed in group.contract.seeds]
    record = seeds_record(plan.secret, seeds, plan.extra_seeds)
    bundle.write_json(SEEDS_FILE, {**record, "request": _request_record(plan.request)})
    _run_evidence(bundle, outcomes)


def _request_record(request: ScoreRequest) -> dict[str, str | None]:
    """What ``score --replay`` needs besides the bundle's seeds: where the request came from."""
    return {
        "repo": str(request.repo.resolve()),
        "contract": request.contract,
        "held_out": str(request.held_out) if request.held_out is not None else None,
    }


def _show_text(clone: git.Repo, sha: str, path: str) -> str:
    """A file's text at ``sha`` as Python would read it (coding cookie honoured)."""
    raw = file_at(clone, sha, path) or b""
    try:
        return importlib.util.decode_source(raw)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        # Python could not import it either; the checks still see what is there.
        return raw.decode("utf-8", "replace")


def _changed_sources(
    clone: git.Repo,
    parent_sha: str,
    patch_sha: str,
    changes: Sequence[Change],
    contract_paths: Sequence[str],
    protected: Sequence[str],
    *,
    tests: bool = False,
) -> list[SourceChange]:
    """The patch's changed non-test Python files (tests are restored from the parent); with
    ``tests``, its changed protected Python files instead (what test_tampering reads)."""
    sources = []
    for change in changes:
        path = change.path
        guarded = under(path, contract_paths) or matches(path, protected)
        if not path.endswith(".py") or guarded != tests:
            continue
        sources.append(
            SourceChange(
                path=path,
                parent=None if change.status == "A" else _show_text(clone, parent_sha, path),
                patch=None if change.status == "D" else _show_text(clone, patch_sha, path),
            )
        )
    return sources


__all__ = [
    "ChecksWithoutRuns",
    "InputError",
    "RunProgress",
    "ScorePlan",
    "ScoreRequest",
    "Verdict",
    "check_without_runs",
    "finish_score",
    "pin_moved_boundaries",
    "plan_score",
    "restore_from_parent",
    "score",
    "settle_on_error",
]

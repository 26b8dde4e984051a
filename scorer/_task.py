"""Tasks from a reference fix: ``task from-fix`` (docs/design/tasks.md).

One fix commit is split by the project's test layout into its test changes and its product
changes. The **base** is the fix's parent with the test changes and a generated contract; the
**reference** is the base with the product changes. The tests of the modules the fix touches
(and of ``--guards-for``) run on both, every seed of the schedule: a test that fails on the
base and passes on the reference on every seed is a **target**, one that passes on both on
every seed a **guard**, and every other test is **excluded** with its outcomes, never
silently. The contract names the targets and guards; it is then validated with the real
scorer: the reference scored against the base must be a clean accept, the empty patch (the
base itself) a reject.

Nothing of the user's working tree or branches is touched: the commits are written with a
temporary index and named only by ``refs/heads/patchwarden/tasks/NAME/{base,reference}``.
"""

from __future__ import annotations

import ast
import configparser
import dataclasses
import json
import os
import re
import tempfile
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from patchwarden.sandbox import (
    DiffEntry,
    PropertyRun,
    SandboxConfig,
    collect_tests,
    diff_changes,
    file_at,
    layout_for,
    open_repo,
    parse_python,
    repo_root,
    require_sandbox,
    resolve_commit,
    run_git,
)

from ._checkout import clean_checkout, scorer_clone
from ._config import ScorerConfig
from ._contract import DEFAULT_CONTRACT_PATH, DEFAULT_SEEDS, Contract, Property, property_id
from ._contract_check import collection_cause, incomplete_cause, is_guard, run_seeds
from ._errors import InputError
from ._guard_tests import guard_tests, is_test_file
from ._score import RunProgress, ScoreRequest, Verdict, score
from .checks import matches, remove_bytecode

TASK_REFS = "refs/heads/patchwarden/tasks"
"""The namespace of every task's refs (a branch namespace, so clones and fetches carry it)."""
TEST_DIRS = frozenset({"test", "tests"})
"""Directory names whose whole content is the project's tests (their data included)."""
PYTEST_CONFIG_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
"""Where pytest looks for ``testpaths``, in its own order of precedence."""
TASK_IDENT = {
    "GIT_AUTHOR_NAME": "patchwarden",
    "GIT_AUTHOR_EMAIL": "patchwarden@localhost",
    "GIT_COMMITTER_NAME": "patchwarden",
    "GIT_COMMITTER_EMAIL": "patchwarden@localhost",
}
"""Who writes a task's commits; their dates are the fix's, so a rebuild gives the same shas."""
SIDE_NAME = {"reference": "reference", "empty": "empty patch"}
WANTED = {"reference": "a clean accept", "empty": "a reject"}
DEFAULT_TEST_TIMEOUT_S = 60.0
"""How long one call of a tried test into the product may take (``--test-timeout``), when
neither the option nor ``scorer.run_limits.call_timeout_s`` says."""
NOT_CLEAN = ("review", "reject")
"""Scorecard outcomes that make an accept unclean: a reviewer would have to look."""


@dataclass(frozen=True)
class TestResult:
    """One test of the touched modules: its outcome on every seed of both sides."""

    __test__ = False  # not a pytest test class

    test: str
    base: tuple[str, ...]
    """``pass``, ``fail``, ``skip`` or ``missing``, one per seed, in schedule order."""
    reference: tuple[str, ...]
    witness: str = ""
    """The first failure's witness (``prop|ExcType|file:line``, the property id left out),
    so an excluded test says why it failed."""
    fallback: str = ""
    """Why the test could not run under the isolated oracle (``in-process: <why>``), when it
    fell back on a run and the operator's ``scorer.isolation`` holds that for review."""
    cause: str = ""
    """Why it failed for a reason of the run's, not the product's answer (the first record's
    ``cause``: a collection error, a fixture not found, with the exception's file:line)."""

    @property
    def kind(self) -> str:
        """``target``, ``guard`` or ``excluded``."""
        if self.fallback:
            return "excluded"
        if self.shows_the_bug:
            return "target"
        if all(o == "pass" for o in (*self.base, *self.reference)):
            return "guard"
        return "excluded"

    def why_excluded(self) -> str:
        if self.fallback:
            # In the contract every verdict would carry the isolation check's finding, so
            # the reference could never be a clean accept (docs/design/tasks.md).
            return f"runs {self.fallback} (scorer.isolation: pass keeps such tests)"
        sides = {"base": self.base, "reference": self.reference}
        split = [side for side, got in sides.items() if len(set(got)) > 1]
        if split:
            return f"split outcomes across seeds on the {' and the '.join(split)}"
        if "skip" in (*self.base, *self.reference):
            return "skipped"
        if "missing" in (*self.base, *self.reference):
            return "did not report"
        if self.cause:
            # Not the product's answer: say what stopped the test, not that it "fails".
            where = [side for side, got in sides.items() if "fail" in got]
            return f"not run on the {' and the '.join(where)}: {self.cause}"
        if self.base[0] == "fail":
            return "fails on the base and the reference"
        return "passes on the base, fails on the reference"

    @property
    def shows_the_bug(self) -> bool:
        """Fails on the base and passes on the reference on every seed (a target, unless
        something else excluded it)."""
        return all(o == "fail" for o in self.base) and all(o == "pass" for o in self.reference)

    def outcomes(self) -> str:
        text = f"base {'/'.join(self.base)}; reference {'/'.join(self.reference)}"
        return text + (f"; first failure {self.witness}" if self.witness else "")


@dataclass(frozen=True)
class Validation:
    """One validation verdict: the side scored, what it got, and whether that is right."""

    side: str
    """``reference`` (must be a clean accept) or ``empty`` (must be a reject)."""
    decision: str
    verdict_id: str
    ok: bool
    why: str
    """What decided, when not ``ok`` (the verdict's first review line, or unclean checks)."""

    @property
    def what(self) -> str:
        return SIDE_NAME[self.side]

    @property
    def wanted(self) -> str:
        return WANTED[self.side]


@dataclass(frozen=True)
class Task:
    name: str
    repo: Path
    fix: str
    parent: str
    base: str
    reference: str
    contract: str
    seeds: tuple[int, ...]
    test_changes: list[str]
    product_changes: list[str]
    properties: list[Property]
    results: list[TestResult]
    validation: list[Validation] = field(default_factory=list)
    problem: str = ""
    """Why the task could not be validated before scoring (no target, a broken run)."""
    not_collected: list[tuple[str, str]] = field(default_factory=list)
    """(module, why) for each of the fix's test modules that did not collect on the base:
    their tests are in no list (``collection_cause``)."""

    @property
    def base_ref(self) -> str:
        return f"{TASK_REFS}/{self.name}/base"

    @property
    def reference_ref(self) -> str:
        return f"{TASK_REFS}/{self.name}/reference"

    @property
    def validated(self) -> bool:
        return not self.problem and len(self.validation) == 2 and all(v.ok for v in self.validation)

    def targets(self) -> list[Property]:
        return [p for p in self.properties if not is_guard(p.id)]

    def guards(self) -> list[Property]:
        return [p for p in self.properties if is_guard(p.id)]

    def excluded(self) -> list[TestResult]:
        return [r for r in self.results if r.kind == "excluded"]

    def to_json(self) -> dict[str, object]:
        by_side = {v.side: v for v in self.validation}
        return {
            "name": self.name,
            "repo": str(self.repo),
            "fix": self.fix,
            "parent": self.parent,
            "base": self.base,
            "reference": self.reference,
            "refs": {"base": self.base_ref, "reference": self.reference_ref},
            "contract": self.contract,
            "targets": [{"id": p.id, "test": p.test} for p in self.targets()],
            "guards": [{"id": p.id, "test": p.test} for p in self.guards()],
            "excluded": [
                {
                    "test": r.test,
                    "why": r.why_excluded(),
                    "base": list(r.base),
                    "reference": list(r.reference),
                    "witness": r.witness,
                    "cause": r.cause,
                }
                for r in self.excluded()
            ],
            "not_collected": [{"module": m, "why": why} for m, why in self.not_collected],
            "validation": {side: v.decision for side, v in by_side.items()},
            "verdicts": {side: v.verdict_id for side, v in by_side.items()},
            "validated": self.validated,
            "problem": self.problem or self.failed_validation(),
        }

    def failed_validation(self) -> str:
        """Which validation went wrong and why (empty when both are right)."""
        return "; ".join(
            f"the {v.what} got {v.decision} (verdict {v.verdict_id}), not {v.wanted}: {v.why}"
            for v in self.validation
            if not v.ok
        )


# -- the project's test layout -----------------------------------------------------------------


def read_testpaths(repo: Path, sha: str) -> list[str]:
    """pytest's ``testpaths`` as the commit configures it (the first file that has a pytest
    section decides, as for pytest), directories relative to the repository."""
    for name in PYTEST_CONFIG_FILES:
        data = file_at(repo, sha, name)
        if data is None:
            continue
        text = data.decode("utf-8", "replace")
        found = _testpaths(name, text)
        if found is not None:
            return found
    return []


def roots_of_tests(repo: Path, sha: str, testpaths: Sequence[str]) -> list[str]:
    """The ``testpaths`` entries whose whole content is the project's tests: not one that is
    a package of the product (an ``__init__.py`` at the commit), which a project lists so
    that ``--doctest-modules`` collects it (wcwidth's ``testpaths = tests wcwidth``): in
    that one only test modules, conftests and test directories are tests, its modules and
    data are the product's."""
    return [root for root in testpaths if file_at(repo, sha, f"{root}/__init__.py") is None]


def _testpaths(name: str, text: str) -> list[str] | None:
    """The file's testpaths ([] when it has a pytest section without one); None when it has
    no pytest section (pytest then reads the next file)."""
    if name == "pyproject.toml":
        try:
            section = tomllib.loads(text).get("tool", {}).get("pytest", {}).get("ini_options")
        except tomllib.TOMLDecodeError:
            return None
        if not isinstance(section, dict):
            return None
        paths = section.get("testpaths", [])
        paths = paths.split() if isinstance(paths, str) else paths
        return [str(p).strip("/") for p in paths if isinstance(p, str)]
    parser = configparser.RawConfigParser()
    try:
        parser.read_string(text, source=name)
    except configparser.Error:
        return None
    for section in ("pytest", "tool:pytest"):
        if name == "setup.cfg" and section == "pytest":
            continue
        if parser.has_section(section):
            return [p.strip("/") for p in parser.get(section, "testpaths", fallback="").split()]
    return None


def is_test_path(path: str, testpaths: Sequence[str], protected: Sequence[str]) -> bool:
    """A path of the project's tests: a test module, a conftest, anything under a test
    directory or a configured ``testpaths`` entry (test data), or a scorer-protected path
    (pytest's configuration files)."""
    pure = PurePosixPath(path)
    if is_test_file(path) or pure.name == "conftest.py" or matches(path, protected):
        return True
    if TEST_DIRS & set(pure.parts[:-1]):
        return True
    return any(path == root or path.startswith(f"{root}/") for root in testpaths if root)


# -- commits -----------------------------------------------------------------------------------


def _commit_env(repo: Path, fix: str) -> dict[str, str]:
    date = run_git(repo, "show", "-s", "--format=%cI", fix)
    return {**os.environ, **TASK_IDENT, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}


def _tree_with(
    repo: Path,
    start: str,
    source: str,
    changes: Sequence[DiffEntry],
    extra: Mapping[str, bytes],
) -> str:
    """The tree of commit ``start`` with ``changes`` taken from commit ``source`` and the
    files of ``extra`` written, built in a temporary index (the user's stays untouched)."""
    with tempfile.TemporaryDirectory(prefix="pw-task-") as scratch:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(scratch) / "index")}
        run_git(repo, "read-tree", start, env=env)
        for change in changes:
            if change.status == "D":
                run_git(repo, "update-index", "--force-remove", "--", change.path, env=env)
                continue
            entry = run_git(repo, "ls-tree", "-z", source, "--", change.path).rstrip("\0")
            mode, _kind, rest = entry.split(" ", 2)  # a submodule keeps the fix's pointer
            blob = rest.split("\t", 1)[0]
            run_git(
                repo,
                "update-index",
                "--add",
                "--cacheinfo",
                f"{mode},{blob},{change.path}",
                env=env,
            )
        for path, data in extra.items():
            payload = Path(scratch) / "payload"
            payload.write_bytes(data)
            blob = run_git(repo, "hash-object", "-w", "--", str(payload))
            run_git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
        return run_git(repo, "write-tree", env=env)


def _commit(repo: Path, tree: str, parent: str, message: str, env: Mapping[str, str]) -> str:
    return run_git(repo, "commit-tree", tree, "-p", parent, "-m", message, env=env)


def _set_ref(repo: Path, ref: str, sha: str) -> None:
    run_git(repo, "update-ref", "-m", "patchwarden task from-fix", ref, sha)


# -- building ----------------------------------------------------------------------------------

TaskProgress = Callable[[str], None]
"""Called with a short line as each step of ``build_task`` starts."""


def task_name_problem(name: str) -> str:
    """Why ``name`` cannot name a task (empty when it can): one ref component path."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*", name):
        return "letters, digits, '.', '_', '-' and '/', each part starting with a letter or digit"
    if ".." in name or name.endswith((".lock", ".")) or "/." in name:
        return "no '..', no part ending in '.lock' or '.'"
    return ""


def _resolve(repo: Path, fix: str, parent: str | None) -> tuple[str, str]:
    fix_sha = resolve_commit(repo, fix)
    parents = open_repo(repo).commit(fix_sha).parents
    if parent is not None:
        return fix_sha, resolve_commit(repo, parent)
    if len(parents) > 1:
        raise InputError(
            f"{fix} is a merge commit ({len(parents)} parents): give --parent REF", where=str(repo)
        )
    if not parents:
        raise InputError(f"{fix} is a root commit: give --parent REF", where=str(repo))
    return fix_sha, parents[0].hexsha


def _require_committed(root: Path, fix: str, fix_sha: str) -> None:
    """A fix named by HEAD (or a branch HEAD is on) must not have changes left uncommitted:
    the operator would build the task from a fix that is not the one they see."""
    head = run_git(root, "rev-parse", "--verify", "--quiet", "HEAD")
    if head != fix_sha:
        return
    dirty = run_git(root, "status", "--porcelain", "--untracked-files=no")
    if dirty:
        first = dirty.splitlines()[0].strip()
        raise InputError(
            f"{fix} is the checked-out commit and the working tree has uncommitted changes "
            f"({first}, ...): commit the fix first",
            where=str(root),
        )


def build_task(
    repo: Path,
    fix: str,
    config: ScorerConfig,
    sandbox_config: SandboxConfig,
    *,
    parent: str | None = None,
    name: str | None = None,
    tests: Sequence[str] = (),
    guards_for: Sequence[str] = (),
    seeds: Sequence[int] = DEFAULT_SEEDS,
    test_timeout_s: float | None = None,
    keep_runs: Path | None = None,
    on_step: TaskProgress | None = None,
    on_run: RunProgress | None = None,
) -> Task:
    """Build, run and validate the task of ``fix`` (docs/design/tasks.md). Bad input is an
    InputError; a task that does not validate is returned with its reasons. ``keep_runs``:
    a directory to write the build's own runs to (``keep_build_runs``), for a person."""
    step = on_step or (lambda _line: None)
    require_sandbox(sandbox_config)
    root = repo_root(repo)
    fix_sha, parent_sha = _resolve(root, fix, parent)
    _require_committed(root, fix, fix_sha)
    name = name or fix_sha[:12]
    problem = task_name_problem(name)
    if problem:
        raise InputError(f"--name {name!r}: a task name is {problem}")
    for test in tests:
        try:
            Property(id="p", test=test)
        except ValueError:
            raise InputError(
                f"--test must be a pytest node id 'path::name', got {test!r}"
            ) from None
    testpaths = roots_of_tests(root, parent_sha, read_testpaths(root, parent_sha))
    changes = diff_changes(root, parent_sha, fix_sha)
    test_changes = [c for c in changes if is_test_path(c.path, testpaths, config.protected_paths)]
    product_changes = [c for c in changes if c not in test_changes]
    modules = [c.path for c in test_changes if c.status != "D" and _is_test_module(c.path)]
    if not modules and not tests:
        raise InputError(
            f"{fix} changes no test file: give --test NODEID or write a property first",
            where=str(root),
        )
    if not product_changes:
        raise InputError(
            f"{fix} changes only the project's tests: there is no fix for the reference",
            where=str(root),
        )
    env = _commit_env(root, fix_sha)
    short = fix_sha[:12]
    # Provisional commits, without the contract: the runs decide what the contract holds.
    draft_tree = _tree_with(root, parent_sha, fix_sha, test_changes, {})
    draft_base = _commit(root, draft_tree, parent_sha, f"task {name}: tests of {short}", env)
    draft_ref_tree = _tree_with(root, draft_base, fix_sha, product_changes, {})
    draft_ref = _commit(root, draft_ref_tree, draft_base, f"task {name}: fix {short}", env)
    base_ref, reference_ref = f"{TASK_REFS}/{name}/base", f"{TASK_REFS}/{name}/reference"
    # The scorer's clone fetches refs: the drafts are named until the final commits are.
    _set_ref(root, base_ref, draft_base)
    _set_ref(root, reference_ref, draft_ref)

    extra_modules = [t.split("::", 1)[0] for t in tests]
    guard_names = list(dict.fromkeys(guards_for))
    files = [
        f for f in run_git(root, "ls-tree", "-r", "-z", "--name-only", draft_base).split("\0") if f
    ]
    step(f"collecting the tests of {len(set(modules + extra_modules))} module(s) on the base")
    # A test that loops forever in product code (the bug, on the base) ends at the call
    # deadline and the run goes on with a new product process (docs/design/tasks.md).
    timeout = test_timeout_s or config.run_limits.call_timeout_s or DEFAULT_TEST_TIMEOUT_S
    limits = config.run_limits.model_copy(
        update={"call_timeout_s": timeout, "test_timeout_s": timeout}
    )
    results, run_problem, not_collected = _run_both(
        root,
        draft_base,
        draft_ref,
        list(dict.fromkeys([*modules, *extra_modules])),
        guard_names,
        files,
        tests,
        seeds,
        config.model_copy(update={"run_limits": limits}),
        sandbox_config,
        on_run,
        keep_runs,
    )
    docs = docstrings_of(lambda path: file_at(root, draft_base, path), [r.test for r in results])
    properties = _properties(results, docs)
    contract_path = DEFAULT_CONTRACT_PATH
    task = Task(
        name=name,
        repo=root,
        fix=fix_sha,
        parent=parent_sha,
        base=draft_base,
        reference=draft_ref,
        contract=contract_path,
        seeds=tuple(seeds),
        test_changes=[c.path for c in test_changes],
        product_changes=[c.path for c in product_changes],
        properties=properties,
        results=results,
        not_collected=not_collected,
    )
    if run_problem:
        return _replace(task, problem=run_problem)
    if not task.targets():
        return _replace(task, problem=no_target_problem(task))
    text = task_contract(task)
    base_tree = _tree_with(root, draft_base, draft_base, [], {contract_path: text.encode()})
    # Nothing in the base (which the agent reads) names the fix: not its sha, not its
    # message (the task's name is the operator's, in the refs only).
    base = _commit(
        root,
        base_tree,
        parent_sha,
        "task: the tests and their contract",
        env,
    )
    reference = _commit(
        root,
        _tree_with(root, base, fix_sha, product_changes, {}),
        base,
        f"task {name}: fix {short}",
        env,
    )
    _set_ref(root, base_ref, base)
    _set_ref(root, reference_ref, reference)
    task = _replace(task, base=base, reference=reference)
    step("validating: the reference against the base")
    gold = _validate(root, "reference", base, reference, config, sandbox_config, on_run)
    step("validating: the empty patch")
    empty = _validate(root, "empty", base, base, config, sandbox_config, on_run)
    return _replace(task, validation=[gold, empty])


def no_target_problem(task: Task) -> str:
    """Why a task has no target. It says the fix's tests do not show the bug only when
    nothing of the run's own stopped them: a test that failed on the base and passed on the
    reference but was excluded, a test that did not run, a module that did not collect is
    named with what stopped it."""
    hidden = [r for r in task.excluded() if r.shows_the_bug]
    if hidden:
        return (
            f"no target: {len(hidden)} test(s) fail on the base and pass on the reference on "
            f"every seed but were excluded: {hidden[0].test}: {hidden[0].why_excluded()}"
        )
    stopped = [r for r in task.excluded() if r.cause]
    if stopped or task.not_collected:
        first = (
            f"{stopped[0].test}: {stopped[0].cause}"
            if stopped
            else f"{task.not_collected[0][0]}: {task.not_collected[0][1]}"
        )
        count = len(stopped) + len(task.not_collected)
        return (
            "no test fails on the base and passes on the reference on every seed, and "
            f"{count} did not run or collect for a reason of the run's, so the fix's tests "
            f"could not show the bug: {first}"
        )
    return (
        "no test fails on the base and passes on the reference on every seed: the fix's "
        "tests do not show the bug (see the excluded tests)"
    )


def _replace(task: Task, **changes: object) -> Task:
    return dataclasses.replace(task, **changes)  # type: ignore[arg-type]


def _is_test_module(path: str) -> bool:
    return path.endswith(".py") and is_test_file(path)


def _outcome(run: PropertyRun | None, prop: str) -> str:
    if run is None:
        return "missing"
    record = next((r for r in run.records if r.prop == prop), None)
    if record is None:
        return "missing"
    if record.status == "pass":
        return "pass"
    return "skip" if "|Skipped|" in record.witness else "fail"


def _run_both(
    root: Path,
    base: str,
    reference: str,
    modules: Sequence[str],
    guard_names: Sequence[str],
    files: Sequence[str],
    tests: Sequence[str],
    seeds: Sequence[int],
    config: ScorerConfig,
    sandbox_config: SandboxConfig,
    on_run: RunProgress | None,
    keep_runs: Path | None = None,
) -> tuple[list[TestResult], str, list[tuple[str, str]]]:
    """Every test of ``modules`` (and of the guard names) on both commits, every seed; and
    the modules that did not collect on the base, with why."""
    clone = scorer_clone(root, [base, reference], config)
    with clean_checkout(clone, base, config) as tree:
        remove_bytecode(tree)
        guard_ids: list[str] = []
        for name in guard_names:
            found = guard_tests(tree, files, name)
            if not found:
                raise InputError(
                    f"--guards-for {name}: no test function or method in the base's test "
                    "files names it"
                )
            guard_ids += found
        start = _common_dir([*modules, *(g.split("::", 1)[0] for g in guard_ids)])
        layout = layout_for(tree, sandbox_config, start=start)
        present = [m for m in modules if (tree / m).is_file()]
        collected = collect_tests(
            tree,
            present,
            sandbox_config,
            layout=layout,
            contract_paths=present,
            limits=config.run_limits,
        )
        if present and collected.node_ids is None:
            tail = (collected.process.stderr or collected.process.stdout).strip().splitlines()
            return (
                [],
                "collecting the fix's test modules on the base did not finish: "
                f"{tail[-1] if tail else 'no output'}",
                [],
            )
        not_collected = [(node, collection_cause(text)) for node, text in collected.errors]
        cases = candidate_tests(collected.node_ids or [], collected.unordered)
        candidates = list(dict.fromkeys([*cases, *tests, *guard_ids]))
        if not candidates:
            broken = "; ".join(f"{node}: {why}" for node, why in not_collected)
            return (
                [],
                f"no test of the fix's modules collects on the base ({broken or 'none found'})",
                not_collected,
            )
        numbered = {f"t.{i}": test for i, test in enumerate(candidates)}
        probe = Contract(
            seeds=list(seeds),
            spec_paths=sorted({t.split("::", 1)[0] for t in candidates}),
            properties=[Property(id=p, test=t) for p, t in numbered.items()],
        )
        contract_paths = probe.spec_paths
        base_runs = run_seeds(
            tree, probe, sandbox_config, config, contract_paths, layout, on_run, "base"
        )
    with clean_checkout(clone, reference, config) as tree:
        remove_bytecode(tree)
        ref_runs = run_seeds(
            tree, probe, sandbox_config, config, contract_paths, layout, on_run, "reference"
        )
    if keep_runs is not None:
        keep_build_runs(keep_runs, numbered, {"base": base_runs, "reference": ref_runs})
    problems = [
        f"the {side} run of seed {seed} is incomplete"
        + (f" ({cause})" if (cause := incomplete_cause(run)) else "")
        for side, runs in (("base", base_runs), ("reference", ref_runs))
        for seed, run in runs.items()
        if not run.complete or run.forged
    ]
    results = [
        TestResult(
            test=test,
            base=tuple(_outcome(base_runs.get(seed), prop) for seed in seeds),
            reference=tuple(_outcome(ref_runs.get(seed), prop) for seed in seeds),
            witness=_first_witness([*base_runs.values(), *ref_runs.values()], prop),
            fallback=""
            if config.isolation == "pass"
            else _fallback([*base_runs.values(), *ref_runs.values()], prop),
            cause=next(
                (
                    r.cause
                    for run in (*base_runs.values(), *ref_runs.values())
                    for r in run.records
                    if r.prop == prop and r.cause
                ),
                "",
            ),
        )
        for prop, test in numbered.items()
    ]
    return results, "; ".join(problems), not_collected


def keep_build_runs(
    directory: Path, numbered: Mapping[str, str], runs: Mapping[str, Mapping[int, PropertyRun]]
) -> None:
    """Write the build's own runs for a person: per side and seed, each tried test's record
    (``<side>-seed<N>.json``) and what the oracle and the product process printed."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for side, by_seed in runs.items():
            for seed, run in by_seed.items():
                stem = directory / f"{side}-seed{seed}"
                records = [
                    {"test": numbered.get(r.prop, r.prop), **dataclasses.asdict(r)}
                    for r in run.records
                ]
                evidence = {
                    "side": side,
                    "seed": seed,
                    "complete": run.complete,
                    "missing": [numbered.get(p, p) for p in run.missing],
                    "problems": run.problems,
                    "forged": run.forged,
                    "records": records,
                    "exit_code": run.process.exit_code,
                }
                Path(f"{stem}.json").write_text(json.dumps(evidence, indent=2) + "\n")
                Path(f"{stem}.stdout.txt").write_text(run.process.stdout)
                Path(f"{stem}.stderr.txt").write_text(run.process.stderr)
                if run.product is not None:
                    Path(f"{stem}.product.stdout.txt").write_text(run.product.stdout)
                    Path(f"{stem}.product.stderr.txt").write_text(run.product.stderr)
    except OSError as exc:
        why = f"--keep-runs: cannot write the runs: {exc}"
        raise InputError(why, where=str(directory)) from exc


def _fallback(runs: Sequence[PropertyRun], prop: str) -> str:
    """The first record of ``prop`` that fell back in-process, as its isolation says why."""
    for run in runs:
        for record in run.records:
            if record.prop == prop and record.isolation.startswith("in-process: "):
                return record.isolation
    return ""


def _first_witness(runs: Sequence[PropertyRun], prop: str) -> str:
    for run in runs:
        for record in run.records:
            if record.prop == prop and record.status != "pass":
                return record.witness.removeprefix(f"{prop}|")
    return ""


def _common_dir(paths: Sequence[str]) -> str:
    dirs = [PurePosixPath(p).parent for p in paths]
    common = dirs[0] if dirs else PurePosixPath(".")
    for directory in dirs[1:]:
        while common != PurePosixPath(".") and common not in (directory, *directory.parents):
            common = common.parent
    return common.as_posix()


def _properties(
    results: Sequence[TestResult], docs: Mapping[str, str] | None = None
) -> list[Property]:
    props: list[Property] = []
    taken: set[str] = set()
    for kind in ("target", "guard"):
        for index, result in enumerate(r for r in results if r.kind == kind):
            pid = property_id(result.test, index, prefix=kind)
            unique, n = pid, 1
            while unique in taken:
                n += 1
                unique = f"{pid}_{n}"
            taken.add(unique)
            oracle = oracle_text(result.test, (docs or {}).get(result.test, ""))
            props.append(Property(id=unique, oracle=oracle, test=result.test))
    return props


def candidate_tests(node_ids: Sequence[str], unordered: Sequence[str]) -> list[str]:
    """The tests a task tries, test by test as the project's own pytest counts them: each
    parametrized case is one (a fix may mend some cases of a test and not others), but the
    cases of a test named by their place in a set (``[expected0]``: each run's hash seed
    orders the set) are one test, its function."""
    functions = set(unordered)
    found = [
        node.split("[", 1)[0] if node.split("[", 1)[0] in functions else node for node in node_ids
    ]
    return list(dict.fromkeys(found))


def oracle_text(test: str, doc: str = "") -> str:
    """What a test checks, for its property's ``oracle``: its name in words (``test_`` and
    ``Test`` dropped, a class and its method joined by a colon) and its docstring's summary:
    ``reversed range matches nothing: A reversed range is a null pattern.``"""
    words = []
    test, bracket, case = test.partition("[")  # a parametrized case: its id after the name
    for part in test.split("::")[1:]:
        name = re.sub(r"^(test_?|Test)", "", part) or part
        name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ")
        words.append(" ".join(name.split()).lower())
    text = (": ".join(w for w in words if w) or test) + (f" [{case}" if bracket else "")
    return f"{text}: {doc}" if doc else text


def docstrings_of(read: Callable[[str], bytes | None], tests: Sequence[str]) -> dict[str, str]:
    """The first line of each test's docstring (``path::name``, ``path::Class::name``), read
    from the file's syntax tree (``read(path)``: its bytes) without importing it; a test
    without one is left out."""
    found: dict[str, str] = {}
    parsed: dict[str, ast.Module | None] = {}
    for test in tests:
        path, *names = test.split("[", 1)[0].split("::")  # a case: its function's docstring
        if path not in parsed:
            data = read(path)
            try:
                parsed[path] = parse_python(data) if data is not None else None
            except (SyntaxError, ValueError):
                parsed[path] = None
        node: ast.AST | None = parsed[path]
        for name in names:
            body = getattr(node, "body", [])
            node = next(
                (
                    n
                    for n in body
                    if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                    and n.name == name
                ),
                None,
            )
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            # The summary: the first paragraph (a first sentence often wraps), one line.
            summary = " ".join((ast.get_docstring(node) or "").split("\n\n")[0].split())
            if summary:
                found[test] = summary[:200]
    return found


def task_contract(task: Task) -> str:
    """The contract of a task, as YAML that ``parse_contract`` loads as it is. The agent reads
    it: it names no commit, no ref, nothing of the fix."""
    files = sorted({p.test.split("::", 1)[0] for p in task.properties})
    lines = [
        "# Written by `patchwarden task from-fix`.",
        "# target.*: the fix's tests that fail on the base and pass with the fix on every seed.",
        "# guard.*: tests of the same modules that pass on both on every seed.",
        "contract_version: 1",
        f"seeds: [{', '.join(str(s) for s in task.seeds)}]",
        "spec_paths:",
        *[f"  - {json.dumps(f)}" for f in files],
        "properties:",
    ]
    for prop in task.properties:
        lines += [
            f"  - id: {json.dumps(prop.id)}",
            f"    oracle: {json.dumps(prop.oracle)}",
            f"    test: {json.dumps(prop.test)}",
        ]
    return "\n".join(lines) + "\n"


def _validate(
    root: Path,
    side: str,
    parent: str,
    patch: str,
    config: ScorerConfig,
    sandbox_config: SandboxConfig,
    on_run: RunProgress | None,
) -> Validation:
    verdict = score(
        ScoreRequest(repo=root, contract=DEFAULT_CONTRACT_PATH, parent=parent, patch=patch),
        config,
        sandbox_config,
        on_run=on_run,
    )
    if side == "reference":
        unclean = [c for c in verdict.scorecard if c.outcome in NOT_CLEAN]
        ok = verdict.decision == "accept" and not unclean
        why = (
            _decided_by(verdict)
            if verdict.decision != "accept"
            else ", ".join(
                f"{c.check} {c.outcome}" + (f" ({c.evidence[0]})" if c.evidence else "")
                for c in unclean
            )
        )
    else:
        ok = verdict.decision == "reject"
        why = "" if ok else _decided_by(verdict)
    return Validation(
        side=side, decision=verdict.decision, verdict_id=verdict.verdict_id, ok=ok, why=why
    )


def _decided_by(verdict: Verdict) -> str:
    lines = [line for line in verdict.review_note.splitlines() if line.strip()]
    return lines[0] if lines else verdict.decision

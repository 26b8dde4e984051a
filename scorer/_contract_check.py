"""Does the contract fit the base? ``contract check`` and serve's start-up check.

Two steps, both on a clean checkout of the base in the scorer's state directory, sandboxed,
with the trusted runner's profile and the import layout ``score`` will use:

1. **Collection** (``require_test_ids``): every property's test id must name collected tests
   on the base, exactly as the runner matches them (the node id, or its parametrized cases).
   A missing id (a typo, a file that does not collect) or one that names several tests (a
   class or a module) is an error naming the property, the contract's file:line and the id,
   instead of a ``NotRun`` on both sides and a ``uniform_fail`` reject later.
2. **The schedule on the base** (``check_contract``): every seed, as the parent side of a
   verdict will run it, so the operator sees which properties fail there (the task), with
   which witness class, and which pass on every seed (a patch would have nothing to clear).
"""

from __future__ import annotations

import difflib
import re
import signal
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from patchwarden._documents import line_of
from patchwarden.sandbox import (
    ImportLayout,
    PropertyRun,
    PropertyTarget,
    RunRequest,
    SandboxConfig,
    collect_tests,
    configuration_line,
    configuration_problems,
    file_at,
    layout_for,
    list_ctest_tests,
    require_sandbox,
    resolve_commit,
    runner_named,
)

from ._checkout import clean_checkout, read_contract_at, scorer_clone
from ._config import ScorerConfig
from ._contract import Contract, manifest_fixtures
from ._errors import ContractError, PatchwardenError
from ._score import RunProgress
from .checks import remove_bytecode, restore_from_parent

LOCATION = re.compile(r"^(\S+\.py:\d+): \S")
"""A frame line of pytest's tracebacks: ``tests/test_x.py:3: in <module>`` (short) or
``tests/test_x.py:3: TypeError`` (long)."""
SHOWN_TESTS = 3
"""How many of the tests an ambiguous id selects are named in its error."""


@dataclass(frozen=True)
class TestIdCheck:
    """One property's test id against what the base collects."""

    __test__ = False  # not a pytest test class

    prop: str
    test: str
    where: str
    """The contract's file:line of the property's ``test``."""
    cases: int
    """Collected tests the runner will map to the property (1, or its parametrized cases)."""
    problem: str
    """Why the id cannot be used (empty when it can)."""


@dataclass(frozen=True)
class ContractCheck:
    """What ``contract check`` found on the base."""

    base: str
    layout: ImportLayout
    ids: list[TestIdCheck]
    collection_errors: list[tuple[str, str]]
    runs: dict[int, PropertyRun]
    """Seed -> the base's run, in schedule order."""
    reference: str | None = None
    """The reference fix's sha (``contract check --reference``), its contract paths restored
    from the base as ``score`` restores them."""
    reference_runs: dict[int, PropertyRun] = field(default_factory=dict)
    runner: str = "pytest"
    """The contract's runner (docs/design/runners.md)."""
    seed_env: str = ""
    oracle: str = "isolated"
    """pytest: the operator's ``sandbox.oracle`` (``in-process`` lowers the trust level)."""

    def runner_line(self) -> str:
        """What ``score`` will run, and who reports each result (the trust level)."""
        runner = runner_named(self.runner)
        if runner.name == "ctest":
            what = (
                "per tree: cmake configure and build in the sandbox (cached by content), then "
                f"ctest --output-junit per seed with the seed in {self.seed_env}"
            )
        else:
            what = "one sandboxed pytest process per tree and seed"
        if runner.python and self.oracle != "isolated":
            return f"runner: {runner.name}: {what}; trust: {self.oracle} (sandbox.oracle)"
        return f"runner: {runner.name}: {what}; trust: {runner.trust} ({runner.why})"

    def passing(self, prop: str, runs: Mapping[int, PropertyRun] | None = None) -> bool:
        """``prop`` passes on every seed of ``runs`` (default: the base's)."""
        chosen = self.runs if runs is None else runs
        return bool(chosen) and all(
            any(r.prop == prop and r.status == "pass" for r in run.records)
            for run in chosen.values()
        )

    def reference_problems(self) -> list[str]:
        """Every property that does not pass on every seed of the reference, as one line
        each: a guard there asserts what the fix changes, a target is not made to hold."""
        if self.reference is None:
            return []
        short = self.reference[:12]
        problems = []
        for check in self.ids:
            if self.passing(check.prop, self.reference_runs):
                continue
            if is_guard(check.prop):
                problems.append(
                    f"{check.prop} fails on the reference {short}: it asserts behaviour the "
                    "fix changes"
                )
            else:
                problems.append(
                    f"{check.prop} does not pass on the reference {short}: the fix does not "
                    "make it hold"
                )
        return problems

    def always_passing(self) -> list[str]:
        """Properties that pass on every seed of the base: nothing for a patch to clear."""
        return [c.prop for c in self.ids if self.passing(c.prop)]


def collection_cause(text: str) -> str:
    """A collection error's text (pytest's report) as its exception and the file:line of the
    test code it came from: ``ImportError: cannot import name 'x' from 'pkg' (t.py:3)``."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    raised = [line[1:].strip() for line in lines if line.startswith("E ")]
    where = [m.group(1) for line in lines if (m := LOCATION.match(line))]
    what = raised[-1] if raised else (lines[-1] if lines else "no output")
    return f"{what} ({where[-1]})" if where else what


GUARD_PREFIX = "guard."
"""The id prefix of a regression guard (``contract init --guards-for``, ``task from-fix``)."""


def is_guard(prop: str) -> bool:
    return prop.startswith(GUARD_PREFIX)


def match_test_id(
    test: str,
    collected: Sequence[str],
    files: Sequence[str],
    errors: Sequence[tuple[str, str]],
    unordered: Sequence[str] = (),
) -> tuple[int, str]:
    """(matching collected tests, problem) for one id, by the runner's rule: the node id
    itself or its parametrized cases (``id[...]``). One case of a test parametrized over a
    set, named by its place (``unordered``), is a problem even when it is collected: which
    case has that id depends on the hash seed, and each scored run has its own."""
    function = test.split("[", 1)[0]
    if function != test and function in unordered:
        return 0, (
            f"names one case of {function}, which is parametrized over a set: which case "
            "an id such as [expected0] is depends on the hash seed, and every scored run "
            "has its own; name the function, or give the cases ids= in the test"
        )
    exact = [n for n in collected if n == test or n.startswith(f"{test}[")]
    if exact:
        return len(exact), ""
    path = test.split("::", 1)[0]
    if path not in files:
        return 0, f"its file {path} does not exist on the base"
    broken = [text for node, text in errors if node == path or path.startswith(f"{node}/")]
    if broken:
        lines = [line.strip() for line in broken[0].splitlines() if line.strip()]
        last = lines[-1] if lines else "collection error"
        hint = ""
        if "ModuleNotFoundError" in last or "ImportError" in last:
            hint = (
                " (a dependency: `patchwarden env build` and sandbox.python; the project's own "
                "code: check its layout or set sandbox.import_roots)"
            )
        return 0, f"its file does not collect: {last}{hint}"
    under = [n for n in collected if n.startswith(f"{test}::")]
    if under:
        shown = ", ".join(under[:SHOWN_TESTS]) + (", ..." if len(under) > SHOWN_TESTS else "")
        return 0, f"selects {len(under)} tests, not one ({shown}); name one test"
    close = difflib.get_close_matches(test, collected, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return 0, f"is not collected on the base{hint}"


def _contract_text(repo: Path, sha: str, contract_arg: str, contract_file: str | None) -> str:
    if contract_file is not None:
        data = file_at(repo, sha, contract_file) or b""
    else:
        data = Path(contract_arg).read_bytes()
    return data.decode("utf-8", "replace")


def _check_ids(
    tree: Path,
    contract: Contract,
    contract_text: str,
    contract_where: str,
    sandbox_config: SandboxConfig,
    contract_paths: Sequence[str],
    layout: ImportLayout,
    config: ScorerConfig,
) -> tuple[list[TestIdCheck], list[tuple[str, str]]]:
    if contract.runner == "ctest":
        return _check_ctest_names(
            tree, contract, contract_text, contract_where, sandbox_config, config
        )
    files = sorted({p.test.split("::", 1)[0] for p in contract.properties})
    present = [f for f in files if (tree / f).is_file() and not (tree / f).is_symlink()]
    collected = collect_tests(
        tree,
        present,
        sandbox_config,
        layout=layout,
        contract_paths=contract_paths,
        limits=config.run_limits,
    )
    if present and collected.node_ids is None:
        process = collected.process
        tail = (process.stderr or process.stdout).strip().splitlines()
        raise ContractError(
            "collecting the property tests on the base did not finish (exit "
            f"{process.exit_code}): {tail[-1] if tail else 'no output'}",
            where=contract_where,
        )
    checks = []
    for index, prop in enumerate(contract.properties):
        cases, problem = match_test_id(
            prop.test, collected.node_ids or [], present, collected.errors, collected.unordered
        )
        line = line_of(contract_text, ("properties", index, "test"))
        checks.append(
            TestIdCheck(
                prop=prop.id,
                test=prop.test,
                where=f"{contract_where}:{line}" if line else contract_where,
                cases=cases,
                problem=problem,
            )
        )
    return checks, collected.errors


def _check_ctest_names(
    tree: Path,
    contract: Contract,
    contract_text: str,
    contract_where: str,
    sandbox_config: SandboxConfig,
    config: ScorerConfig,
) -> tuple[list[TestIdCheck], list[tuple[str, str]]]:
    """A ctest contract's test names against ``ctest -N`` on the base's build (a build that
    fails is an error naming its first error's file:line)."""
    try:
        names = list_ctest_tests(tree, sandbox_config, config.run_limits)
    except PatchwardenError as exc:
        raise ContractError(
            f"listing the ctest tests on the base: {exc}", where=contract_where
        ) from None
    checks = []
    for index, prop in enumerate(contract.properties):
        line = line_of(contract_text, ("properties", index, "test"))
        close = difflib.get_close_matches(prop.test, names, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        checks.append(
            TestIdCheck(
                prop=prop.id,
                test=prop.test,
                where=f"{contract_where}:{line}" if line else contract_where,
                cases=1 if prop.test in names else 0,
                problem="" if prop.test in names else f"is not a ctest test of the base{hint}",
            )
        )
    return checks, []


def id_problems(checks: Sequence[TestIdCheck]) -> ContractError | None:
    """One error for every id that cannot be used: the first in full, the rest named."""
    bad = [c for c in checks if c.problem]
    if not bad:
        return None
    first = bad[0]
    more = f" (and {len(bad) - 1} more: {', '.join(c.prop for c in bad[1:])})" if bad[1:] else ""
    return ContractError(
        f"property {first.prop}: test id {first.test} {first.problem}{more}", where=first.where
    )


def check_contract(
    repo: Path,
    base: str,
    contract_arg: str,
    config: ScorerConfig,
    sandbox_config: SandboxConfig,
    *,
    run_schedule: bool = True,
    reference: str | None = None,
    on_run: RunProgress | None = None,
) -> ContractCheck:
    """Collect every property's test id on ``base``; raise ContractError if one cannot be
    used; then (``run_schedule``) run every seed on the base, and on ``reference`` (a known
    good fix, its contract paths restored from the base) when given, calling
    ``on_run(done, total, "base seed S")`` as each run ends."""
    require_sandbox(sandbox_config)
    base_sha = resolve_commit(repo, base)
    reference_sha = resolve_commit(repo, reference) if reference is not None else None
    contract, contract_file = read_contract_at(repo, base_sha, contract_arg)
    if not contract.properties:
        raise ContractError("the contract lists no properties", where=contract_arg)
    contract_where = contract_file or contract_arg
    text = _contract_text(repo, base_sha, contract_arg, contract_file)
    clone = scorer_clone(repo, [base_sha, *([reference_sha] if reference_sha else [])], config)
    reference_runs: dict[int, PropertyRun] = {}
    with clean_checkout(clone, base_sha, config) as tree:
        remove_bytecode(tree)
        contract_paths = contract.contract_paths(
            contract_file, fixtures=manifest_fixtures(tree, contract)
        )
        layout = layout_for(tree, sandbox_config, start=contract.tests_dir())
        unhonoured = configuration_problems(tree, sandbox_config, layout)
        if unhonoured:
            # Every run would stop on it (pytest's usage error), on the base as on a patch.
            raise ContractError(
                configuration_line(unhonoured), where=layout.pytest.source or contract_where
            )
        ids, errors = _check_ids(
            tree, contract, text, contract_where, sandbox_config, contract_paths, layout, config
        )
        problem = id_problems(ids)
        if problem is not None:
            raise problem
        runs: dict[int, PropertyRun] = {}
        if run_schedule:
            runs = run_seeds(
                tree, contract, sandbox_config, config, contract_paths, layout, on_run, "base"
            )
        if run_schedule and reference_sha is not None:
            with clean_checkout(clone, reference_sha, config) as fixed:
                remove_bytecode(fixed)
                restore_from_parent(tree, fixed, contract_paths, config.protected_paths)
                reference_runs = run_seeds(
                    fixed,
                    contract,
                    sandbox_config,
                    config,
                    contract_paths,
                    layout,
                    on_run,
                    "reference",
                )
    return ContractCheck(
        base=base_sha,
        layout=layout,
        ids=ids,
        collection_errors=errors,
        runs={seed: runs[seed] for seed in contract.seeds if seed in runs},
        reference=reference_sha,
        reference_runs={s: reference_runs[s] for s in contract.seeds if s in reference_runs},
        runner=contract.runner,
        seed_env=contract.seed_env,
        oracle=sandbox_config.oracle,
    )


def require_test_ids(
    repo: Path,
    base: str,
    contract_arg: str,
    config: ScorerConfig,
    sandbox_config: SandboxConfig,
) -> None:
    """The collection step alone (serve's start-up): raise unless every id can be used."""
    check_contract(repo, base, contract_arg, config, sandbox_config, run_schedule=False)


def incomplete_cause(run: PropertyRun) -> str:
    """Why a run did not give every property's outcome, as an operator acts on it: the
    limit it ran into (``run_limits``), the signal that ended it, or what made its report
    untrusted; "" when nothing says more. A run of a long suite isolated (more-itertools'
    620 tests of ``test_more.py``) ends at its wall time: without the cause the build said
    only "incomplete"."""
    process = run.process
    if process.timed_out:
        return "it ran past its wall time (run_limits.wall_time_s)"
    if process.idle_timed_out:
        return "it printed nothing for run_limits.idle_time_s"
    if process.cancelled:
        return "it was cancelled"
    code = process.exit_code
    died = code - 128 if code is not None and code > 128 else None
    if died == signal.SIGXCPU:
        return "it used its CPU time (run_limits.cpu_s)"
    if died is not None:
        try:
            return f"it ended by signal {signal.Signals(died).name}"
        except ValueError:
            return f"it ended by signal {died}"
    if run.forged:
        return f"its report is not trusted: {run.forged[0]}"
    if run.missing:
        return f"{len(run.missing)} propert{'y' if len(run.missing) == 1 else 'ies'} never reported"
    return run.problems[0] if run.problems else ""


def run_seeds(
    tree: Path,
    contract: Contract,
    sandbox_config: SandboxConfig,
    config: ScorerConfig,
    contract_paths: Sequence[str],
    layout: ImportLayout,
    on_run: RunProgress | None,
    label: str,
) -> dict[int, PropertyRun]:
    """Every property of ``contract`` on ``tree``, one sandboxed run per seed (as the
    parent side of a verdict runs them); ``on_run(done, total, "LABEL seed S")``."""
    targets = [PropertyTarget(prop=p.id, node_id=p.test) for p in contract.properties]
    runs: dict[int, PropertyRun] = {}
    with ThreadPoolExecutor(max_workers=min(config.worker_count(), len(contract.seeds))) as pool:
        futures = {
            pool.submit(
                runner_named(contract.runner).run,
                RunRequest(
                    tree=tree,
                    targets=targets,
                    seed=seed,
                    config=sandbox_config,
                    contract_paths=contract_paths,
                    limits=config.run_limits,
                    layout=layout,
                    seed_env=contract.seed_env,
                ),
            ): seed
            for seed in contract.seeds
        }
        for future in as_completed(futures):
            seed = futures[future]
            runs[seed] = future.result()
            if on_run is not None:
                on_run(len(runs), len(futures), f"{label} seed {seed}")
    return runs

"""``patchwarden sweep``: find flaky and broken tests on the base before an agent starts.

The suite runs N times on the base commit, each run its own sandboxed pytest
process on its own clean checkout, with the agent's profile (the project's
configuration, the contract's first seed, as ``run_tests`` does). Per test:
failing in 1..N-1 runs = flaky (quarantined); failing in all N = the base is
broken. A test missing from a run counts as failing in it (missing is never
a pass), and a run that did not finish (crash, timeout, collection error)
makes the sweep inconclusive, which is reported like a broken base.

The contract's own properties are left out of the sweep and of the broken-base rule: their
tests are the task, and failing on the base is what they are for (``properties_left_out``
says which were left out).

The outcome is written twice: into the operator's working tree as the
quarantine list (to review and commit), and into the scorer's state
directory keyed by the base commit, where :func:`base_is_broken` finds it
before ``serve`` starts a session.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from patchwarden.sandbox import (
    AgentRun,
    SandboxConfig,
    file_at,
    prepare_writable_tree,
    resolve_commit,
    run_agent_ctest,
)

from .._checkout import (
    clean_checkout,
    contract_at,
    repo_key,
    run_pytest_once,
    scorer_clone,
    state_dir,
    working_tree,
)
from .._config import ScorerConfig
from .._contract import DEFAULT_CONTRACT_PATH, Contract
from .._errors import InputError
from ._quarantine import (
    Tally,
    merge_sweep,
    parse_quarantine_list,
    quarantine_list_path,
    read_quarantine_list,
    utc_stamp,
    write_json_atomic,
    write_quarantine_list,
)

DEFAULT_SWEEP_RUNS = 3
FAILING_OUTCOMES = frozenset({"failed", "error"})
FINISHED_EXIT_CODES = frozenset({0, 1, 5})
"""pytest ran the whole selection: all passed, some failed, or nothing collected.
2 (interrupted, collection errors), 3 (internal error), 4 (usage) did not finish."""
CTEST_FINISHED_EXIT_CODES = frozenset({0, 8})
"""ctest ran the whole selection: all passed, or some failed (a build failure, a missing
JUnit report or another status did not finish)."""


class TestCount(BaseModel):
    __test__ = False  # not a pytest test class

    model_config = ConfigDict(extra="forbid", frozen=True)

    test_id: str
    failures: int
    runs: int


class SweepResult(BaseModel):
    """What one sweep found; also the state record ``base_is_broken`` reads."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base: str
    runs: int
    seed: int
    at: str
    tests_seen: int
    flaky: list[TestCount]
    broken: list[TestCount]
    incomplete_runs: list[str]
    quarantine_list: str
    """Where the list was written (host path)."""
    properties_left_out: list[str] = []
    """The contract's property tests, deselected: they may fail on the base (the task)."""

    @property
    def base_broken(self) -> bool:
        return bool(self.broken or self.incomplete_runs)

    def broken_reasons(self) -> list[str]:
        return [t.test_id for t in self.broken] + [
            f"sweep run did not finish: {r}" for r in self.incomplete_runs
        ]


def _incomplete(number: int, run: AgentRun, runner: str = "pytest") -> str | None:
    process = run.process
    if process.exit_code is None:
        why = "idle limit" if process.idle_timed_out else "wall-clock limit"
        return f"run {number}: killed at the {why}"
    finished = CTEST_FINISHED_EXIT_CODES if runner == "ctest" else FINISHED_EXIT_CODES
    if process.exit_code not in finished:
        return (
            f"run {number}: {runner} exit code {process.exit_code} "
            f"({'build failure' if run.collection_errors else 'collection error'} or crash)"
        )
    if not run.complete:
        return f"run {number}: the process ended before {runner} finished"
    return None


def is_property_test(test_id: str, property_tests: Sequence[str]) -> bool:
    """``test_id`` is one of the contract's property tests or a parametrized case of one."""
    return any(test_id == t or test_id.startswith(f"{t}[") for t in property_tests)


def property_tests(contract: Contract) -> list[str]:
    return [p.test for p in contract.properties]


def tally_runs(
    runs: list[AgentRun], *, left_out: Sequence[str] = (), runner: str = "pytest"
) -> tuple[list[Tally], list[str]]:
    """Failures per test over ``runs`` (missing counts as failing), and unfinished runs;
    tests in ``left_out`` (the contract's properties) are not counted."""
    seen: dict[str, int] = {}
    failed_in: dict[str, int] = {}
    for run in runs:
        this_run: dict[str, bool] = {}
        for outcome in run.outcomes:
            if is_property_test(outcome.node_id, left_out):
                continue
            failing = outcome.outcome in FAILING_OUTCOMES
            this_run[outcome.node_id] = this_run.get(outcome.node_id, False) or failing
        for test_id, failing in this_run.items():
            seen[test_id] = seen.get(test_id, 0) + 1
            failed_in[test_id] = failed_in.get(test_id, 0) + int(failing)
    total = len(runs)
    tallies = [
        Tally(test_id=t, failures=failed_in[t] + (total - seen[t]), runs=total)
        for t in sorted(seen)
    ]
    incomplete = [
        reason
        for number, run in enumerate(runs, start=1)
        if (reason := _incomplete(number, run, runner)) is not None
    ]
    return tallies, incomplete


def _record_path(config: ScorerConfig, repo: Path, base_sha: str) -> Path:
    return state_dir(config) / "sweeps" / repo_key(repo) / f"{base_sha}.json"


def sweep(
    repo: Path,
    base: str,
    config: ScorerConfig,
    sandbox_config: SandboxConfig,
    *,
    runs: int = DEFAULT_SWEEP_RUNS,
    contract: str = DEFAULT_CONTRACT_PATH,
    on_run: Callable[[int, AgentRun], None] | None = None,
) -> SweepResult:
    """Run the suite ``runs`` times on ``base``; write the quarantine list and the record."""
    if runs < 2:
        raise InputError(f"a sweep needs at least 2 runs to tell flaky from broken, got {runs}")
    tree = working_tree(repo)
    base_sha = resolve_commit(repo, base)
    contract_obj, contract_file = contract_at(repo, base_sha, contract)
    list_rel = quarantine_list_path(contract_obj)
    contract_paths = list(dict.fromkeys([*contract_obj.contract_paths(contract_file), list_rel]))
    clone = scorer_clone(tree, [base_sha], config)
    seed = contract_obj.seeds[0]
    left_out = property_tests(contract_obj)
    deselect = [arg for test in left_out for arg in ("--deselect", test)]

    def one(number: int) -> AgentRun:
        if contract_obj.runner == "ctest":
            # A CMake project: the tests ctest knows, the contract's left out, on a fresh
            # checkout (its build is cached by content, so the three runs build once).
            with clean_checkout(clone, base_sha, config) as checkout:
                prepare_writable_tree(checkout, sandbox_config)
                run = run_agent_ctest(
                    checkout,
                    seed,
                    sandbox_config,
                    seed_env=contract_obj.seed_env,
                    exclude=left_out,
                    limits=config.run_limits,
                )
        else:
            run = run_pytest_once(
                clone,
                base_sha,
                deselect,
                seed,
                config,
                sandbox_config,
                contract_paths=contract_paths,
            )
        if on_run is not None:
            on_run(number, run)
        return run

    with ThreadPoolExecutor(max_workers=min(config.worker_count(), runs)) as pool:
        results = list(pool.map(one, range(1, runs + 1)))
    tallies, incomplete = tally_runs(results, left_out=left_out, runner=contract_obj.runner)
    flaky = [t for t in tallies if 0 < t.failures < runs]
    broken = [t for t in tallies if t.failures == runs]
    now = datetime.now(UTC)
    list_path = tree / list_rel
    qlist = merge_sweep(
        read_quarantine_list(list_path),
        base=base_sha,
        runs=runs,
        flaky=flaky,
        broken=broken,
        incomplete=incomplete,
        now=now,
    )
    write_quarantine_list(list_path, qlist)
    result = SweepResult(
        base=base_sha,
        runs=runs,
        seed=seed,
        at=utc_stamp(now),
        tests_seen=len(tallies),
        flaky=[TestCount(test_id=t.test_id, failures=t.failures, runs=t.runs) for t in flaky],
        broken=[TestCount(test_id=t.test_id, failures=t.failures, runs=t.runs) for t in broken],
        incomplete_runs=incomplete,
        quarantine_list=str(list_path),
        properties_left_out=left_out,
    )
    write_json_atomic(_record_path(config, tree, base_sha), result.model_dump(mode="json"))
    return result


def base_is_broken(
    repo: Path, base_sha: str, config: ScorerConfig, *, contract: Contract | None = None
) -> list[str]:
    """Why an agent session must not start on ``base_sha``; empty when nothing is known.

    One line per reason: a test id that failed in every run of a sweep, or
    ``sweep run did not finish: ...``. The scorer's own record of a sweep of
    exactly this commit decides; without one, the ``broken`` entries of the
    quarantine list committed at ``base_sha`` do (pass ``contract`` to find
    it). Nothing recorded means nothing known, not a clean bill: the sweep is
    the operator's step before ``serve``.
    """
    left_out = property_tests(contract) if contract is not None else []
    record = _record_path(config, Path(repo).resolve(), base_sha)
    if record.is_file():
        try:
            result = SweepResult.model_validate(json.loads(record.read_text(encoding="utf-8")))
        except (OSError, ValueError, ValidationError):
            # A record we cannot read must not let a broken base through.
            return [f"sweep record unreadable: {record}"]
        return [r for r in result.broken_reasons() if not is_property_test(r, left_out)]
    if contract is None:
        return []
    rel = quarantine_list_path(contract)
    data = file_at(Path(repo), base_sha, rel)
    if data is None:
        return []
    try:
        committed = parse_quarantine_list(data.decode("utf-8"), f"{base_sha[:12]}:{rel}")
    except (InputError, UnicodeDecodeError):
        return [f"quarantine list unreadable: {base_sha[:12]}:{rel}"]
    return [t.test_id for t in committed.broken if not is_property_test(t.test_id, left_out)] + [
        f"sweep run did not finish: {r}" for r in committed.incomplete_runs
    ]

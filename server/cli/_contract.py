"""``patchwarden contract check|init``: write a contract, and see it work on the base."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from patchwarden.sandbox import PropertyRun, list_ctest_tests, repo_root, working_files
from patchwarden.scorer import (
    DEFAULT_CONTRACT_PATH,
    TODO_SPEC_PATHS,
    ContractCheck,
    ContractError,
    InputError,
    bare_name,
    check_contract,
    collection_cause,
    contract_skeleton,
    ctest_skeleton,
    guards_for,
    incomplete_cause,
    is_guard,
    normalise_witness,
    runner_test_problem,
    working_copy_note,
)

from ._base import (
    EXIT_FAILS,
    OneLineGroup,
    config_of,
    config_option,
    contract_option,
    printable,
    repo_option,
    table,
)
from ._progress import progress

FOREIGN_MODULE = "ForeignModule"
SHOWN_GUARDS = 5
"""Up to this many guards are rows of the table; beyond, only those that matter are."""


@click.group("contract", cls=OneLineGroup)
def contract_group() -> None:
    """Write a contract skeleton, or check a contract against the base."""


@contract_group.command("check")
@repo_option
@click.option(
    "--base", default="HEAD", show_default=True, help="The base commit agents start from."
)
@click.option(
    "--reference",
    default=None,
    metavar="REF",
    help="A known-good fix of the base: every property must pass on it too (its contract "
    "paths restored from the base, as score does), or exit 1 naming the property.",
)
@contract_option
@config_option
def check_cmd(
    repo: Path, base: str, reference: str | None, contract: str, config_path: Path | None
) -> None:
    """Collect every property's test on BASE in the sandbox (a missing or ambiguous id:
    exit 2, naming the property and the contract's file:line), then run the schedule on
    BASE (and on REFERENCE) and print property x seed outcomes. Exit 1 when a run could
    not measure the project's code (incomplete, or code imported from outside the tree),
    or when a property does not pass on every seed of REFERENCE."""
    config = config_of(config_path)
    with progress("contract check", total=None) as bar:
        bar.note("collecting the property tests on the base")
        result = check_contract(
            repo,
            base,
            contract,
            config.scorer,
            config.sandbox,
            reference=reference,
            on_run=bar.report,
        )
    note = working_copy_note(repo, result.base, contract)
    if note:
        click.echo(f"note: {printable(note)}")
    failed = _report(result)
    if failed:
        click.echo(f"check failed: {failed}")
        sys.exit(EXIT_FAILS)


def _cell(prop: str, run: PropertyRun | None) -> str:
    if run is None:
        return "missing (no run)"
    record = next((r for r in run.records if r.prop == prop), None)
    if record is None:
        return "missing (run incomplete)" if not run.complete else "missing"
    if record.status == "pass":
        return "pass"
    witness = normalise_witness(record.witness).removeprefix(f"{prop}|")
    return printable(f"fail: {witness.replace('|', ' at ', 1)}")


def _reference_cell(prop: str, result: ContractCheck) -> str:
    """The reference's outcome of ``prop``: pass, or its first failing seed's cell."""
    for run in result.reference_runs.values():
        cell = _cell(prop, run)
        if cell != "pass":
            return cell
    return "pass" if result.reference_runs else "missing (no run)"


def _shown(result: ContractCheck) -> tuple[list[str], list[str]]:
    """(properties in the table, guards summarised instead): every target; the guards
    too when there are few, else only those that do not pass everywhere (they matter)."""
    props = [c.prop for c in result.ids]
    guards = [p for p in props if is_guard(p)]
    if len(guards) <= SHOWN_GUARDS:
        return props, []
    quiet = [
        p
        for p in guards
        if result.passing(p)
        and (result.reference is None or result.passing(p, result.reference_runs))
    ]
    return [p for p in props if p not in quiet], quiet


def _isolation(prop: str, result: ContractCheck) -> str:
    """``isolated``, or ``in-process: <why>`` (docs/design/isolated-oracle.md): what an
    operator fixes in a property before any agent runs."""
    seen = [r.isolation for run in result.runs.values() for r in run.records if r.prop == prop]
    return next((s for s in seen if s != "isolated"), "isolated" if seen else "not run")


def _cause(prop: str, result: ContractCheck) -> str:
    """Why ``prop`` failed for a reason of the run's (not the product's answer) on the
    first seed it did: its module did not collect, its setup failed (a fixture not found),
    with the exception and its file:line. Empty when it did not."""
    runs = [*result.runs.values(), *result.reference_runs.values()]
    seen = (r.cause for run in runs for r in run.records if r.prop == prop and r.cause)
    return next(seen, "")


def _report(result: ContractCheck) -> str:
    """Print what the check found; return why it failed (empty when it held)."""
    props = [c.prop for c in result.ids]
    guards = [p for p in props if is_guard(p)]
    click.echo(
        f"base {result.base[:12]}: {len(props)} propert{'y' if len(props) == 1 else 'ies'}"
        + (f" ({len(guards)} guard{'s' * (len(guards) != 1)})" if guards else "")
        + f", seeds {' '.join(str(s) for s in result.runs)}"
        + (f"; reference {result.reference[:12]}" if result.reference else "")
    )
    click.echo(result.runner_line())
    if result.runner == "pytest":
        roots = [*result.layout.sources, ". (the tree)"]
        click.echo(f"import roots: {', '.join(roots)}")
        for note in result.layout.notes:
            click.echo(f"note: {printable(note)}")
    left_out = next((r.configuration for r in result.runs.values()), [])
    if left_out:
        click.echo(f"pytest configuration left out: {printable('; '.join(left_out))}")
    named = [c for c in result.ids if not is_guard(c.prop) or len(guards) <= SHOWN_GUARDS]
    click.echo(
        "test ids: "
        + ", ".join(
            f"{c.prop} ({c.cases} parametrized cases)" if c.cases > 1 else c.prop for c in named
        )
        + (f" and {len(guards)} guards" if len(named) < len(props) else "")
        + " collected on the base"
    )
    for node, text in result.collection_errors:
        click.echo(f"note: collection error in {node}: {printable(collection_cause(text))}")
    shown, quiet = _shown(result)
    headers = ["property", *[f"seed {s}" for s in result.runs]]
    if result.reference is not None:
        headers.append("reference")
    rows = [
        [
            printable(prop),
            *[_cell(prop, result.runs.get(seed)) for seed in result.runs],
            *([_reference_cell(prop, result)] if result.reference is not None else []),
        ]
        for prop in shown
    ]
    click.echo(table(headers, rows))
    if quiet:
        where = "the base and the reference" if result.reference else "the base"
        click.echo(
            f"guards: {len(quiet)} of {len(guards)} pass on every seed of {where} (not shown)"
        )
    for prop in props:
        isolation = _isolation(prop, result)
        if prop in shown or isolation != "isolated":
            click.echo(f"isolation: {printable(prop)}: {printable(isolation)}")
    for prop in props:
        cause = _cause(prop, result)
        if cause:
            click.echo(f"not run: {printable(prop)}: {printable(cause)}")
    for prop in result.always_passing():
        if is_guard(prop):
            continue
        click.echo(
            f"warning: {printable(prop)} passes on every seed of the base: a patch has nothing "
            "to clear (at best both_pass); right for a guard against regressions, but it does "
            "not catch the bug"
        )
    for prop in guards:
        if result.runs and not result.passing(prop):
            click.echo(
                f"warning: {printable(prop)} does not pass on every seed of the base: a guard "
                "that fails there can only be a uniform_fail reject"
            )
    problems = []
    for side, runs in (("", result.runs), ("reference ", result.reference_runs)):
        for seed, run in runs.items():
            if not run.complete or run.missing:
                cause = incomplete_cause(run)
                problems.append(
                    f"the {side}run of seed {seed} is incomplete" + (f" ({cause})" if cause else "")
                )
            foreign = [r for r in run.records if f"|{FOREIGN_MODULE}|" in r.witness]
            if foreign:
                detail = foreign[0].witness.split("|", 2)[2]
                problems.append(
                    f"{side}seed {seed} imported the project from outside the tree: {detail}"
                )
    problems += result.reference_problems()
    return printable("; ".join(dict.fromkeys(problems)))


@contract_group.command("init")
@repo_option
@click.option(
    "--test",
    "tests",
    multiple=True,
    help="A property's pytest node id (path::name, relative to the repository); repeat it. "
    "Without it, on a CMake project: one property per ctest test (ctest -N after a build in "
    "the sandbox).",
)
@click.option(
    "--guards-for",
    "guards",
    multiple=True,
    metavar="NAME",
    help="Add the project's own tests of this function (or Class.method) as regression "
    "guards: every test function or method of the repository's test files that names it; "
    "repeat it.",
)
@click.option(
    "--contract",
    default=DEFAULT_CONTRACT_PATH,
    show_default=True,
    help="Where to write the contract, relative to the repository.",
)
@config_option
def init_cmd(
    repo: Path,
    tests: tuple[str, ...],
    guards: tuple[str, ...],
    contract: str,
    config_path: Path | None,
) -> None:
    """Write a commented contract skeleton with one property per --test (and one regression
    guard per test of each --guards-for function); on a CMake project without --test, one
    property per ctest test. Never overwrites."""
    root = repo_root(repo)
    if not tests:
        _init_ctest(repo, root, contract, config_path)
        return
    repeated = sorted({t for t in tests if tests.count(t) > 1})
    if repeated:
        raise InputError(f"--test given twice: {repeated[0]} (one test per property)")
    for test in tests:
        if runner_test_problem("pytest", test):
            raise InputError(f"--test must be a relative pytest node id 'path::name', got {test!r}")
    rel = Path(contract)
    if rel.is_absolute() or ".." in rel.parts:
        raise ContractError("the contract must be a path inside the repository", where=contract)
    target = root / rel
    if os.path.lexists(target):
        raise ContractError("already exists; not overwritten", where=str(target))
    for test in tests:
        path = test.split("::", 1)[0]
        if not (root / path).is_file():
            click.echo(f"warning: {path} does not exist yet in {root}", err=True)
    found = guards_for(root, working_files(root), list(dict.fromkeys(guards)), exclude=tests)
    for name, named in found.items():
        if not named:
            raise InputError(
                f"--guards-for {name}: no test function or method in the repository's test "
                f"files names {bare_name(name)!r}"
            )
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with os.fdopen(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644), "w") as out:
            out.write(contract_skeleton(tests, guards=found))
    except FileExistsError:
        raise ContractError("already exists; not overwritten", where=str(target)) from None
    click.echo(f"wrote {target}")
    for name, named in found.items():
        shown = ", ".join(named[:3]) + (", ..." if len(named) > 3 else "")
        click.echo(f"guards for {name}: {len(named)} test{'s' * (len(named) != 1)} ({shown})")
    if found:
        click.echo(
            "warning: a guard that asserts the bug (a test the fix must change) makes every "
            "honest fix a regression reject: check the guards against a known-good fix with "
            "`contract check --reference REF`"
        )
    click.echo(
        "next: fill in each oracle, commit the contract with the property tests, then run "
        f"`patchwarden contract check --repo {repo}`"
    )


def _init_ctest(repo: Path, root: Path, contract: str, config_path: Path | None) -> None:
    """``contract init`` on a CMake project: its ctest tests, listed after a sandboxed build."""
    if not (root / "CMakeLists.txt").is_file():
        raise InputError(
            "give --test (pytest node ids), or run it on a CMake project (no CMakeLists.txt "
            f"in {root})"
        )
    target = _new_contract_target(root, contract)
    config = config_of(config_path)
    names = list_ctest_tests(root, config.sandbox, config.scorer.run_limits)
    if not names:
        raise InputError(f"ctest -N lists no tests in {root} (enable_testing and add_test?)")
    # The directory holding the tests' CMakeLists.txt is the usual home of their sources.
    spec = [d for d in ("tests", "test") if (root / d / "CMakeLists.txt").is_file()][:1]
    with os.fdopen(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644), "w") as out:
        out.write(ctest_skeleton(names, spec))
    click.echo(f"wrote {target}: runner ctest, {len(names)} tests ({', '.join(names)})")
    if not spec:
        click.echo(f"warning: spec_paths is empty: {TODO_SPEC_PATHS}", err=True)
    click.echo(
        "next: keep the tests that are properties, fill in each oracle, commit, then run "
        f"`patchwarden contract check --repo {repo}`"
    )


def _new_contract_target(root: Path, contract: str) -> Path:
    rel = Path(contract)
    if rel.is_absolute() or ".." in rel.parts:
        raise ContractError("the contract must be a path inside the repository", where=contract)
    target = root / rel
    if os.path.lexists(target):
        raise ContractError("already exists; not overwritten", where=str(target))
    target.parent.mkdir(parents=True, exist_ok=True)
    return target

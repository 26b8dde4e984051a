"""``patchwarden contract check|init``: write a contract, and see it work on the base."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from patchwarden.sandbox import PropertyRun, repo_root, working_files
from patchwarden.scorer import (
    DEFAULT_CONTRACT_PATH,
    ContractCheck,
    ContractError,
    InputError,
    Property,
    bare_name,
    check_contract,
    contract_skeleton,
    guards_for,
    normalise_witness,
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


@click.group("contract", cls=OneLineGroup)
def contract_group() -> None:
    """Write a contract skeleton, or check a contract against the base."""


@contract_group.command("check")
@repo_option
@click.option(
    "--base", default="HEAD", show_default=True, help="The base commit agents start from."
)
@contract_option
@config_option
def check_cmd(repo: Path, base: str, contract: str, config_path: Path | None) -> None:
    """Collect every property's test on BASE in the sandbox (a missing or ambiguous id:
    exit 2, naming the property and the contract's file:line), then run the schedule on
    BASE and print property x seed outcomes. Exit 1 when a run could not measure the
    project's code (incomplete, or code imported from outside the tree)."""
    config = config_of(config_path)
    with progress("contract check", total=None) as bar:
        bar.note("collecting the property tests on the base")
        result = check_contract(
            repo, base, contract, config.scorer, config.sandbox, on_run=bar.report
        )
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


def _report(result: ContractCheck) -> str:
    """Print what the check found; return why it failed (empty when it held)."""
    props = [c.prop for c in result.ids]
    click.echo(
        f"base {result.base[:12]}: {len(props)} propert{'y' if len(props) == 1 else 'ies'}, "
        f"seeds {' '.join(str(s) for s in result.runs)}"
    )
    roots = [*result.layout.sources, ". (the tree)"]
    click.echo(f"import roots: {', '.join(roots)}")
    for note in result.layout.notes:
        click.echo(f"note: {printable(note)}")
    click.echo(
        "test ids: "
        + ", ".join(
            f"{c.prop} ({c.cases} parametrized cases)" if c.cases > 1 else c.prop
            for c in result.ids
        )
        + " collected on the base"
    )
    for node, text in result.collection_errors:
        last = [line for line in text.splitlines() if line.strip()]
        click.echo(f"note: collection error in {node}: {printable(last[-1] if last else '')}")
    rows = [
        [printable(prop), *[_cell(prop, result.runs.get(seed)) for seed in result.runs]]
        for prop in props
    ]
    click.echo(table(["property", *[f"seed {s}" for s in result.runs]], rows))
    for prop in result.always_passing():
        click.echo(
            f"warning: {printable(prop)} passes on every seed of the base: a patch has nothing "
            "to clear (at best both_pass); right for a guard against regressions, but it does "
            "not catch the bug"
        )
    problems = []
    for seed, run in result.runs.items():
        if not run.complete or run.missing:
            problems.append(f"the run of seed {seed} is incomplete")
        foreign = [r for r in run.records if f"|{FOREIGN_MODULE}|" in r.witness]
        if foreign:
            detail = foreign[0].witness.split("|", 2)[2]
            problems.append(f"seed {seed} imported the project from outside the tree: {detail}")
    return printable("; ".join(dict.fromkeys(problems)))


@contract_group.command("init")
@repo_option
@click.option(
    "--test",
    "tests",
    multiple=True,
    required=True,
    help="A property's pytest node id (path::name, relative to the repository); repeat it.",
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
def init_cmd(repo: Path, tests: tuple[str, ...], guards: tuple[str, ...], contract: str) -> None:
    """Write a commented contract skeleton with one property per --test (and one regression
    guard per test of each --guards-for function). Never overwrites."""
    root = repo_root(repo)
    repeated = sorted({t for t in tests if tests.count(t) > 1})
    if repeated:
        raise InputError(f"--test given twice: {repeated[0]} (one test per property)")
    for test in tests:
        try:
            Property(id="p", test=test)
        except ValueError:
            raise InputError(
                f"--test must be a relative pytest node id 'path::name', got {test!r}"
            ) from None
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
    click.echo(
        "next: fill in each oracle, commit the contract with the property tests, then run "
        f"`patchwarden contract check --repo {repo}`"
    )

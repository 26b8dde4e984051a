"""``patchwarden task from-fix``: a task (base, reference, contract) from a known-good fix."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from patchwarden.scorer import DEFAULT_TEST_TIMEOUT_S, Task, build_task

from ._base import EXIT_FAILS, OneLineGroup, config_of, config_option, printable, repo_option
from ._progress import progress

SHOWN_GUARDS = 5
"""Guards named in the text output; the rest are counted (all are in ``--json``)."""


@click.group("task", cls=OneLineGroup)
def task_group() -> None:
    """Build scoring tasks from known-good fixes."""


@task_group.command("from-fix")
@repo_option
@click.option("--fix", required=True, help="The fix commit (any git revision).")
@click.option(
    "--parent", default=None, help="The commit the fix applies to (default: its first parent)."
)
@click.option(
    "--name",
    default=None,
    help="The task's name under refs/heads/patchwarden/tasks/ (default: the fix's short sha).",
)
@click.option(
    "--test",
    "tests",
    multiple=True,
    metavar="NODEID",
    help="A test to consider besides those of the modules the fix touches; repeat it.",
)
@click.option(
    "--guards-for",
    "guards",
    multiple=True,
    metavar="NAME",
    help="Also try the base's tests of this function (or Class.method) as guards; repeat it.",
)
@click.option(
    "--test-timeout",
    type=click.FloatRange(min=1),
    default=None,
    metavar="S",
    help="Seconds a tried test may run in product code, in one call or in many: a test "
    "that loops forever fails at that deadline and the rest of its module still runs (default: "
    f"scorer.run_limits.call_timeout_s, else {DEFAULT_TEST_TIMEOUT_S:g}).",
)
@click.option(
    "--keep-runs",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="Write the build's own runs there: each tried test's record per side and seed, and "
    "what the oracle and the product process printed (for a person to read).",
)
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print the task object.")
def from_fix_cmd(
    repo: Path,
    fix: str,
    parent: str | None,
    name: str | None,
    tests: tuple[str, ...],
    guards: tuple[str, ...],
    test_timeout: float | None,
    keep_runs: Path | None,
    config_path: Path | None,
    as_json: bool,
) -> None:
    """Split FIX into its test changes and product changes; write the base (parent + tests
    + contract) and the reference (base + fix) under refs/heads/patchwarden/tasks/NAME/;
    run the touched test modules on both, every seed (targets fail on the base and pass on
    the reference, guards pass on both, the rest are excluded); then score the reference
    (must be a clean accept) and the empty patch (must be a reject). Exit 0 when the task
    validates, 1 when it does not."""
    config = config_of(config_path)
    with progress("task from-fix", total=None) as bar:
        bar.note("splitting the fix")
        task = build_task(
            repo,
            fix,
            config.scorer,
            config.sandbox,
            parent=parent,
            name=name,
            tests=tests,
            guards_for=guards,
            test_timeout_s=test_timeout,
            keep_runs=keep_runs,
            on_step=bar.note,
            on_run=bar.report,
        )
    if as_json:
        click.echo(json.dumps(task.to_json(), indent=2))
    else:
        _report(task, config_path)
    if not task.validated:
        sys.exit(EXIT_FAILS)


def _report(task: Task, config_path: Path | None = None) -> None:
    click.echo(
        f"task {task.name}: fix {task.fix[:12]} on parent {task.parent[:12]}: "
        f"{len(task.test_changes)} test change(s), {len(task.product_changes)} product change(s)"
    )
    click.echo(f"base       {task.base[:12]}  {task.base_ref}")
    click.echo(f"reference  {task.reference[:12]}  {task.reference_ref}")
    targets, guards, excluded = task.targets(), task.guards(), task.excluded()
    click.echo(f"targets: {len(targets)}")
    for prop in targets:
        click.echo(f"  {printable(prop.id)}  {printable(prop.test)}")
    shown = ", ".join(printable(p.id) for p in guards[:SHOWN_GUARDS])
    more = f", +{len(guards) - SHOWN_GUARDS} more" if len(guards) > SHOWN_GUARDS else ""
    click.echo(f"guards: {len(guards)}" + (f" ({shown}{more})" if guards else ""))
    click.echo(f"excluded: {len(excluded)}")
    for result in excluded:
        text = f"{result.test}: {result.why_excluded()} ({result.outcomes()})"
        click.echo(f"  {printable(text)}")
    for module, why in task.not_collected:
        click.echo(f"not collected on the base: {printable(module)}: {printable(why)}")
    if task.problem:
        click.echo(f"not validated: {printable(task.problem)}")
        return
    for v in task.validation:
        mark = "ok" if v.ok else f"not {v.wanted}: {printable(v.why)}"
        click.echo(f"validation, {v.what}: {v.decision} (verdict {v.verdict_id}) {mark}")
    if task.validated:
        # The task was built and validated under that configuration (its oracle, its
        # isolation outcome): scored under another, the same patch can get another verdict.
        config = f" --config {config_path}" if config_path is not None else ""
        click.echo(
            f"validated. score a patch with `patchwarden score --repo {task.repo} --parent "
            f"{task.base_ref} --patch PATCH --contract {task.contract}{config}`"
        )
    else:
        click.echo(f"not validated: {printable(task.failed_validation())}")

"""``patchwarden sweep`` and ``quarantine release-check``: the flake quarantine."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from patchwarden.sandbox import AgentRun
from patchwarden.scorer import (
    DEFAULT_SWEEP_RUNS,
    RELEASE_RUNS,
    release_check,
    sweep,
)

from ._base import (
    EXIT_FAILS,
    OneLineCommand,
    OneLineGroup,
    config_of,
    config_option,
    contract_option,
    repo_option,
)
from ._progress import progress


def _run_line(number: int, runs: int, run: AgentRun) -> str:
    counts: dict[str, int] = {}
    for outcome in run.outcomes:
        counts[outcome.outcome] = counts.get(outcome.outcome, 0) + 1
    shown = ", ".join(f"{n} {o}" for o, n in sorted(counts.items())) or "no tests"
    code = run.process.exit_code
    return f"run {number}/{runs}: {shown} (exit {code if code is not None else 'killed'})"


@click.command("sweep", cls=OneLineCommand)
@repo_option
@click.option("--base", required=True, help="The base commit agents will start from.")
@click.option("--runs", type=click.IntRange(min=2), default=DEFAULT_SWEEP_RUNS, show_default=True)
@contract_option
@config_option
def sweep_cmd(repo: Path, base: str, runs: int, contract: str, config_path: Path | None) -> None:
    """Run the suite RUNS times on a clean checkout of BASE, each run its own sandboxed
    process. Flaky tests go into the quarantine list; a test failing every run means the
    base is broken (exit 1), and serve refuses it unless agent.waive_broken_base."""
    config = config_of(config_path)
    done = iter(range(1, runs + 1))
    with progress("sweep", total=None) as bar:

        def on_run(number: int, run: AgentRun) -> None:
            click.echo(_run_line(number, runs, run))
            bar.report(next(done), runs, f"run {number}")

        result = sweep(
            repo,
            base,
            config.scorer,
            config.sandbox,
            runs=runs,
            contract=contract,
            on_run=on_run,
        )
    click.echo(
        f"swept {result.base[:12]}: {result.tests_seen} tests, {result.runs} runs, "
        f"seed {result.seed}"
    )
    if result.properties_left_out:
        click.echo(
            f"left out: {len(result.properties_left_out)} contract "
            f"propert{'y' if len(result.properties_left_out) == 1 else 'ies'} (the task: "
            "they may fail on the base; not swept, never a broken base): "
            + ", ".join(result.properties_left_out)
        )
    for test in result.flaky:
        click.echo(
            f"flaky (quarantined): {test.test_id} failed {test.failures} of {test.runs} runs"
        )
    for test in result.broken:
        click.echo(f"broken: {test.test_id} failed {test.failures} of {test.runs} runs")
    for reason in result.incomplete_runs:
        click.echo(f"incomplete: {reason}")
    click.echo(f"quarantine list: {result.quarantine_list} (review and commit it)")
    if result.base_broken:
        click.echo(
            "base broken: serve refuses this base until it is fixed "
            "or agent.waive_broken_base is set"
        )
        sys.exit(EXIT_FAILS)


@click.group("quarantine", cls=OneLineGroup)
def quarantine_group() -> None:
    """The flake quarantine (docs/design/contract-layers.md)."""


@quarantine_group.command("release-check")
@repo_option
@click.option("--test-id", required=True, help="The quarantined pytest node id.")
@click.option(
    "--runs",
    type=click.IntRange(min=RELEASE_RUNS),
    default=RELEASE_RUNS,
    show_default=True,
    help="Consecutive clean runs required.",
)
@click.option("--base", default="HEAD", show_default=True, help="Commit to run the test on.")
@contract_option
@config_option
def release_check_cmd(
    repo: Path,
    test_id: str,
    runs: int,
    base: str,
    contract: str,
    config_path: Path | None,
) -> None:
    """Release a quarantined test after RUNS consecutive clean runs, each its own
    sandboxed process on a clean checkout, on this machine. The first unclean run stops
    the check and the test stays quarantined (exit 1). Every attempt is recorded in the
    list."""
    config = config_of(config_path)

    def say_run(number: int, failure: str) -> None:
        click.echo(f"run {number}/{runs}: {failure or 'clean'}")

    check = release_check(
        repo,
        test_id,
        config.scorer,
        config.sandbox,
        base=base,
        contract=contract,
        runs=runs,
        on_run=say_run,
    )
    if check.released:
        click.echo(
            f"released: {test_id} after {check.clean} consecutive clean runs on "
            f"{check.hostname} ({check.machine_id})"
        )
        return
    click.echo(f"kept in quarantine: {test_id} ({check.failure})")
    sys.exit(EXIT_FAILS)

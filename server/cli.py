"""The ``patchwarden`` command line (SPEC section 12).

Exit codes: 0 accept (or a check that holds), 1 reject (or a check that
fails), 3 propose_freeze, 4 skipped, 2 usage, configuration or input error.
Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from patchwarden.sandbox import check_sandbox
from patchwarden.scorer import (
    PatchwardenError,
    ScoreRequest,
    decide,
    load_contract,
    read_rows,
    review_note,
    score,
)

from .config import config_schema, load_config

EXIT_ACCEPT = 0
EXIT_REJECT = 1
EXIT_USAGE = 2
EXIT_PROPOSE_FREEZE = 3
EXIT_SKIPPED = 4

DECISION_EXIT = {
    "accept": EXIT_ACCEPT,
    "reject": EXIT_REJECT,
    "propose_freeze": EXIT_PROPOSE_FREEZE,
    "skipped": EXIT_SKIPPED,
}

F = TypeVar("F", bound=Callable[..., Any])


def one_line_errors(func: F) -> F:
    """Turn our errors into one stderr line and exit 2."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except PatchwardenError as exc:
            click.echo(f"patchwarden: error: {exc}", err=True)
            sys.exit(EXIT_USAGE)
        except OSError as exc:
            # An unwritable log dir or a full disk is an environment error (exit 2),
            # never a traceback whose exit 1 a script would read as "reject".
            where = exc.filename or "patchwarden"
            click.echo(f"patchwarden: error: {where}: {exc.strerror or exc}", err=True)
            sys.exit(EXIT_USAGE)

    return wrapper  # type: ignore[return-value]


def emit_decision(decision: str, payload: dict[str, Any], note: str, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(payload, indent=2, sort_keys=False))
    else:
        click.echo(note, nl=False)
    sys.exit(DECISION_EXIT[decision])


config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Operator configuration (YAML). Without it the safe defaults apply.",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="patchwarden")
def cli() -> None:
    """patchwarden: trustworthy verdicts on patches written by coding agents."""


@cli.command("decide")
@click.argument("parent_rows", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("patch_rows", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--contract", "contract_path", required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the decision object.")
@one_line_errors
def decide_cmd(parent_rows: Path, patch_rows: Path, contract_path: Path, as_json: bool) -> None:
    """The differential gate alone, on saved JSONL rows."""
    contract = load_contract(contract_path)
    result = decide(contract, read_rows(parent_rows), read_rows(patch_rows))
    emit_decision(result.decision, result.to_json(), review_note(result), as_json)


@cli.command("score")
@click.option("--repo", type=click.Path(path_type=Path, file_okay=False), required=True)
@click.option(
    "--contract",
    "contract",
    required=True,
    help="Contract path inside the repository (read from the parent commit).",
)
@click.option("--parent", required=True, help="Parent commit (any git revision).")
@click.option("--patch", required=True, help="Patch commit (any git revision).")
@click.option(
    "--log-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where the evidence bundle goes (default: the config's scorer.log_dir).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the decision object.")
@config_option
@one_line_errors
def score_cmd(
    repo: Path,
    contract: str,
    parent: str,
    patch: str,
    log_dir: Path | None,
    as_json: bool,
    config_path: Path | None,
) -> None:
    """Run the contract on both commits, decide, and write the evidence bundle."""
    config = load_config(config_path)
    scorer_config = config.scorer
    if log_dir is not None:
        scorer_config = scorer_config.model_copy(update={"log_dir": str(log_dir)})
    verdict = score(
        ScoreRequest(repo=repo, contract=contract, parent=parent, patch=patch),
        scorer_config,
        config.sandbox,
    )
    note = verdict.review_note + f"evidence: {verdict.bundle}\n"
    emit_decision(verdict.decision, verdict.to_json(), note, as_json)


@cli.command("doctor")
@config_option
@one_line_errors
def doctor_cmd(config_path: Path | None) -> None:
    """Check that the sandbox works on this machine, and say what to change if not."""
    config = load_config(config_path)
    checks = check_sandbox(config.sandbox)
    for check in checks:
        mark = "ok  " if check.ok else "FAIL"
        click.echo(f"{mark} {check.name}: {check.detail}")
        if not check.ok and check.fix:
            click.echo(f"     fix: {check.fix}")
    if config.sandbox.backend == "none":
        click.echo("note: sandbox.backend is 'none': nothing is isolated (development only)")
    sys.exit(EXIT_ACCEPT if all(c.ok for c in checks) else EXIT_REJECT)


@cli.group("config")
def config_group() -> None:
    """Check the operator configuration or print its JSON Schema."""


@config_group.command("check")
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False))
@one_line_errors
def config_check(path: Path) -> None:
    """Validate an operator configuration file."""
    load_config(path)
    click.echo(f"{path}: ok")


@config_group.command("schema")
def config_schema_cmd() -> None:
    """Print the JSON Schema of the operator configuration."""
    click.echo(config_schema(), nl=False)


def main() -> None:
    cli(prog_name="patchwarden")


from . import _cli_review, _cli_session  # noqa: E402  (they register on the group above)

_cli_session.register(cli)
_cli_review.register(cli)

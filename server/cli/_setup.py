"""``patchwarden doctor`` and ``patchwarden config check|schema``: is this machine and this
configuration usable?"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from patchwarden.sandbox import check_interpreter, check_sandbox, detect_layout, repo_root
from patchwarden.scorer import EXTRA_SEEDS_OFF

from ..config import config_schema, load_config
from ._base import EXIT_ACCEPT, EXIT_REJECT, OneLineCommand, OneLineGroup, config_option


@click.command("doctor", cls=OneLineCommand)
@config_option
@click.option(
    "--repo",
    type=click.Path(path_type=Path, file_okay=False),
    help="Also check that the interpreter holds no copy of this project's packages "
    "(default: agent.repo of --config, if given).",
)
def doctor_cmd(config_path: Path | None, repo: Path | None) -> None:
    """Check that the sandbox works on this machine and what the configured interpreter holds
    (pytest and Hypothesis the runner supports; no copy of the project), and say what to
    change if not."""
    config = load_config(config_path)
    checks = check_sandbox(config.sandbox)
    if all(c.ok for c in checks):
        if repo is None and config_path is not None:
            repo = Path(config.agent.repo)
        root = repo_root(repo) if repo is not None else None
        packages = detect_layout(root).packages if root is not None else None
        checks += check_interpreter(config.sandbox, packages, root)
    for check in checks:
        mark = "ok  " if check.ok else "FAIL"
        click.echo(f"{mark} {check.name}: {check.detail}")
        if check.fix:
            click.echo(f"     {'fix' if not check.ok else 'advice'}: {check.fix}")
    if config.sandbox.backend == "none":
        click.echo("note: sandbox.backend is 'none': nothing is isolated (development only)")
    if config.scorer.extra_seeds == 0:
        click.echo(f"note: {EXTRA_SEEDS_OFF}")
    sys.exit(EXIT_ACCEPT if all(c.ok for c in checks) else EXIT_REJECT)


@click.group("config", cls=OneLineGroup)
def config_group() -> None:
    """Check the operator configuration or print its JSON Schema."""


@config_group.command("check")
@click.argument("path", type=click.Path(path_type=Path, dir_okay=False))
def config_check(path: Path) -> None:
    """Validate an operator configuration file."""
    load_config(path)
    click.echo(f"{path}: ok")


@config_group.command("schema")
def config_schema_cmd() -> None:
    """Print the JSON Schema of the operator configuration."""
    click.echo(config_schema(), nl=False)

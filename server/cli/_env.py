"""``patchwarden env build``: the venv ``sandbox.python`` points at, for a project with
dependencies (sandbox/_env.py)."""

from __future__ import annotations

from pathlib import Path

import click

from patchwarden.sandbox import (
    build_env,
    detect_layout,
    own_metadata_name,
    plugin_args,
    pytest_entry_points,
    read_declarations,
    repo_root,
)
from patchwarden.scorer import envs_dir

from ._base import OneLineGroup, config_of, config_option, printable, repo_option
from ._progress import progress


@click.group("env", cls=OneLineGroup)
def env_group() -> None:
    """The project's environment for the sandbox (its declared dependencies)."""


@env_group.command("build")
@repo_option
@click.option("--extra", "extras", multiple=True, help="An optional-dependencies extra; repeat it.")
@click.option("--group", "groups", multiple=True, help="A [dependency-groups] group; repeat it.")
@click.option(
    "--requirement",
    "-r",
    "requirement_files",
    multiple=True,
    help="A requirements file, relative to the repository or absolute (a file outside it, "
    "such as the test requirements a tox.ini lists); repeat it.",
)
@click.option(
    "--python",
    "python",
    help="The interpreter the venv is made from (default: the one running patchwarden).",
)
@config_option
def build_cmd(
    repo: Path,
    extras: tuple[str, ...],
    groups: tuple[str, ...],
    requirement_files: tuple[str, ...],
    python: str | None,
    config_path: Path | None,
) -> None:
    """Build (or reuse) a venv in the state directory, keyed by a hash of the dependency
    declarations: the project's declared dependencies, plus pytest and Hypothesis at versions
    the runner supports; never the project itself, never patchwarden's own dependencies.
    Prints the sandbox.python line for the operator configuration."""
    config = config_of(config_path)
    root = repo_root(repo)
    declarations = read_declarations(
        root, extras=extras, groups=groups, requirement_files=requirement_files
    )
    layout = detect_layout(root)
    with progress("env build", total=3) as bar:
        built = build_env(
            envs_dir(config.scorer),
            declarations,
            python=python,
            project_packages=layout.packages,
            on_step=bar.report,
        )
    click.echo(f"env: {built.path} ({'up to date' if built.reused else 'built'})")
    click.echo(f"declared in: {', '.join(declarations.sources) or 'nothing (no dependencies)'}")
    click.echo(f"installed: {printable(', '.join(built.requirements))}")
    for line in declarations.dropped:
        click.echo(f"left out: {printable(line)}")
    for distribution in built.removed:
        click.echo(f"removed: {distribution} (a dependency pulled in the project itself)")
    own = own_metadata_name(declarations)
    if own is not None:
        unknown = "" if declarations.version else " (the tree does not state its version)"
        click.echo(
            f"own metadata: {printable(own)}, no code: the code comes from the tree{unknown}"
        )
    loaded, _, left_out = plugin_args(pytest_entry_points(str(built.python)), layout.pytest)
    click.echo(f"pytest plugins the runs load: {printable(', '.join(loaded) or 'none')}")
    for line in left_out:
        click.echo(f"left out of the runs: {printable(line)}")
    click.echo("add to the operator configuration (--config):")
    click.echo(f"sandbox:\n  python: {built.python}")

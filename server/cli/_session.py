"""``patchwarden serve`` and ``patchwarden demo``: an agent session over MCP."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import anyio
import click

from .._front import Front, load_answers
from ._base import OneLineCommand, config_option
from ._oneline import OneLineUsageError


@click.command("serve", cls=OneLineCommand)
@config_option
@click.option(
    "--repo",
    type=click.Path(path_type=Path, file_okay=False),
    help="The repository the agent works on (default: the config's agent.repo).",
)
@click.option("--base", help="Base commit of the session (default: agent.base, HEAD).")
@click.option("--contract", help="Contract path inside the repository (default: agent.contract).")
@click.option(
    "--log-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Evidence bundles and the audit log (default: scorer.log_dir).",
)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for a local client; http on 127.0.0.1 with a bearer token.",
)
@click.option(
    "--hosted",
    is_flag=True,
    help="With --transport http: many workspaces, created over HTTP with the operator token "
    "(docs/clients.md, 'Hosted workspaces').",
)
@click.option(
    "--operator-token-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="--hosted: the operator token's file (default: $PATCHWARDEN_OPERATOR_TOKEN).",
)
@click.option(
    "--scorer-slots",
    type=click.IntRange(min=1),
    help="--hosted: patches scored at once (default: cores / scorer.jobs).",
)
def serve_cmd(
    config_path: Path | None,
    repo: Path | None,
    base: str | None,
    contract: str | None,
    log_dir: Path | None,
    transport: str,
    hosted: bool,
    operator_token_file: Path | None,
    scorer_slots: int | None,
) -> None:
    """Serve an agent session over MCP: a worktree at the base, tools, and a scorer."""
    if hosted:
        if transport != "http":
            raise OneLineUsageError("serve: --hosted needs --transport http")
        if repo or base or contract or log_dir:
            raise OneLineUsageError(
                "serve: --hosted takes repo, base and contract per workspace (POST /workspaces)"
            )
        from .._hosted import serve_hosted

        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(serve_hosted, config_path, operator_token_file, scorer_slots)
        return
    if operator_token_file or scorer_slots:
        raise OneLineUsageError("serve: --operator-token-file and --scorer-slots need --hosted")
    from .._prepare import ServeOptions, prepare

    options = ServeOptions(
        config_path=config_path,
        repo=repo,
        base=base,
        contract=contract,
        log_dir=log_dir,
        transport="http" if transport == "http" else "stdio",
    )
    setup = prepare(options)  # a bad set-up is one line and exit 2, before anything is served
    front = start_front() if options.transport == "stdio" else None
    from .._app import run_serve  # the MCP SDK: seconds, while the front answers discovery

    with contextlib.suppress(KeyboardInterrupt):
        run_serve(setup, options.transport, front)


def start_front() -> Front | None:
    """The stdio front (server/_front.py), unless its answers are missing or
    ``PATCHWARDEN_FRONT=0`` (how server/_discovery.py records the SDK's own answers)."""
    if os.environ.get("PATCHWARDEN_FRONT") == "0":
        return None
    answers = load_answers()
    if answers is None:
        return None
    front = Front(answers)
    front.start()
    return front


@click.command("demo", cls=OneLineCommand)
@click.option(
    "--workdir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where the example repository, state and logs go (default: a new temp dir).",
)
@click.option(
    "--example",
    type=click.Choice(["orders", "paths"]),
    default="orders",
    show_default=True,
    help="orders: a Python project tested with pytest; paths: a C++ project built with CMake "
    "and tested with ctest (docs/design/runners.md).",
)
def demo_cmd(workdir: Path | None, example: str) -> None:
    """Play a scripted agent against `serve` on a bundled example: three patches, three
    verdicts (accept, reject, propose_freeze). Exit 0 only if all three are as expected."""
    from .._demo import run_demo

    ok = anyio.run(run_demo, workdir, example)
    sys.exit(0 if ok else 1)

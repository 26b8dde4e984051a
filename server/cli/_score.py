"""``patchwarden score``: the command and its options; light, so ``--warm`` stays cheap.

Without ``--warm`` the body is :func:`._gate.run_score`, in this process, exactly as before.
With it, the request goes to a warm scorer (:mod:`patchwarden.server._warm_client`), which
runs this very command and sends back its output and exit code; this module imports nothing
heavier than click until it knows that no warm scorer can answer (docs/scale.md, "One patch
at a time: the warm scorer").
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from patchwarden import PatchwardenError

from ._oneline import OneLineCommand

WARM_IDLE_S = 600
"""A warm scorer exits after this long without a request: ten minutes keeps it across the
pauses of an evaluation loop, and no longer holds memory on a machine nobody scores on."""


class WarmableCommand(OneLineCommand):
    """``score``: ask a warm scorer first when ``--warm`` is given, else score here."""

    def invoke(self, ctx: click.Context) -> Any:
        if ctx.params.get("warm"):
            answer = _ask_warm(ctx.params)
            if answer is not None:
                sys.stdout.write(answer.stdout)
                sys.stdout.flush()
                sys.stderr.write(answer.stderr)
                sys.stderr.flush()
                sys.exit(answer.exit_code)
        return super().invoke(ctx)


def _ask_warm(params: dict[str, Any]) -> Any:
    from patchwarden.server._warm_client import ask_warm_scorer

    try:
        return ask_warm_scorer(score_argv(params), params["config_path"], params["warm_idle"])
    except PatchwardenError as exc:
        from ._base import fail

        fail(str(exc))
    except Exception as exc:
        from ._base import internal_error

        internal_error(exc)


def score_argv(params: dict[str, Any]) -> list[str]:
    """The arguments of this ``score`` for the warm scorer (``--warm`` left out)."""
    argv = []
    for option, name in (
        ("--repo", "repo"),
        ("--contract", "contract"),
        ("--parent", "parent"),
        ("--patch", "patch"),
        ("--log-dir", "log_dir"),
        ("--held-out", "held_out"),
        ("--replay", "replay"),
    ):
        if params[name] is not None:
            argv += [option, str(params[name])]
    if params["config_path"] is not None:
        argv += ["--config", str(params["config_path"])]
    if params["as_json"]:
        argv.append("--json")
    return argv


@click.command("score", cls=WarmableCommand)
@click.option(
    "--repo",
    type=click.Path(path_type=Path, file_okay=False),
    help="The repository (required, unless --replay names a bundle that records it).",
)
@click.option(
    "--contract",
    "contract",
    help="Contract path inside the repository (read from the parent commit; required, "
    "unless --replay).",
)
@click.option("--parent", help="Parent commit (any git revision; required, unless --replay).")
@click.option("--patch", help="Patch commit (any git revision; required, unless --replay).")
@click.option(
    "--replay",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="Score again the commits an evidence bundle records, with its secret (every run's "
    "hash seed and random seed) and its extra seeds; exit 0 when the rows come out the "
    "same, 1 when they differ (listed). --repo and --contract replace the recorded ones.",
)
@click.option(
    "--log-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where the evidence bundle goes (default: the config's scorer.log_dir, "
    "patchwarden-logs in the current directory, where verdicts list reads).",
)
@click.option(
    "--held-out",
    "held_out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Held-out properties: a directory outside the repository with held-out.yaml and "
    "its tests (default: the config's scorer.held_out_dir).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the decision object.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Operator configuration (YAML). Without it the safe defaults apply.",
)
@click.option(
    "--warm",
    is_flag=True,
    envvar="PATCHWARDEN_WARM",
    help="Score in the warm scorer for this configuration, starting it if none runs: later "
    "calls skip the start-up (env PATCHWARDEN_WARM=1).",
)
@click.option(
    "--warm-idle",
    "warm_idle",
    type=click.IntRange(min=1),
    default=WARM_IDLE_S,
    show_default=True,
    help="Seconds a warm scorer started by this call waits for a request before it exits.",
)
def score_cmd(
    repo: Path | None,
    contract: str | None,
    parent: str | None,
    patch: str | None,
    replay: Path | None,
    log_dir: Path | None,
    held_out: Path | None,
    as_json: bool,
    config_path: Path | None,
    warm: bool,
    warm_idle: int,
) -> None:
    """Run the contract on both commits, decide, and write the evidence bundle."""
    from ._gate import run_replay, run_score

    if replay is not None:
        if parent is not None or patch is not None or held_out is not None:
            raise click.UsageError("--replay takes the commits and held-out directory it records")
        run_replay(replay, repo, contract, log_dir, as_json, config_path)
        return
    given = {"repo": repo, "contract": contract, "parent": parent, "patch": patch}
    missing = [f"--{name}" for name, value in given.items() if value is None]
    if missing:
        raise click.UsageError(f"missing option {', '.join(missing)}")
    assert repo is not None and contract is not None and parent is not None and patch is not None
    run_score(repo, contract, parent, patch, log_dir, held_out, as_json, config_path)

"""``patchwarden decide``, the gate on saved rows, and the body of ``patchwarden score``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from patchwarden.scorer import (
    ScoreRequest,
    decide,
    load_contract,
    read_replay,
    read_rows,
    review_note,
    row_differences,
    score,
    working_copy_note,
)

from ..config import load_config
from ._base import EXIT_FAILS, EXIT_HOLDS, OneLineCommand, emit_decision, log_dir_in
from ._progress import progress


@click.command("decide", cls=OneLineCommand)
@click.argument("parent_rows", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("patch_rows", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--contract", "contract_path", required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the decision object.")
def decide_cmd(parent_rows: Path, patch_rows: Path, contract_path: Path, as_json: bool) -> None:
    """The differential gate alone, on saved JSONL rows."""
    contract = load_contract(contract_path)
    result = decide(contract, read_rows(parent_rows), read_rows(patch_rows))
    emit_decision(result.decision, result.to_json(), review_note(result), as_json)


def run_score(
    repo: Path,
    contract: str,
    parent: str,
    patch: str,
    log_dir: Path | None,
    held_out: Path | None,
    as_json: bool,
    config_path: Path | None,
) -> None:
    """The body of ``patchwarden score`` (the command is :mod:`._score`, light, so that
    ``score --warm`` need not import this module): score in this process and exit."""
    config = load_config(config_path)
    scorer_config = config.scorer.model_copy(update={"log_dir": str(log_dir_in(config, log_dir))})
    with progress("score", total=None) as bar:
        bar.note("checking out both commits")
        verdict = score(
            ScoreRequest(
                repo=repo, contract=contract, parent=parent, patch=patch, held_out=held_out
            ),
            scorer_config,
            config.sandbox,
            on_run=bar.report,
        )
    differs = working_copy_note(repo, verdict.parent_sha, contract)
    if differs:
        click.echo(f"patchwarden: note: {differs}", err=True)
    note = verdict.review_note + f"evidence: {verdict.bundle}\n"
    emit_decision(verdict.decision, verdict.to_json(), note, as_json)


def run_replay(
    bundle: Path,
    repo: Path | None,
    contract: str | None,
    log_dir: Path | None,
    as_json: bool,
    config_path: Path | None,
) -> None:
    """``score --replay BUNDLE``: the bundle's commits scored again with its secret and its
    extra seeds (a new bundle), then its rows compared with the recorded ones."""
    config = load_config(config_path)
    replay = read_replay(bundle, repo=repo, contract=contract)
    scorer_config = config.scorer.model_copy(update={"log_dir": str(log_dir_in(config, log_dir))})
    with progress("score", total=None) as bar:
        bar.note(f"replaying {bundle}")
        verdict = score(
            replay.request,
            scorer_config,
            config.sandbox,
            on_run=bar.report,
            secret=replay.secret,
            extra_seed_count=len(replay.extra_seeds),
        )
    again = {side: read_rows(verdict.bundle / f"{side}.jsonl") for side in ("parent", "patch")}
    differences = row_differences(replay.rows, again)
    if verdict.extra_seeds != replay.extra_seeds:
        differences.insert(0, f"extra seeds {replay.extra_seeds} -> {verdict.extra_seeds}")
    if as_json:
        payload = {**verdict.to_json(), "replay_of": str(bundle), "differences": differences}
        click.echo(json.dumps(payload, indent=2, sort_keys=False))
    else:
        click.echo(verdict.review_note + f"evidence: {verdict.bundle}", nl=True)
        rows = sum(len(r) for r in replay.rows.values())
        if differences:
            click.echo(f"replay of {bundle}: {len(differences)} difference(s):")
            for line in differences[:50]:
                click.echo(f"  {line}")
        else:
            click.echo(f"replay of {bundle}: the same {rows} rows")
    sys.exit(EXIT_FAILS if differences else EXIT_HOLDS)

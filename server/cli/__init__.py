"""The ``patchwarden`` command line: one click group per job, one error handler.

    _gate       decide, score (the command itself in _score, light: see _warm_client)
    _batch      score-batch (with _progress, the live line on stderr)
    _session    serve, demo
    _fixtures   fixtures pin|guard
    _sweep      sweep, quarantine release-check
    _freeze     freeze propose|check|approve|list|expire
    _verdicts   verdicts list|show|export
    _view       view
    _setup      doctor, config check|schema
    _contract   contract check|init
    _task       task from-fix
    _env        env build

Each module is imported when its command runs (:class:`._lazy.LazyGroup`), so a light
command (``score --warm``) does not load the scorer. Every command runs through
:func:`._base.run_guarded`: our errors are one line and exit 2, anything unexpected exits 70
with the traceback in a file (docs/design/errors.md).
"""

from __future__ import annotations

import click

from ._lazy import LazyGroup

COMMANDS = {
    "decide": "._gate:decide_cmd",
    "score": "._score:score_cmd",
    "score-batch": "._batch:score_batch_cmd",
    "serve": "._session:serve_cmd",
    "demo": "._session:demo_cmd",
    "fixtures": "._fixtures:fixtures_group",
    "sweep": "._sweep:sweep_cmd",
    "quarantine": "._sweep:quarantine_group",
    "freeze": "._freeze:freeze_group",
    "verdicts": "._verdicts:verdicts_group",
    "view": "._view:view_cmd",
    "doctor": "._setup:doctor_cmd",
    "config": "._setup:config_group",
    "contract": "._contract:contract_group",
    "task": "._task:task_group",
    "env": "._env:env_group",
}


@click.group(
    cls=LazyGroup,
    lazy_commands=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(package_name="patchwarden")
def cli() -> None:
    """patchwarden: trustworthy verdicts on patches written by coding agents."""


def main() -> None:
    cli(prog_name="patchwarden")


__all__ = ["COMMANDS", "cli", "main"]

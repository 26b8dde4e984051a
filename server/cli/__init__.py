"""The ``patchwarden`` command line: one click group per job, one error handler.

    _gate       decide, score
    _batch      score-batch (with _progress, the live line on stderr)
    _session    serve, demo
    _fixtures   fixtures pin|guard
    _sweep      sweep, quarantine release-check
    _freeze     freeze propose|check|approve|list|expire
    _verdicts   verdicts list|show|export
    _view       view
    _setup      doctor, config check|schema
    _contract   contract check|init
    _env        env build

Every command runs through :func:`._base.run_guarded`: our errors are one line and
exit 2, anything unexpected exits 70 with the traceback in a file (docs/design/errors.md).
"""

from __future__ import annotations

import click

from . import (
    _batch,
    _contract,
    _env,
    _fixtures,
    _freeze,
    _gate,
    _session,
    _setup,
    _sweep,
    _verdicts,
    _view,
)
from ._base import DECISION_EXIT, EXIT_INTERNAL, EXIT_USAGE, OneLineGroup


@click.group(cls=OneLineGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="patchwarden")
def cli() -> None:
    """patchwarden: trustworthy verdicts on patches written by coding agents."""


for command in (
    _gate.decide_cmd,
    _gate.score_cmd,
    _batch.score_batch_cmd,
    _session.serve_cmd,
    _session.demo_cmd,
    _fixtures.fixtures_group,
    _sweep.sweep_cmd,
    _sweep.quarantine_group,
    _freeze.freeze_group,
    _verdicts.verdicts_group,
    _view.view_cmd,
    _setup.doctor_cmd,
    _setup.config_group,
    _contract.contract_group,
    _env.env_group,
):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="patchwarden")


__all__ = ["DECISION_EXIT", "EXIT_INTERNAL", "EXIT_USAGE", "cli", "main"]

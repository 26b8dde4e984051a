"""``patchwarden view``: the log directory in a browser, read-only (docs/reviewer-guide.md)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from ._base import OneLineCommand, config_option, log_dir_of, log_dir_option


@click.command("view", cls=OneLineCommand)
@log_dir_option
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; anything but loopback needs a token.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8766,
    show_default=True,
    help="Port (0: any free port; the address is printed).",
)
@click.option(
    "--token-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="File holding the access token (default: $PATCHWARDEN_VIEW_TOKEN). Required "
    "off loopback; give it as an Authorization: Bearer header, or as ?token= once.",
)
@config_option
def view_cmd(
    log_dir: Path | None, host: str, port: int, token_file: Path | None, config_path: Path | None
) -> None:
    """Serve the verdicts, their evidence and the freeze tickets to a browser. Nothing
    writes; paths come from the index, never from the URL."""
    from .._view import read_token, serve_view

    directory = log_dir_of(config_path, log_dir)
    token = read_token(token_file)
    with contextlib.suppress(KeyboardInterrupt):
        serve_view(directory, host=host, port=port, token=token)

"""The reviewer's view (docs/reviewer-guide.md): the log directory in a browser, read-only.

    _index      verdicts.jsonl read incrementally, through the scorer's one reader
    _bundle     one verdict's bundle read tolerantly: grid, runs, files (no symlinks)
    _diff       the patch diff, per file, highlighted for its language
    _render     the Jinja2 environment, page data, live and export links
    _app        the Starlette app and its guard (methods, Host, token, headers)
    _serve      ``patchwarden view``: address and token checks, uvicorn
    _export     ``patchwarden verdicts export --html``: the same pages as files

Templates and the stylesheet are package data (templates/, static/); no build step.
"""

from __future__ import annotations

from ._app import create_app, is_loopback
from ._export import ExportResult, export_site
from ._serve import DEFAULT_PORT, TOKEN_ENV, read_token, serve_view

__all__ = [
    "DEFAULT_PORT",
    "TOKEN_ENV",
    "ExportResult",
    "create_app",
    "export_site",
    "is_loopback",
    "read_token",
    "serve_view",
]

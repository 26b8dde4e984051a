"""Starting the view: address checks, the token, one listening socket, uvicorn."""

from __future__ import annotations

import logging
import os
import socket
import sys
from pathlib import Path

from patchwarden import ConfigError

from ._app import create_app, is_loopback

DEFAULT_PORT = 8766
TOKEN_ENV = "PATCHWARDEN_VIEW_TOKEN"
LISTEN_BACKLOG = 128
MIN_TOKEN_CHARS = 16
"""A shorter token is refused: it would be guessable by anyone who can reach the port."""


def read_token(token_file: Path | None) -> str | None:
    """The token from ``--token-file`` or ``$PATCHWARDEN_VIEW_TOKEN`` (never from argv,
    which every user of the machine can read in ``ps``)."""
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the token file: {exc}", where=str(token_file)) from None
        where = str(token_file)
    else:
        token = os.environ.get(TOKEN_ENV, "").strip()
        where = f"${TOKEN_ENV}"
        if not token:
            return None
    if len(token) < MIN_TOKEN_CHARS or any(ch.isspace() or not ch.isprintable() for ch in token):
        raise ConfigError(
            f"the token must be at least {MIN_TOKEN_CHARS} printable characters without spaces",
            where=where,
        )
    return token


def bind(host: str, port: int) -> socket.socket:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(LISTEN_BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def serve_view(log_dir: Path, *, host: str, port: int, token: str | None) -> None:
    """Serve ``log_dir`` until interrupted; refuse a non-loopback address without a token."""
    import uvicorn

    if not log_dir.is_dir():
        raise ConfigError("no such log directory", where=str(log_dir))
    loopback = is_loopback(host)
    if not loopback and token is None:
        raise ConfigError(
            f"{host} is not a loopback address: give a token (--token-file F or "
            f"${TOKEN_ENV}) or bind 127.0.0.1",
            where="--host",
        )
    view_log = logging.getLogger("patchwarden.view")
    if not view_log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("patchwarden: view: %(message)s"))
        view_log.addHandler(handler)
        view_log.setLevel(logging.INFO)
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    how = "token required" if token else "loopback only, no token"
    print(
        f"patchwarden: viewing {log_dir} at http://{shown}:{bound}/ ({how}); Ctrl-C stops",
        file=sys.stderr,
        flush=True,
    )
    app = create_app(log_dir.resolve(), token=token, loopback_only=loopback)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])

"""The warm scorer: a process that keeps patchwarden loaded and answers ``score --warm``.

``python -m patchwarden.server._warm_scorer --socket S --key K --idle N --ready-fd FD``;
started by :mod:`._warm_client` (detached, its own session, output to a log beside the
socket) and never by hand. It imports the scorer, runs the sandbox check for its
configuration once, listens on ``S`` (0600, in a 0700 directory), writes ``ready`` to ``FD``
and then serves one request at a time: each is the ``score`` command itself, run with the
client's arguments, working directory and environment, its stdout and stderr captured, so
the answer is what the command would have printed and its exit code. It exits after ``N``
seconds without a request, or on SIGTERM once the request in hand is answered, and removes
its socket under the lock that first calls take, so a new one can start cleanly.

Only our uid may talk to it: the directory and the socket are private, and a peer whose
SO_PEERCRED uid is not ours is refused. See docs/scale.md and docs/threat-model.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import select
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from ._warm_client import held_lock, peer_uid, socket_address

MAX_REQUEST_BYTES = 4 * 1024 * 1024
"""A request is a few arguments and an environment; more is not a client of ours."""

REQUEST_READ_TIMEOUT_S = 30.0
"""A peer that connects and sends no whole request in this time is dropped, so it cannot
hold the one-at-a-time scorer."""


class Refused(Exception):
    """A request this scorer does not run: the one-line reason goes back to the client."""


def _log(message: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    print(f"{stamp} warm scorer {os.getpid()}: {message}", file=sys.__stderr__, flush=True)


def _read_request(conn: socket.socket) -> bytes:
    conn.settimeout(REQUEST_READ_TIMEOUT_S)
    data = b""
    while not data.endswith(b"\n"):
        try:
            chunk = conn.recv(1 << 16)
        except TimeoutError:
            raise Refused(f"no whole request in {REQUEST_READ_TIMEOUT_S:.0f} s") from None
        if not chunk:
            raise Refused("the request ended before its newline")
        data += chunk
        if len(data) > MAX_REQUEST_BYTES:
            raise Refused(f"a request longer than {MAX_REQUEST_BYTES} bytes")
    conn.settimeout(None)
    return data


def parse_request(data: bytes, key: str) -> tuple[list[str], str, dict[str, str]]:
    """(argv, cwd, env) of a request line, or Refused naming what is wrong."""
    try:
        request: Any = json.loads(data)
    except ValueError as exc:
        raise Refused(f"not JSON: {exc}") from None
    if not isinstance(request, dict) or set(request) != {"key", "argv", "cwd", "env"}:
        raise Refused("not an object with exactly key, argv, cwd and env")
    argv, cwd, env = request["argv"], request["cwd"], request["env"]
    if request["key"] != key:
        raise Refused("the request is for another configuration (key mismatch)")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise Refused("argv is not a list of strings")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise Refused("cwd is not an absolute path")
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and k and "=" not in k and "\0" not in k + v
        for k, v in env.items()
    ):
        raise Refused("env is not a mapping of variable names to strings")
    env = {k: v for k, v in env.items() if k != "PATCHWARDEN_WARM"}  # never ask ourselves
    return argv, cwd, env


@contextlib.contextmanager
def _as_client(cwd: str, env: dict[str, str]) -> Any:
    """This process with the client's working directory and environment, for one request."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    try:
        os.chdir(cwd)
    except OSError as exc:
        raise Refused(f"cannot enter the working directory {cwd}: {exc.strerror}") from None
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)


def run_score(argv: list[str], cwd: str, env: dict[str, str]) -> dict[str, Any]:
    """The ``score`` command on ``argv`` as the client would run it: output and exit code."""
    from .cli._score import score_cmd

    out, err = io.StringIO(), io.StringIO()
    with _as_client(cwd, env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            score_cmd.main(args=argv, prog_name="patchwarden score", standalone_mode=True)
            code: Any = 0
        except SystemExit as exc:
            code = exc.code
    exit_code = code if isinstance(code, int) else (0 if code is None else 1)
    return {"stdout": out.getvalue(), "stderr": err.getvalue(), "exit": exit_code}


def handle(conn: socket.socket, key: str) -> None:
    """Answer one connection; a client that went away is logged, never fatal."""
    try:
        uid = peer_uid(conn)
        if uid != os.getuid():
            raise Refused(f"uid {uid} may not use this scorer")
        argv, cwd, env = parse_request(_read_request(conn), key)
        answer = run_score(argv, cwd, env)  # not logged: thousands an hour would fill it
    except Refused as exc:
        _log(f"refused a request: {exc}")
        answer = {"error": str(exc)}
    try:
        conn.sendall(json.dumps(answer).encode("utf-8", "surrogateescape") + b"\n")
    except OSError as exc:
        _log(f"the client went away before its answer: {exc}")


def _listen(path: Path) -> socket.socket:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # the socket is created 0600, never briefly wider
    try:
        with socket_address(path) as address:
            listener.bind(address)
    finally:
        os.umask(old)
    listener.listen(64)
    return listener


def _warm_up(config_path: str | None) -> None:
    """Import the scorer and run the sandbox check once, so no request pays for them."""
    from patchwarden import PatchwardenError
    from patchwarden.sandbox import require_sandbox

    from .cli import _gate  # noqa: F401  (the scorer, gitpython, pydantic)
    from .config import load_config

    try:
        require_sandbox(load_config(Path(config_path) if config_path else None).sandbox)
    except PatchwardenError as exc:  # each request will say it, exactly as the command does
        _log(f"the sandbox check failed: {exc}")


def serve(listener: socket.socket, path: Path, key: str, idle_s: float) -> None:
    """Answer requests until ``idle_s`` pass without one, or SIGTERM arrives."""
    stop = []
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    deadline = time.monotonic() + idle_s
    while not stop:
        timeout = max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([listener.fileno(), wake_r], [], [], timeout)
        if wake_r in ready:
            os.read(wake_r, 64)
        if listener.fileno() in ready:
            conn, _ = listener.accept()
            with conn:
                handle(conn, key)
            deadline = time.monotonic() + idle_s
        elif not ready:
            _log(f"idle for {idle_s:.0f} s")
            break
    _close(listener, path, key)


def _close(listener: socket.socket, path: Path, key: str) -> None:
    """Remove our socket under the first calls' lock, then answer whoever connected before."""
    with held_lock(path.with_suffix(".lock")):
        # Ours: while we listen every connect succeeds, so no client replaced it as stale.
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        listener.setblocking(False)
        while True:
            try:
                conn, _ = listener.accept()
            except BlockingIOError:
                break
            conn.setblocking(True)
            with conn:
                handle(conn, key)
        listener.close()
    _log("stopped")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="patchwarden-warm-scorer")
    parser.add_argument("--socket", required=True, type=Path)
    parser.add_argument("--key", required=True)
    parser.add_argument("--idle", required=True, type=float)
    parser.add_argument("--ready-fd", required=True, type=int)
    parser.add_argument("--config")
    args = parser.parse_args(argv)
    _warm_up(args.config)
    os.chdir("/")  # hold no client's directory; each request enters its own
    listener = _listen(args.socket)
    _log(f"listening on {args.socket}")
    os.write(args.ready_fd, b"ready\n")
    os.close(args.ready_fd)
    serve(listener, args.socket, args.key, args.idle)


if __name__ == "__main__":
    main()

"""The client side of the warm scorer: find it, start it if none runs, send one request.

Light on purpose: the standard library, and PyYAML only to read ``scorer.state_dir`` from
an operator config. No pydantic, gitpython, scorer or sandbox module is imported here; the
warm scorer has them loaded already (docs/scale.md, "One patch at a time: the warm scorer").

Where it lives: ``<scorer.state_dir>/warm/`` (mode 0700), one socket (0600), lock file and
log per key. The key hashes what makes two processes score alike: the configuration file's
path and bytes, the environment the defaults come from, the interpreter and the patchwarden
version. A call with another key never reaches that scorer.

The protocol is one JSON line each way. Request: ``key``, ``argv`` (the ``score``
arguments without ``--warm``), ``cwd``, ``env``. Answer: ``stdout``, ``stderr``, ``exit``
(what ``score`` printed and its exit code), or ``error`` (a one-line refusal).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import select
import socket
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchwarden import PatchwardenError

KEY_ENV = ("HOME", "XDG_STATE_HOME", "TMPDIR", "PATH")
"""Environment variables that the configuration's defaults, or the sandbox check the warm
scorer caches, depend on: part of the key. The rest of the environment travels with each
request and is the scorer's environment while it scores that request."""

START_TIMEOUT_S = 120.0
"""How long a first call waits for the warm scorer it started to listen: its imports and
the sandbox check take about a second; a machine under heavy load may take far longer."""

MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""An answer is the decision object or the review note; this bounds a misbehaving peer."""

SUN_PATH_MAX = 107
"""Longest path a Unix socket address holds (sockaddr_un.sun_path, less the NUL)."""

PEER_CRED = struct.Struct("3i")
"""struct ucred: pid, uid, gid (SO_PEERCRED)."""


@dataclass(frozen=True)
class WarmPlace:
    """Where the warm scorer of one key lives."""

    key: str
    directory: Path

    @property
    def socket(self) -> Path:
        return self.directory / f"{self.key}.sock"

    @property
    def lock(self) -> Path:
        return self.directory / f"{self.key}.lock"

    @property
    def log(self) -> Path:
        return self.directory / f"{self.key}.log"


@dataclass(frozen=True)
class Answer:
    stdout: str
    stderr: str
    exit_code: int


def default_state_dir() -> Path:
    """scorer.state_dir's default (patchwarden.scorer's ``default_state_dir``, repeated here
    so that finding the socket costs no scorer import; a test holds the two equal)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "patchwarden" / "scorer"


def _configured_state_dir(text: str) -> Path | None:
    import yaml

    data: Any = yaml.safe_load(text)
    if data is None:
        return None
    scorer = data.get("scorer") if isinstance(data, dict) else None
    state = scorer.get("state_dir") if isinstance(scorer, dict) else None
    if state is None:
        return None
    if not isinstance(state, str):
        raise ValueError("scorer.state_dir is not a string")
    return Path(state)


def _version() -> str:
    """The installed distribution's name-version, and when it was installed: importlib.metadata
    alone costs 40 ms, more than everything else the client does."""
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.startswith("patchwarden-") and name.endswith(".dist-info"):
                return f"{name}:{os.stat(os.path.join(entry, name)).st_mtime_ns}"
    return "unknown"


def locate(config_path: Path | None) -> WarmPlace | None:
    """The warm scorer's place for this configuration; None when the configuration cannot
    be read here (the in-process ``score`` then reports it exactly as without ``--warm``)."""
    text = ""
    if config_path is not None:
        try:
            text = config_path.read_text(encoding="utf-8")
            state = _configured_state_dir(text)
        except Exception:  # any unreadable config: the cold path names the problem
            return None
    else:
        state = None
    state = Path(os.path.abspath(state if state is not None else default_state_dir()))
    digest = hashlib.sha256()
    for part in (
        _version(),
        os.path.realpath(sys.executable),
        sys.version,
        str(config_path.resolve()) if config_path is not None else "",
        text,
        str(state),
        *(f"{name}={os.environ.get(name, '')}" for name in KEY_ENV),
    ):
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    return WarmPlace(key=digest.hexdigest()[:24], directory=state / "warm")


def private_directory(directory: Path) -> None:
    """Create ``directory`` (0700) or check it is ours and private."""
    directory.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        directory.mkdir(mode=0o700)
    info = directory.lstat()
    if not os.path.isdir(directory) or directory.is_symlink():
        raise PatchwardenError("not a directory", where=str(directory))
    if info.st_uid != os.getuid():
        raise PatchwardenError(
            f"owned by uid {info.st_uid}, not by us ({os.getuid()}): refusing its warm scorer",
            where=str(directory),
        )
    if info.st_mode & 0o077:
        os.chmod(directory, 0o700)


@contextlib.contextmanager
def socket_address(path: Path) -> Iterator[str]:
    """An address for ``path`` that fits sun_path: the path itself, or for a long one, the
    name under an open descriptor of its directory (/proc/self/fd/N/NAME)."""
    if len(os.fsencode(path)) <= SUN_PATH_MAX:
        yield str(path)
        return
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def peer_uid(conn: socket.socket) -> int:
    _pid, uid, _gid = PEER_CRED.unpack(
        conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, PEER_CRED.size)
    )
    return int(uid)


@contextlib.contextmanager
def held_lock(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _connect(place: WarmPlace) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with socket_address(place.socket) as address:
            conn.connect(address)
    except (FileNotFoundError, ConnectionRefusedError):
        conn.close()
        return None
    except BaseException:
        conn.close()
        raise
    uid = peer_uid(conn)
    if uid != os.getuid():
        conn.close()
        raise PatchwardenError(
            f"the warm scorer runs as uid {uid}, not as us ({os.getuid()}): refusing it",
            where=str(place.socket),
        )
    return conn


_started: list[Any] = []
"""The warm scorers this process started: kept so that no Popen is collected while its
process runs (it outlives us on purpose, in a session of its own)."""


def _start(place: WarmPlace, config_path: Path | None, idle_s: int) -> bool:
    """Start the warm scorer of ``place`` (the lock held, the stale socket gone) and wait
    until it listens; False if it exited or did not listen in time (its log says why)."""
    import subprocess

    with contextlib.suppress(FileNotFoundError):
        place.socket.unlink()  # a stale socket: nobody answered on it, under the lock
    ready_r, ready_w = os.pipe()
    argv = [sys.executable, "-m", "patchwarden.server._warm_scorer", "--socket", str(place.socket)]
    argv += ["--key", place.key, "--idle", str(idle_s), "--ready-fd", str(ready_w)]
    if config_path is not None:
        argv += ["--config", os.path.abspath(config_path)]
    log_fd = os.open(place.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        _started.append(
            subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log_fd,
                stderr=log_fd,
                pass_fds=(ready_w,),
                start_new_session=True,
                env={k: v for k, v in os.environ.items() if k != "PATCHWARDEN_WARM"},
            )
        )
    finally:
        os.close(log_fd)
        os.close(ready_w)
    try:
        readable, _, _ = select.select([ready_r], [], [], START_TIMEOUT_S)
        return bool(readable) and os.read(ready_r, 16).startswith(b"ready")
    finally:
        os.close(ready_r)


def _read_line(conn: socket.socket) -> bytes | None:
    """One line from ``conn``; None if it ends first."""
    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            chunk = conn.recv(1 << 16)
        except ConnectionResetError:
            return None
        if not chunk:
            return None
        chunks.append(chunk)
        size += len(chunk)
        if chunk.endswith(b"\n"):
            return b"".join(chunks)
        if size > MAX_ANSWER_BYTES:
            return None


def _say(message: str) -> None:
    sys.stderr.write(f"patchwarden: {message}\n")
    sys.stderr.flush()


def ask_warm_scorer(argv: list[str], config_path: Path | None, idle_s: int) -> Answer | None:
    """What the warm scorer of this configuration answers for ``score ARGV``, starting it if
    none runs; None: score in this process (a line on stderr has said why, unless the
    configuration cannot be read here, which the in-process command reports itself)."""
    place = locate(config_path)
    if place is None:
        return None
    private_directory(place.directory)
    conn = _connect(place)
    if conn is None:
        with held_lock(place.lock):
            conn = _connect(place)  # another first call may have started it meanwhile
            if conn is None and _start(place, config_path, idle_s):
                conn = _connect(place)
        if conn is None:
            _say(f"the warm scorer did not start (its log: {place.log}); scoring in this process")
            return None
    request = {"key": place.key, "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}
    with conn:
        try:
            conn.sendall(json.dumps(request).encode("utf-8", "surrogateescape") + b"\n")
            line = _read_line(conn)
        except (BrokenPipeError, ConnectionResetError):
            line = None
    answer = _answer(line)
    if answer is None:
        _say(f"the warm scorer at {place.socket} gave no answer; scoring in this process")
        return None
    if isinstance(answer, str):
        raise PatchwardenError(
            f"the warm scorer refused the request: {answer}", where=str(place.socket)
        )
    return answer


def _answer(line: bytes | None) -> Answer | str | None:
    if line is None:
        return None
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        return str(data["error"])
    if (
        isinstance(data, dict)
        and isinstance(data.get("stdout"), str)
        and isinstance(data.get("stderr"), str)
        and type(data.get("exit")) is int
    ):
        return Answer(data["stdout"], data["stderr"], data["exit"])
    return None


__all__ = ["Answer", "WarmPlace", "ask_warm_scorer", "default_state_dir", "locate"]

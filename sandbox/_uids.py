"""One process budget per run: each concurrent run takes a uid of its own (docs/reliability.md).

RLIMIT_NPROC counts every process of a real uid on the host. When all runs share one uid, a
fork bomb in one run uses up the budget of every other run going on at the same time. With
``sandbox.uid_range`` (root only) each launch leases a free uid of the range for its whole
life: an exclusive ``flock`` on ``<leases>/<uid>.lock``, which every patchwarden process on
the machine (serve, score, score-batch) takes the same way, and which the kernel releases if
the holder dies. A run is over only when its whole PID namespace is gone
(sandbox/_supervise.py), so a uid is never handed on while processes of the run remain.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from ._config import SandboxConfig
from ._errors import SandboxError

_next_wait = itertools.count()
_wait_lock = threading.Lock()


def lease_dir() -> Path:
    """The one directory of uid leases on this machine (root's; mode 0700)."""
    base = Path("/run/lock") if os.path.isdir("/run/lock") else Path(tempfile.gettempdir())
    return base / "patchwarden-uids"


def _open_lease_dir() -> Path:
    path = lease_dir()
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError as exc:
        raise SandboxError(
            f"cannot create the uid lease directory: {exc.strerror}", where=str(path)
        ) from None
    if not os.path.isdir(path) or os.path.islink(path) or info.st_uid != os.geteuid():
        raise SandboxError(
            "the uid lease directory is not a directory of ours; remove it", where=str(path)
        )
    return path


@contextlib.contextmanager
def lease_uid(config: SandboxConfig) -> Iterator[int]:
    """A uid of ``config.run_uids()`` that no other run holds, until the block ends.

    Without a range there is one uid and no lease (the shared budget). With one, a free uid
    is taken at once if there is one; otherwise the caller waits for a busy one (the range
    is smaller than the number of runs going on: that is the operator's choice, and the wait
    is a queue, not a retry).
    """
    uids = config.run_uids()
    if config.uid_range is None:
        yield uids[0]
        return
    directory = _open_lease_dir()
    for uid in uids:
        fd = _try_lock(directory / f"{uid}.lock", blocking=False)
        if fd is not None:
            break
    else:
        with _wait_lock:
            uid = uids[next(_next_wait) % len(uids)]
        fd = _try_lock(directory / f"{uid}.lock", blocking=True)
        assert fd is not None
    try:
        yield uid
    finally:
        os.close(fd)


def _try_lock(path: Path, *, blocking: bool) -> int | None:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise SandboxError(f"cannot open a uid lease: {exc.strerror}", where=str(path)) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    return fd

"""Appending one whole line to a file that several processes append to: the verdict index
(scorer/_index.py) and the server's audit log.

O_APPEND puts every write at the end; an exclusive lock (readers take a shared one) and a
single write() of the whole line keep lines from interleaving or being read half-written.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sys
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def naming(path: Path) -> Iterator[None]:
    """An OSError without a file name (a write to a full disk) gets ``path``'s."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None


def append_line(path: Path, line: bytes, *, fsync: bool = True, mode: int = 0o640) -> None:
    """Append ``line`` (ending in a newline) whole, under an exclusive lock on the file.

    A short or failed write is cut back off before the error is raised, so we never leave a
    torn line. One left by a writer that died mid-write (power loss) is cut off before our
    line goes in, with a warning naming file:line; otherwise our line would be glued to it.
    """
    with naming(path):
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, mode)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = _cut_torn_tail(fd, path)
            try:
                written = os.write(fd, line)
                if written != len(line):
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                if fsync:
                    os.fsync(fd)
            except OSError:
                with contextlib.suppress(OSError):  # best effort; the write's error is raised
                    os.ftruncate(fd, size)
                raise
        finally:
            os.close(fd)


TAIL_CHUNK_BYTES = 65536


def _cut_torn_tail(fd: int, path: Path) -> int:
    """Remove an unterminated last line; return the file's size after."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    end = size
    while end > 0:
        start = max(0, end - TAIL_CHUNK_BYTES)
        newline = os.pread(fd, end - start, start).rfind(b"\n")
        if newline >= 0:
            end = start + newline + 1
            break
        end = start
    line = _line_count(fd, end) + 1
    os.ftruncate(fd, end)
    print(
        f"patchwarden: warning: {path}:{line}: removed a torn last line "
        f"({size - end} bytes without a newline, left by an interrupted write)",
        file=sys.stderr,
        flush=True,
    )
    return end


def _line_count(fd: int, end: int) -> int:
    count, offset = 0, 0
    while offset < end:
        chunk = os.pread(fd, min(TAIL_CHUNK_BYTES, end - offset), offset)
        count += chunk.count(b"\n")
        offset += len(chunk)
    return count

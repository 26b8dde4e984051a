"""Evidence bundles: one directory per verdict, written atomically (docs/reviewer-guide.md).

Files are written into a hidden staging directory beside the final one and
renamed into place in one step, so a reader never sees half a bundle. The
``verdicts.jsonl`` index is append-only, one line per verdict, under a lock.
A verdict is published only when both hold: if its index line cannot be
written, the bundle is taken back out of place and the error raised, so no
verdict is delivered that the log does not hold (docs/reliability.md).
Every write error names the file it was about.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import secrets
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

VERDICTS_DIR = "verdicts"
INDEX = "verdicts.jsonl"
ID_ATTEMPTS = 16
"""Fresh verdict ids drawn before giving up: a clash needs the same second, patch and 16
random bits, so a second draw practically always succeeds."""


def new_verdict_id(patch_sha: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{patch_sha[:10]}-{secrets.token_hex(2)}"


class BundleWriter:
    """Stage files for one verdict, then publish them in one rename."""

    def __init__(self, log_dir: Path, verdict_id: str) -> None:
        self.log_dir = log_dir
        self.verdict_id = verdict_id
        self.final = log_dir / VERDICTS_DIR / verdict_id
        self.staging = log_dir / VERDICTS_DIR / f".staging-{verdict_id}"
        self.staging.mkdir(parents=True, exist_ok=False)
        if self.final.exists():
            # Taken by a bundle published since: staging names are exclusive while they
            # exist, so this check after our mkdir cannot race with another writer.
            self.staging.rmdir()
            raise FileExistsError(errno.EEXIST, "verdict id taken", str(self.final))

    @classmethod
    def create(cls, log_dir: Path, patch_sha: str) -> BundleWriter:
        """A writer under a verdict id no other writer has or had, also across processes
        sharing the log directory (ids differ in time and randomness; a clash draws again)."""
        for _ in range(ID_ATTEMPTS):
            try:
                return cls(log_dir, new_verdict_id(patch_sha))
            except FileExistsError:
                continue
        raise FileExistsError(errno.EEXIST, "no free verdict id", str(log_dir / VERDICTS_DIR))

    def write_text(self, name: str, text: str, *, sync: bool = False) -> Path:
        """Stage one file; ``sync``: on disk now (a failure is the caller's to judge), else
        when the bundle is published."""
        path = self.staging / name
        with _naming(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                if sync:
                    os.fsync(handle.fileno())
        return path

    def write_json(self, name: str, value: Any) -> Path:
        return self.write_text(name, json.dumps(value, indent=2, sort_keys=False) + "\n")

    def publish(self, index_entry: dict[str, Any]) -> Path:
        """Every staged file on disk, then the bundle in place in one rename, then its index
        line: a reader sees all of it or none, also after a crash."""
        _sync_tree(self.staging)
        os.rename(self.staging, self.final)
        _sync_dir(self.final.parent)
        try:
            append_index(self.log_dir, {**index_entry, "bundle": str(self.final)})
        except BaseException:
            os.rename(self.final, self.staging)  # not in the index: not published
            raise
        return self.final

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)


SYNC_THREADS = 8
"""fsyncs issued at once when a bundle is published: the file system commits them together,
so two dozen files cost about one journal commit instead of two dozen in a row."""


def _sync_tree(root: Path) -> None:
    files = [Path(d) / name for d, _, names in os.walk(root) for name in names]
    dirs = [Path(d) for d, _, _ in os.walk(root)]
    with ThreadPoolExecutor(max_workers=SYNC_THREADS) as pool:
        list(pool.map(_sync_file, files))
    for directory in dirs:
        _sync_dir(directory)


def _sync_file(path: Path) -> None:
    with _naming(path):  # a full disk can refuse the data only now
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def append_index(log_dir: Path, entry: dict[str, Any]) -> None:
    """One whole line at the end of the index, whoever else is appending.

    O_APPEND puts every write at the end; the exclusive lock (readers take a shared one,
    scorer/_verdicts.py) and a single write() of the whole line keep lines from interleaving
    or being read half-written (``append_line``).
    """
    line = (json.dumps(entry, sort_keys=True) + "\n").encode("utf-8")
    append_line(log_dir / INDEX, line, mode=0o644)


@contextlib.contextmanager
def _naming(path: Path) -> Any:
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
    with _naming(path):
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

"""Evidence bundles: one directory per verdict, written atomically (docs/reviewer-guide.md).

Files are written into a hidden staging directory beside the final one and
renamed into place in one step, so a reader never sees half a bundle. The
``verdicts.jsonl`` index (scorer/_index.py) is append-only, one line per verdict.
A verdict is published only when both hold: if its index line cannot be
written, the bundle is taken back out of place and the error raised, so no
verdict is delivered that the log does not hold (docs/reliability.md).
Every write error names the file it was about.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ._append import naming
from ._index import IndexLine, append_index

VERDICTS_DIR = "verdicts"
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
        with naming(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                if sync:
                    os.fsync(handle.fileno())
        return path

    def write_json(self, name: str, value: Any) -> Path:
        return self.write_text(name, json.dumps(value, indent=2, sort_keys=False) + "\n")

    def publish(self, line: IndexLine) -> Path:
        """Every staged file on disk, then the bundle in place in one rename, then its index
        line (``line.bundle`` is this bundle): a reader sees all of it or none, also after a
        crash."""
        if line.verdict_id != self.verdict_id or line.bundle != str(self.final):
            raise ValueError(f"index line {line.verdict_id} is not for bundle {self.final}")
        _sync_tree(self.staging)
        os.rename(self.staging, self.final)
        _sync_dir(self.final.parent)
        try:
            append_index(self.log_dir, line)
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
    with naming(path):  # a full disk can refuse the data only now
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

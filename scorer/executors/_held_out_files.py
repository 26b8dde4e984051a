"""Held-out files for workers elsewhere: the operator's directory packed on the driver, written
once per worker node, read-only, and checked by digest before every use
(docs/design/held-out.md, "On a Ray cluster").

The driver reads the directory once per unit into :class:`HeldOutFiles` (its digest taken of
the very bytes packed); the Ray executor puts one copy per digest in the object store. A
worker writes it to ``<state>/ray-held-out/<digest>`` (staged beside it and renamed into place
whole, so two workers of one node never see half of it), files mode 0444 (0555 when
executable) and directories 0555, and takes the digest of what is there before each run: a
directory that does not match, whoever changed it, fails the unit instead of running other
tests.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .._errors import HeldOutError
from ..checks import tree_entries
from ._trees import DIGEST_PREFIX, Entry, entries_digest, tree_digest, tree_entry

MAX_HELD_OUT_BYTES = 64 * 1024 * 1024
"""A held-out directory is tests and small data; one larger is refused rather than copied to
every node of a cluster."""
HELD_OUT_ROOT = "ray-held-out"
"""Under a worker's state directory: one directory per held-out digest."""
READ_ONLY_FILE, READ_ONLY_EXEC, READ_ONLY_DIR = 0o444, 0o555, 0o555
"""Readable by the sandbox's uid (the directory is mounted as it is), writable by nobody."""


@dataclass(frozen=True)
class HeldOutFiles:
    """Every file of a held-out directory, and the digest of exactly these bytes."""

    digest: str
    entries: tuple[Entry, ...]


def pack_held_out(directory: Path) -> HeldOutFiles:
    """The files of ``directory`` (HeldOutError for a symbolic link, which would point at
    something else on another machine, or a directory too large to ship)."""
    entries = []
    size = 0
    for rel in sorted(tree_entries(directory)):
        entry = tree_entry(directory, rel)
        if entry[1] == b"link":
            raise HeldOutError(
                f"held-out file {rel} is a symbolic link; a remote executor ships files only",
                where=str(directory),
            )
        size += len(entry[2])
        if size > MAX_HELD_OUT_BYTES:
            raise HeldOutError(
                f"the held-out directory holds more than {MAX_HELD_OUT_BYTES} bytes; "
                "a remote executor ships it to every node",
                where=str(directory),
            )
        entries.append(entry)
    return HeldOutFiles(digest=entries_digest(entries), entries=tuple(entries))


def held_out_on_worker(state_dir: Path, files: HeldOutFiles) -> Path:
    """The held-out directory of ``files`` on this node: written on first use, then checked
    against the digest before every use (HeldOutError when it does not match)."""
    name = files.digest.removeprefix(DIGEST_PREFIX)
    root = state_dir / HELD_OUT_ROOT
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    target = root / name
    if not target.exists():
        _write_once(root, target, files)
    if tree_digest(target) != files.digest:
        raise HeldOutError(
            "this node's copy of the held-out directory does not match its digest; not run",
            where=str(target),
        )
    return target


def _write_once(root: Path, target: Path, files: HeldOutFiles) -> None:
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=root))
    try:
        for rel, kind, data in files.entries:
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            path.chmod(READ_ONLY_EXEC if kind == b"exec" else READ_ONLY_FILE)
        for folder, _, _ in os.walk(staging, topdown=False):
            Path(folder).chmod(READ_ONLY_DIR)
        try:
            os.rename(staging, target)
        except OSError:
            if not target.is_dir():
                raise
            # Another worker of this node got there first: its copy is whole (and checked).
    finally:
        if staging.exists():
            _remove_read_only(staging)


def _remove_read_only(path: Path) -> None:
    for folder, _, _ in os.walk(path):
        Path(folder).chmod(stat.S_IRWXU)
    shutil.rmtree(path)

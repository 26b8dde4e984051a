"""Trees for workers elsewhere: a digest of what the plan will run, and the same tree rebuilt
from git objects on another machine.

A plan's tree is a checkout plus the restore (and bytecode removal); a worker rebuilds it the
same way from the same commits (`TreeSource`), then checks the digest, so a difference in git
versions, attributes or filters there fails the unit instead of running other bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

import git

from patchwarden.sandbox import empty_clone

from .._checkout import clean_checkout, state_dir
from .._config import ScorerConfig
from ..checks import remove_bytecode, restore_from_parent, tree_entries
from ._base import TreeSource

DIGEST_PREFIX = "tree-sha256:"


Entry = tuple[str, bytes, bytes]
"""(tree-relative path, kind: ``link``, ``exec`` or ``file``, the link's target or the bytes)."""


def tree_entry(tree: Path, rel: str) -> Entry:
    """What :func:`tree_digest` reads of one file or link (links are never followed)."""
    path = tree / rel
    mode = path.lstat().st_mode
    if stat.S_ISLNK(mode):
        return rel, b"link", os.readlink(path).encode()
    return rel, b"exec" if mode & stat.S_IXUSR else b"file", path.read_bytes()


def entries_digest(entries: Iterable[Entry]) -> str:
    """The digest of ``entries`` as :func:`tree_digest` takes it of a tree that holds them."""
    digest = hashlib.sha256()
    for entry in sorted(entries):
        digest.update(_framed(entry))
    return DIGEST_PREFIX + digest.hexdigest()


def tree_digest(tree: Path) -> str:
    """sha256 over every file and link of ``tree`` (``.git`` left out): path, kind, the
    executable bit, and the bytes or the link's target."""
    digest = hashlib.sha256()
    # A worktree's .git is a file naming its clone: never mounted, and different everywhere.
    for rel in sorted(tree_entries(tree) - {".git"}):
        digest.update(_framed(tree_entry(tree, rel)))  # one file in memory at a time
    return DIGEST_PREFIX + digest.hexdigest()


def _framed(entry: Entry) -> bytes:
    rel, kind, data = entry
    payload = data if kind == b"link" else hashlib.sha256(data).digest()
    return b"".join(len(part).to_bytes(8, "big") + part for part in (rel.encode(), kind, payload))


def worker_clone(config: ScorerConfig, source: TreeSource) -> git.Repo:
    """The worker's own bare clone for ``source``'s repository (created empty, filled from
    bundles or the operator's fetch URL)."""
    return empty_clone(state_dir(config) / "worker-clones" / source.repo_key)


@contextlib.contextmanager
def rebuilt_tree(clone: git.Repo, source: TreeSource, config: ScorerConfig) -> Iterator[Path]:
    """``source``'s tree, rebuilt in the worker's state directory and removed on exit."""
    with clean_checkout(clone, source.sha, config) as tree:
        if source.restore_from is not None:
            with clean_checkout(clone, source.restore_from, config) as parent:
                restore_from_parent(parent, tree, source.contract_paths, source.protected_paths)
        remove_bytecode(tree)
        yield tree

"""Where trees for sandboxed runs live: directories whose host path names nothing secret.

A run sees its tree at /workspace, but the kernel shows every bind mount's source path (its
path within the filesystem that holds it) in /proc/self/mountinfo, and nothing a sandbox can
do hides it. So trees are checked out under a neutral directory, outside the state
directories, under a random name that carries no session id (docs/threat-model.md, "What a
run can learn about the host").
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from ._errors import SandboxError


def default_trees_dir() -> Path:
    """``<tmp>/patchwarden-trees-<uid>``: private to this uid, shared by its processes."""
    return Path(tempfile.gettempdir()) / f"patchwarden-trees-{os.geteuid()}"


def trees_dir(configured: str | Path | None = None) -> Path:
    """The trees directory, created if needed with mode 0700 and checked to be ours.

    In a shared temporary directory another user could have made the name first (a link, or
    a directory of theirs): that is refused, not followed.
    """
    path = Path(configured) if configured is not None else default_trees_dir()
    try:
        path.mkdir(mode=0o700, parents=configured is not None, exist_ok=True)
        info = os.lstat(path)
    except OSError as exc:
        raise SandboxError(
            f"cannot create the trees directory: {exc.strerror}", where=str(path)
        ) from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise SandboxError(
            "the trees directory is not a directory of ours; remove it or set another",
            where=str(path),
        )
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, 0o700)
    return path


def new_tree_parent(configured: str | Path | None = None) -> Path:
    """A fresh, empty directory with a random name in the trees directory (caller removes)."""
    root = trees_dir(configured)
    try:
        return Path(tempfile.mkdtemp(prefix="", dir=root))
    except OSError as exc:
        raise SandboxError(
            f"cannot create a tree directory: {exc.strerror}", where=str(root)
        ) from None

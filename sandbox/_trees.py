"""Where trees for sandboxed runs live: directories whose host path names nothing secret.

A run sees its tree at /workspace, but the kernel shows every bind mount's source path (its
path within the filesystem that holds it) in /proc/self/mountinfo, and nothing a sandbox can
do hides it. So trees are checked out under a neutral directory, outside the state
directories, under a random name that carries no session id (docs/threat-model.md, "What a
run can learn about the host").
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ._config import SandboxConfig
from ._errors import SandboxError
from ._launch import prepare_writable_tree


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


@contextlib.contextmanager
def run_copy(tree: Path, config: SandboxConfig) -> Iterator[Path]:
    """A writable copy of ``tree`` for one sandboxed run, the sandbox uid's when patchwarden
    runs as root, removed when the run is over: what the run writes reaches neither the
    tree nor another run. Raises ``SandboxError`` for a tree that cannot be copied."""
    home, copy = writable_copy(tree)
    try:
        prepare_writable_tree(copy, config)
        yield copy
    finally:
        remove_copy(home)


def writable_copy(tree: Path) -> tuple[Path, Path]:
    """A copy of ``tree`` for one run: (its own directory, the copy in it).

    Links are copied as links (they resolve inside the sandbox, as the tree's own do). A
    ``.git`` directory is copied as an empty one: the sandbox covers it in the copy as it
    does in a tree, and its objects are none of the product's business.

    Its host path shows inside the sandbox (/proc/self/mountinfo): a random name next to
    the tree, holding ``worktree`` as the agent's tree parent does, and nothing that says
    a scorer made it."""
    try:
        home = Path(tempfile.mkdtemp(prefix="", dir=tree.parent))
    except OSError:
        home = Path(tempfile.mkdtemp(prefix=""))
    copy = home / "worktree"
    git = tree / ".git"
    skip_git = git.is_dir() and not git.is_symlink()

    def ignore(directory: str, names: list[str]) -> list[str]:
        return [".git"] if skip_git and Path(directory) == tree else []

    try:
        shutil.copytree(tree, copy, symlinks=True, ignore=ignore)
        if skip_git:
            (copy / ".git").mkdir()
    except (OSError, shutil.Error) as exc:
        remove_copy(home)
        raise SandboxError(f"cannot copy the tree for the run: {exc}", where=str(tree)) from None
    return home, copy


def remove_copy(home: Path) -> None:
    """Remove a run's copy, whatever modes product code left on its directories
    (each is made searchable before the walk goes into it)."""
    for root, dirs, _files in os.walk(home):
        for name in dirs:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                with contextlib.suppress(OSError):
                    os.chmod(path, stat.S_IRWXU)
    shutil.rmtree(home, ignore_errors=True)

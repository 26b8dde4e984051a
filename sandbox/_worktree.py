"""Git worktrees the scorer owns, made with gitpython from a scratch clone.

The user's working tree is never touched: the scorer keeps a bare clone of
the repository in its own state directory, fetches into it, and checks out
each commit as a detached worktree that is removed afterwards, also when
the run fails.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import git

from ._errors import InputError

NO_HOOKS = "/dev/null"  # core.hooksPath: no hook of any repository ever runs here


def _harden(repo: git.Repo) -> None:
    with repo.config_writer() as cfg:
        cfg.set_value("core", "hooksPath", NO_HOOKS)
        cfg.set_value("gc", "auto", "0")


def resolve_commit(repo_path: Path, ref: str) -> str:
    """The full sha of ``ref`` in the repository at ``repo_path``."""
    try:
        repo = git.Repo(repo_path)
    except (git.NoSuchPathError, git.InvalidGitRepositoryError):
        raise InputError("not a git repository", where=str(repo_path)) from None
    try:
        return repo.commit(ref).hexsha
    except (git.BadName, ValueError, git.GitCommandError):
        raise InputError(f"unknown revision {ref!r}", where=str(repo_path)) from None


def parent_of(repo_path: Path, sha: str) -> str | None:
    parents = git.Repo(repo_path).commit(sha).parents
    return parents[0].hexsha if parents else None


def scratch_clone(source: Path, dest: Path) -> git.Repo:
    """A bare clone of ``source`` at ``dest``, created once and fetched after."""
    if (dest / "HEAD").exists():
        repo = git.Repo(dest)
        repo.git.fetch("--quiet", "--force", str(source), "+refs/*:refs/remotes/source/*")
        return repo
    dest.parent.mkdir(parents=True, exist_ok=True)
    # A bare clone checks nothing out, so no hook can run before _harden.
    repo = git.Repo.clone_from(str(source), str(dest), bare=True, no_hardlinks=True)
    _harden(repo)
    return repo


def fetch_commits(repo: git.Repo, source: Path, shas: list[str]) -> None:
    missing = [sha for sha in shas if not _has_commit(repo, sha)]
    if missing:
        repo.git.fetch("--quiet", "--force", str(source), "+refs/*:refs/remotes/source/*")


def _has_commit(repo: git.Repo, sha: str) -> bool:
    try:
        repo.git.cat_file("-e", f"{sha}^{{commit}}")
    except git.GitCommandError:
        return False
    return True


@contextlib.contextmanager
def open_worktree(repo: git.Repo, sha: str, dest: Path) -> Iterator[Path]:
    """A detached worktree of ``sha`` at ``dest``, removed on exit."""
    if dest.exists():
        shutil.rmtree(dest)
    repo.git.worktree("add", "--detach", "--force", "--quiet", str(dest), sha)
    try:
        yield dest
    finally:
        with contextlib.suppress(git.GitCommandError):
            repo.git.worktree("remove", "--force", str(dest))
        if dest.exists():
            shutil.rmtree(dest, ignore_errors=True)
        repo.git.worktree("prune")

"""Every git operation patchwarden performs, with hooks off, and git's failures as GitError.

Two kinds of repository are touched:

- the scorer's own bare clone of the user's repository, in its 0700 state directory,
  fetched into and checked out as detached worktrees that are removed afterwards
  (the user's working tree is never touched);
- the user's repository, read (commits, blobs, diffs) and, for an agent session, given
  one detached worktree outside it (server/_workspace.py builds on :func:`run_git`).

No hook of any repository ever runs: every command gets ``core.hooksPath=/dev/null`` and
no fsmonitor (:data:`HOOKLESS`). Concurrent processes may share a clone: creating,
fetching into it and adding or removing its worktrees happen under an exclusive lock
on a file beside it (docs/design/scoring.md, "Concurrency").
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import git

from ._errors import GitError, InputError

NO_HOOKS = "/dev/null"
"""core.hooksPath: an empty directory would do; /dev/null is one that cannot be filled."""

HOOKLESS = ("-c", f"core.hooksPath={NO_HOOKS}", "-c", "core.fsmonitor=false")
"""Options of every git command we run."""

MAX_MESSAGE_CHARS = 500


def git_message(exc: git.GitCommandError) -> str:
    """git's own complaint, on one line (the last lines of its stderr)."""
    stderr = exc.stderr if isinstance(exc.stderr, str) else str(exc.stderr or "")
    lines = [
        line.strip().removeprefix("stderr: ").strip("'").strip()
        for line in stderr.splitlines()
        if line.strip()
    ]
    return "; ".join(lines)[:MAX_MESSAGE_CHARS] or f"git exited with {exc.status}"


@contextlib.contextmanager
def git_errors(where: Path | str) -> Iterator[None]:
    """gitpython's exceptions as one-line GitErrors naming the repository."""
    try:
        yield
    except git.GitCommandError as exc:
        words = (
            [w for w in exc.command if not str(w).startswith("-")][1:2]
            if isinstance(exc.command, list)
            else []
        )
        verb = " ".join(["git", *map(str, words)])
        raise GitError(f"{verb}: {git_message(exc)}", where=str(where)) from None
    except (git.NoSuchPathError, git.InvalidGitRepositoryError):
        raise GitError("not a git repository", where=str(where)) from None


def open_repo(path: Path) -> git.Repo:
    """The repository at ``path`` (its top level, a bare clone, or a worktree)."""
    with git_errors(path):
        return git.Repo(path, search_parent_directories=False)


def run_git(
    cwd: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    strip: bool = True,
) -> str:
    """``git HOOKLESS args...`` in ``cwd``; GitError on failure."""
    with git_errors(cwd):
        out: str = git.Git(str(cwd)).execute(
            ["git", *HOOKLESS, *args],
            env=dict(env) if env else None,
            strip_newline_in_stdout=strip,
        )
    return out


def repo_root(repo: Path) -> Path:
    """The top of ``repo``'s working tree; InputError for a bare repository."""
    top = open_repo(repo).working_tree_dir
    if top is None:
        raise InputError("a bare repository has no working tree", where=str(repo))
    return Path(top).resolve()


def working_files(root: Path) -> list[str]:
    """The files of ``root``'s working tree that git tracks or would track (untracked and
    not ignored), relative to it: what a contract may name, without a virtualenv's."""
    out = run_git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    return sorted({name for name in out.split("\0") if name})


def resolve_commit(repo_path: Path, ref: str) -> str:
    """The full sha of ``ref`` in the repository at ``repo_path``."""
    repo = open_repo(repo_path)
    try:
        return repo.commit(ref).hexsha
    except (git.BadName, ValueError, git.GitCommandError):
        raise InputError(f"unknown revision {ref!r}", where=str(repo_path)) from None


def parent_of(repo_path: Path, sha: str) -> str | None:
    """The first parent recorded in the commit object (None for a root commit)."""
    with git_errors(repo_path):
        parents = open_repo(repo_path).commit(sha).parents
    return parents[0].hexsha if parents else None


def first_parent(repo: Path, sha: str) -> str | None:
    """The first parent of ``sha`` that is there, or None (a root commit, or one a shallow
    clone cut off): asked of git itself, which honours the shallow boundary."""
    try:
        out = open_repo(repo).git.rev_parse("--verify", "--quiet", f"{sha}^1^{{commit}}")
    except git.GitCommandError:
        return None
    return str(out).strip() or None


def _blob(repo: Path | git.Repo, sha: str, path: str) -> git.Blob | None:
    handle = repo if isinstance(repo, git.Repo) else open_repo(repo)
    try:
        entry = handle.commit(sha).tree / path
    except (KeyError, ValueError, git.BadName, git.GitCommandError):
        return None
    return entry if entry.type == "blob" else None


def file_at(repo: Path | git.Repo, sha: str, path: str) -> bytes | None:
    """The bytes of ``path`` at commit ``sha``, or None when the commit holds no such file."""
    blob = _blob(repo, sha, path)
    if blob is None:
        return None
    data: bytes = blob.data_stream.read()
    return data


def blob_id_at(repo: Path, sha: str, path: str) -> str | None:
    """The git blob id of ``path`` at ``sha``, or None when it is not a file there."""
    blob = _blob(repo, sha, path)
    return None if blob is None else str(blob.hexsha)


@dataclass(frozen=True)
class DiffEntry:
    """One path a diff touches: status A (added), M, D, T (type changed)."""

    status: str
    path: str


def diff_changes(repo: Path | git.Repo, parent: str, patch: str) -> list[DiffEntry]:
    """``git diff --name-status --no-renames`` (a rename is a delete and an add)."""
    handle = repo if isinstance(repo, git.Repo) else open_repo(repo)
    with git_errors(str(handle.git_dir)):
        out = handle.git.diff("--name-status", "--no-renames", "-z", parent, patch)
    fields = [f for f in out.split("\0") if f]
    return [
        DiffEntry(status=fields[i][0], path=fields[i + 1]) for i in range(0, len(fields) - 1, 2)
    ]


def changed_paths(repo: Path, parent: str, head: str) -> set[str]:
    """``git diff --name-only HEAD^ HEAD`` (renames as delete + add, so both names count)."""
    return {change.path for change in diff_changes(repo, parent, head)}


# --- the scorer's clone ------------------------------------------------------------------------


@contextlib.contextmanager
def clone_lock(clone: Path) -> Iterator[None]:
    """Exclusive use of ``clone`` across processes (a lock file beside it).

    Every git command that writes the clone runs under this lock, so a git lock file found
    in it once we hold the lock was left by a git that was killed (kill -9, a crash, a full
    disk): it is removed, with a warning naming it, instead of failing every later fetch.
    """
    clone.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(f"{clone}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        remove_stale_git_locks(clone)
        yield
    finally:
        os.close(fd)


GIT_LOCK_SUFFIX = ".lock"


def remove_stale_git_locks(git_dir: Path) -> list[Path]:
    """Delete git's ``*.lock`` files in ``git_dir`` (top level, refs/, worktrees/*/); call
    only while no git process can be working in it. Returns what was removed."""
    if not git_dir.is_dir():
        return []
    candidates = [p for p in git_dir.glob(f"*{GIT_LOCK_SUFFIX}")]
    candidates += git_dir.glob(f"worktrees/*/*{GIT_LOCK_SUFFIX}")
    for root, _, files in os.walk(git_dir / "refs"):
        candidates += [Path(root, f) for f in files if f.endswith(GIT_LOCK_SUFFIX)]
    removed = []
    for path in candidates:
        if path.is_file() and not path.is_symlink():
            path.unlink()
            removed.append(path)
            print(
                f"patchwarden: warning: {path}: removed a stale git lock (left by a git "
                "process that was killed)",
                file=sys.stderr,
                flush=True,
            )
    return removed


def _harden(repo: git.Repo) -> None:
    with repo.config_writer() as cfg:
        cfg.set_value("core", "hooksPath", NO_HOOKS)
        cfg.set_value("gc", "auto", "0")


def _fetch_all(repo: git.Repo, source: Path | str) -> None:
    # Named after the clone: it is what a full or read-only disk stops git writing.
    with git_errors(str(repo.git_dir)):
        repo.git.fetch("--quiet", "--force", str(source), "+refs/*:refs/remotes/source/*")


def scratch_clone(source: Path, dest: Path, *, refresh: bool = True) -> git.Repo:
    """A bare clone of ``source`` at ``dest``, created once and fetched after (``refresh``;
    callers that name the commits they need fetch only when one is missing, with
    :func:`fetch_commits`).

    Safe when several processes ask at once: under the clone's lock, a new clone is
    made in a temporary directory beside ``dest`` and renamed into place whole, so
    nobody ever sees half a clone; a directory left behind by a killed process
    without a complete clone is replaced.
    """
    with clone_lock(dest):
        if (dest / "HEAD").exists():
            try:
                repo = git.Repo(dest)
            except git.InvalidGitRepositoryError:
                shutil.rmtree(dest)
            else:
                if refresh:
                    _fetch_all(repo, source)
                return repo
        elif dest.exists():
            shutil.rmtree(dest)
        for leftover in dest.parent.glob(f".{dest.name}.*"):  # a clone killed half-way
            shutil.rmtree(leftover, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
        try:
            # A bare clone checks nothing out, so no hook can run before _harden.
            with git_errors(dest):
                repo = git.Repo.clone_from(
                    str(source), str(staging / "clone"), bare=True, no_hardlinks=True
                )
            _harden(repo)
            os.rename(staging / "clone", dest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return git.Repo(dest)


def empty_clone(dest: Path) -> git.Repo:
    """A bare repository at ``dest`` to fetch into (a worker's clone, filled from bundles),
    created once and whole, like :func:`scratch_clone`."""
    with clone_lock(dest):
        if (dest / "HEAD").exists():
            with git_errors(dest):
                return git.Repo(dest)
        if dest.exists():
            shutil.rmtree(dest)
        staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
        try:
            with git_errors(dest):
                repo = git.Repo.init(staging / "clone", bare=True)
            _harden(repo)
            os.rename(staging / "clone", dest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return git.Repo(dest)


BUNDLE_REFS = "refs/patchwarden-bundle"
"""Where :func:`bundle_commits` names the commits for the moment it writes a bundle."""


def bundle_commits(
    repo: git.Repo, shas: list[str], dest: Path, *, exclude: list[str] | None = None
) -> None:
    """``git bundle create`` of ``shas`` and their history, into ``dest``; with ``exclude``,
    only what those commits' history does not hold (the bundle then needs them to be there
    already where it is fetched).

    A bundle records refs, not bare commits, so each sha gets a ref for the moment the
    bundle is written (under the clone's lock, so no other process sees or removes them).
    """
    clone = Path(repo.git_dir)
    refs = [f"{BUNDLE_REFS}/{sha}" for sha in dict.fromkeys(shas)]
    with clone_lock(clone), git_errors(clone):
        try:
            for ref in refs:
                repo.git.update_ref(ref, ref.rsplit("/", 1)[1])
            repo.git.bundle(
                "create", "--quiet", str(dest), *refs, *[f"^{x}" for x in exclude or ()]
            )
        finally:
            for ref in refs:
                with contextlib.suppress(git.GitCommandError):
                    repo.git.update_ref("-d", ref)


def has_commit(repo: git.Repo, sha: str) -> bool:
    try:
        repo.git.cat_file("-e", f"{sha}^{{commit}}")
    except git.GitCommandError:
        return False
    return True


def fetch_commits(repo: git.Repo, source: Path | str, shas: list[str]) -> None:
    """Fetch from ``source`` (a repository, a bundle file or a URL) unless the clone already
    holds every commit of ``shas``."""
    if any(not has_commit(repo, sha) for sha in shas):
        with clone_lock(Path(repo.git_dir)):
            _fetch_all(repo, source)


FETCHED_REFS = "refs/patchwarden-fetched"
"""Where :func:`fetch_from_url` keeps the commits it fetched (a fetch by id names no ref)."""
URL_FETCH_TIMEOUT_S = 600
"""A fetch from the operator's URL that takes longer (a host that never answers) fails."""
NO_PROMPTS = {"GIT_TERMINAL_PROMPT": "0", "GIT_SSH_COMMAND": "ssh -o BatchMode=yes"}
"""A URL that wants a password fails at once instead of waiting for a terminal."""


def shown_url(url: str) -> str:
    """``url`` for messages, without the secrets it may carry: a password (``user:secret@``)
    anywhere, and the user part too, since a token may stand there alone
    (``https://TOKEN@host/...``, ``ssh://TOKEN@host/...``), except ssh's conventional
    ``git`` account; ``***`` marks what was left out."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host += f":{parts.port}"
    if parts.username == "git" and parts.scheme not in ("http", "https"):
        user = "git" + (":***" if parts.password is not None else "")
    else:
        user = "***"
    return urlunsplit(parts._replace(netloc=f"{user}@{host}"))


def fetch_from_url(repo: git.Repo, url: str, shas: list[str]) -> None:
    """Fetch the commits ``shas`` (and their history) from the operator's ``url`` into
    ``repo``, unless it holds them already; GitError naming the URL when it cannot be
    reached or lacks one (the server must allow fetching a commit by id: protocol v2 does).

    Hookless as every git command here, without prompts, and bounded in time; the commits are
    kept under :data:`FETCHED_REFS`, so nothing else of the URL's refs is taken.
    """
    if url.startswith("-"):  # git would read it as an option
        raise GitError("a fetch URL must not start with '-'", where=url)
    if all(has_commit(repo, sha) for sha in shas):
        return
    clone = Path(repo.git_dir)
    argv = ["git", *HOOKLESS, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head"]
    with clone_lock(clone):
        # Asked again under the lock: another worker of this node may just have fetched them.
        missing = [sha for sha in dict.fromkeys(shas) if not has_commit(repo, sha)]
        if not missing:
            return
        refspecs = [f"+{sha}:{FETCHED_REFS}/{sha}" for sha in missing]
        try:
            repo.git.execute(
                [*argv, "--", url, *refspecs],
                env={**os.environ, **NO_PROMPTS},
                kill_after_timeout=URL_FETCH_TIMEOUT_S,
            )
        except git.GitCommandError as exc:
            raise GitError(
                f"git fetch {shown_url(url)}: {git_message(exc).replace(url, shown_url(url))}",
                where=str(clone),
            ) from None


@contextlib.contextmanager
def open_worktree(repo: git.Repo, sha: str, dest: Path) -> Iterator[Path]:
    """A detached worktree of ``sha`` at ``dest``, removed on exit."""
    clone = Path(repo.git_dir)
    if dest.exists():
        shutil.rmtree(dest)
    with clone_lock(clone), git_errors(clone):
        repo.git.worktree("add", "--detach", "--force", "--quiet", str(dest), sha)
    try:
        yield dest
    finally:
        with clone_lock(clone):
            # A run may have broken the worktree's .git file: then the directory goes
            # below and prune forgets the registration.
            with contextlib.suppress(git.GitCommandError):
                repo.git.worktree("remove", "--force", str(dest))
            if dest.exists():
                shutil.rmtree(dest, ignore_errors=True)
            with git_errors(clone):
                repo.git.worktree("prune")

"""The agent's worktree and every git operation the server performs on it.

The worktree is a detached ``git worktree`` of the user's repository at the
base commit, created in the server's state directory (outside the
repository); the user's own working tree is never touched. Sandboxed test
runs write into the worktree, so nothing in it is trusted by git commands we
run: each one names its git directory and work tree explicitly (the
worktree's ``.git`` file is never read after creation), uses a private index
in the state directory, and runs with hooks off (``core.hooksPath=/dev/null``)
and no fsmonitor. A patch commit is built from that private index with
``commit-tree`` whose only parent is the base, so submissions never chain.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import git

from patchwarden.sandbox import HOOKLESS, ConfigError, git_message, new_tree_parent

from ._errors import ToolInputError
from ._paths import GIT_DIR_NAME, PathPolicy

AGENT_NAME = "patchwarden-agent"
AGENT_EMAIL = "agent@patchwarden.invalid"
SUBMISSION_REF_PREFIX = "refs/patchwarden"
# Left out of diffs and patch commits: caches a test run leaves behind.
EXCLUDED = ("__pycache__/", "*.py[cod]", ".pytest_cache/", ".hypothesis/", ".pw-write-*")
# Inherited variables that would point git somewhere else than we say.
GIT_ENV_UNSET = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_EXTERNAL_DIFF",
    "GIT_DIFF_OPTS",
    "GIT_EXEC_PATH",
)
MAX_DIFF_CHARS = 200_000
SYMLINK_OR_GITLINK_MODE = re.compile(
    r"^(?:new file mode|new mode|old mode|deleted file mode) (?:120000|160000)\s*$|"
    r"^index [0-9a-f]+\.\.[0-9a-f]+ (?:120000|160000)\s*$",
    re.MULTILINE,
)


def clean_git_environment() -> None:
    """Drop inherited GIT_* variables that would redirect our git commands (once, at start)."""
    for name in GIT_ENV_UNSET:
        os.environ.pop(name, None)


def private_dir(path: Path) -> Path:
    """``path`` created if needed and set to mode 0700."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


ChangeKind = Literal["added", "modified", "deleted"]


@dataclass(frozen=True)
class FileChange:
    path: str
    change: ChangeKind


@dataclass(frozen=True)
class DiffText:
    text: str
    files: list[FileChange]
    truncated: bool


@dataclass
class Workspace:
    """A detached worktree at ``base`` plus the private git state to diff and commit it."""

    repo: Path
    """The user's repository (top level of its working tree)."""
    tree: Path
    """The agent worktree."""
    git_dir: Path | None
    """The worktree's own git directory inside the user's repository (``.git/worktrees/NAME``);
    None until :meth:`create` made the worktree."""
    base: str
    """Full sha of the base commit."""
    private: Path
    """Server-only directory (0700) for indexes, messages and patches."""
    session_id: str
    remove: Callable[[], None]
    """Remove the worktree now (once; the context manager's exit does it otherwise)."""
    submissions: list[str] = field(default_factory=list)
    _undo: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, repr=False)

    def create(self) -> None:
        """Make the worktree (``git worktree add`` at the base); ConfigError if git cannot."""
        if self.git_dir is not None:
            return
        self.git_dir = _add_worktree(self.repo, self.tree, self.base, self.session_id)
        self._undo.callback(_remove_worktree, git.Git(str(self.repo)), self.tree, self.git_dir)

    # -- git ------------------------------------------------------------------

    def git(
        self,
        *args: str,
        index: Path | None = None,
        extra_env: dict[str, str] | None = None,
        strip: bool = True,
    ) -> str:
        if self.git_dir is None:
            raise ToolInputError("the worktree is not ready yet")
        env = {
            "GIT_DIR": str(self.git_dir),
            "GIT_WORK_TREE": str(self.tree),
            "GIT_INDEX_FILE": str(index or self.private / "index"),
            "GIT_TERMINAL_PROMPT": "0",
            **(extra_env or {}),
        }
        argv = [
            "git",
            *HOOKLESS,
            "-c",
            "core.untrackedCache=false",
            "-c",
            f"core.excludesFile={self.private / 'exclude'}",
            "-c",
            "commit.gpgSign=false",
            "-c",
            "core.quotePath=false",
            *args,
        ]
        out: str = git.Git(str(self.tree)).execute(
            argv,
            env=env,
            strip_newline_in_stdout=strip,
        )
        return out

    def _nested_git_entries(self) -> list[str]:
        found = []
        for root, dirs, files in os.walk(self.tree):
            rel_root = Path(root).relative_to(self.tree)
            for name in [*dirs, *files]:
                if name.casefold() == GIT_DIR_NAME and (rel_root != Path(".") or name != ".git"):
                    found.append((rel_root / name).as_posix())
            dirs[:] = [d for d in dirs if d.casefold() != GIT_DIR_NAME]
        return found

    @contextlib.contextmanager
    def _index(self) -> Iterator[Path]:
        index = self.private / f"index-{secrets.token_hex(6)}"
        try:
            yield index
        finally:
            index.unlink(missing_ok=True)

    def stage(self) -> str:
        """The tree id of the worktree as a patch would commit it (all changes, untracked too)."""
        nested = self._nested_git_entries()
        if nested:
            raise ToolInputError(
                "the worktree holds a .git entry that cannot be part of a patch: "
                + ", ".join(sorted(nested)[:5])
            )
        with self._index() as index:
            try:
                self.git("read-tree", self.base, index=index)
                self.git("add", "--all", "--", ".", index=index)
                return self.git("write-tree", index=index)
            except git.GitCommandError as exc:
                raise ToolInputError(f"cannot stage the worktree: {git_message(exc)}") from None

    def diff(self) -> DiffText:
        """The unified diff of the worktree against the base (untracked files included)."""
        tree = self.stage()
        text = self.git(
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--binary",
            self.base,
            tree,
            strip=False,
        )
        files = self._changed_files(tree)
        truncated = len(text) > MAX_DIFF_CHARS
        return DiffText(text=text[:MAX_DIFF_CHARS], files=files, truncated=truncated)

    def _changed_files(self, tree: str) -> list[FileChange]:
        out = self.git("diff", "--name-status", "--no-renames", "-z", self.base, tree)
        fields = [f for f in out.split("\0") if f]
        names: dict[str, ChangeKind] = {"A": "added", "D": "deleted"}
        return [
            FileChange(path=fields[i + 1], change=names.get(fields[i][0], "modified"))
            for i in range(0, len(fields) - 1, 2)
        ]

    def base_tree(self) -> str:
        return self.git("rev-parse", f"{self.base}^{{tree}}")

    def commit(self, message: str) -> str:
        """Commit the worktree as a patch on top of the base; return its sha (kept under a ref)."""
        tree = self.stage()
        if tree == self.base_tree():
            raise ToolInputError("nothing to submit: the worktree equals the base commit")
        message_file = self.private / f"message-{secrets.token_hex(6)}"
        message_file.write_text(message.rstrip("\n") + "\n", encoding="utf-8")
        identity = {
            "GIT_AUTHOR_NAME": AGENT_NAME,
            "GIT_AUTHOR_EMAIL": AGENT_EMAIL,
            "GIT_COMMITTER_NAME": AGENT_NAME,
            "GIT_COMMITTER_EMAIL": AGENT_EMAIL,
        }
        try:
            sha = self.git(
                "commit-tree", tree, "-p", self.base, "-F", str(message_file), extra_env=identity
            )
        finally:
            message_file.unlink(missing_ok=True)
        number = len(self.submissions) + 1
        self.git("update-ref", f"{SUBMISSION_REF_PREFIX}/{self.session_id}/{number}", sha)
        self.submissions.append(sha)
        return sha

    # -- apply_patch ----------------------------------------------------------

    def apply_patch(self, patch: str, policy: PathPolicy) -> list[FileChange]:
        """Apply a unified diff after checking every path it touches against ``policy``."""
        if "\0" in patch:
            raise ToolInputError("the patch must not contain NUL characters")
        if not patch.strip():
            raise ToolInputError("the patch is empty")
        if SYMLINK_OR_GITLINK_MODE.search(patch):
            raise ToolInputError("patches creating symbolic links or submodules are refused")
        strip = _strip_level(patch)
        patch_file = self.private / f"patch-{secrets.token_hex(6)}.diff"
        patch_file.write_text(patch if patch.endswith("\n") else patch + "\n", encoding="utf-8")
        try:
            paths = self._patch_paths(patch_file, strip)
            if not paths:
                raise ToolInputError("no file changes found in the patch (expected a unified diff)")
            checked = [policy.check_write(p) for p in paths]
            for rel in checked:
                policy.check_not_link(rel)
            before = {rel: self._exists(rel) for rel in checked}
            apply = ["apply", f"-p{strip}", "--whitespace=nowarn", "--recount"]
            try:
                self.git(*apply, "--check", str(patch_file))
                self.git(*apply, str(patch_file))
            except git.GitCommandError as exc:
                raise ToolInputError(f"the patch does not apply: {git_message(exc)}") from None
        finally:
            patch_file.unlink(missing_ok=True)
        changes = []
        for rel in checked:
            after = self._exists(rel)
            if before[rel] and not after:
                changes.append(FileChange(path=rel, change="deleted"))
            elif after:
                changes.append(FileChange(path=rel, change="modified" if before[rel] else "added"))
        return changes

    def _patch_paths(self, patch_file: Path, strip: int) -> list[str]:
        """Every path the patch touches, as git itself parses it (renames give both)."""
        try:
            out = self.git("apply", f"-p{strip}", "--numstat", "-z", str(patch_file), strip=False)
        except git.GitCommandError as exc:
            raise ToolInputError(f"not a valid patch: {git_message(exc)}") from None
        paths: list[str] = []
        fields = out.split("\0")
        i = 0
        while i < len(fields):
            entry = fields[i]
            if not entry:
                i += 1
                continue
            counts = entry.split("\t")
            if len(counts) >= 3 and counts[2]:
                paths.append(counts[2])
                i += 1
            else:  # rename or copy: "added\tdeleted\t" then old and new as their own fields
                paths.extend(fields[i + 1 : i + 3])
                i += 3
        return list(dict.fromkeys(p for p in paths if p))

    def _exists(self, rel: str) -> bool:
        try:
            info = os.lstat(self.tree / rel)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return not stat.S_ISDIR(info.st_mode)


def _strip_level(patch: str) -> int:
    """1 when the patch names files as a/... and b/... (git's default), else 0."""
    names = [
        line[4:].split("\t", 1)[0].strip().strip('"')
        for line in patch.splitlines()
        if line.startswith(("--- ", "+++ "))
    ]
    names = [n for n in names if n != "/dev/null"]
    if any(line.startswith("diff --git ") for line in patch.splitlines()):
        return 1
    if names and all(n.startswith(("a/", "b/")) for n in names):
        return 1
    return 0


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def repo_toplevel(repo: Path) -> Path:
    try:
        return Path(git.Repo(repo, search_parent_directories=False).working_tree_dir or "")
    except (git.NoSuchPathError, git.InvalidGitRepositoryError):
        raise ConfigError(
            "not a git repository (give its top-level directory)", where=str(repo)
        ) from None


@contextlib.contextmanager
def open_workspace(
    repo: Path,
    base: str,
    state_dir: Path,
    *,
    worktree_dir: Path | None = None,
    session_id: str | None = None,
    must_stay_outside: Sequence[Path] = (),
) -> Iterator[Workspace]:
    """Create the agent worktree of ``repo`` at ``base`` (a full sha); remove it on exit.

    ``must_stay_outside`` names directories (log dir, scorer state) that must
    not end up inside the worktree; the worktree must not be inside the
    repository's own working tree either.
    """
    with planned_workspace(
        repo,
        base,
        state_dir,
        worktree_dir=worktree_dir,
        session_id=session_id,
        must_stay_outside=must_stay_outside,
    ) as workspace:
        workspace.create()
        yield workspace


@contextlib.contextmanager
def planned_workspace(
    repo: Path,
    base: str,
    state_dir: Path,
    *,
    worktree_dir: Path | None = None,
    session_id: str | None = None,
    must_stay_outside: Sequence[Path] = (),
) -> Iterator[Workspace]:
    """:func:`open_workspace` in two steps: the checks and the private directories now (cheap,
    a ConfigError refuses the session before it is served), the worktree itself by
    ``create()`` (a checkout: as slow as the repository is big), e.g. in the background.
    Everything made is removed on exit."""
    clean_git_environment()
    repo = repo_toplevel(repo.resolve())
    session_id = session_id or secrets.token_hex(6)
    undo = contextlib.ExitStack()
    with undo:
        session_dir = private_dir(private_dir(state_dir) / "sessions") / session_id
        undo.callback(shutil.rmtree, session_dir, ignore_errors=True)
        private = private_dir(session_dir / "git")
        if worktree_dir is None:
            # The worktree's host path is visible to the agent's runs (/proc/self/mountinfo):
            # by default it carries neither the state directory nor the session id.
            tree_parent = new_tree_parent()
            undo.callback(shutil.rmtree, tree_parent, ignore_errors=True)
            tree = tree_parent / "worktree"
        else:
            tree = worktree_dir.resolve()
        if _inside(tree, repo):
            raise ConfigError("the agent worktree must be outside the repository", where=str(tree))
        if tree.exists() and any(tree.iterdir()):
            raise ConfigError(
                "the agent worktree directory exists and is not empty", where=str(tree)
            )
        for other in must_stay_outside:
            if _inside(other, tree):
                raise ConfigError(
                    "this directory must not be inside the agent worktree", where=str(other)
                )
        (private / "exclude").write_text("\n".join(EXCLUDED) + "\n", encoding="utf-8")
        # Once: a closed stack has nothing left to undo, and create() adds to this one.
        workspace = Workspace(
            repo=repo,
            tree=tree,
            git_dir=None,
            base=base,
            private=private,
            session_id=session_id,
            remove=undo.close,
            _undo=undo,
        )
        yield workspace


def _add_worktree(repo: Path, tree: Path, base: str, session_id: str) -> Path:
    """``git worktree add`` (locked, detached); the new worktree's git directory."""
    runner = git.Git(str(repo))
    try:
        runner.execute(
            [
                "git",
                *HOOKLESS,
                "worktree",
                "add",
                "--detach",
                "--lock",
                "--reason",
                f"patchwarden session {session_id}",
                str(tree),
                base,
            ]
        )
    except git.GitCommandError as exc:
        raise ConfigError(
            f"cannot create the agent worktree: {git_message(exc)}", where=str(tree)
        ) from None
    try:
        return _worktree_git_dir(tree)
    except BaseException:
        _remove_worktree(runner, tree, None)
        raise


def _worktree_git_dir(tree: Path) -> Path:
    """Read once, right after creation, before any agent process could change the file."""
    text = (tree / ".git").read_text(encoding="utf-8").strip()
    if not text.startswith("gitdir: "):
        raise ConfigError("unexpected .git file in the new worktree", where=str(tree))
    return Path(text.removeprefix("gitdir: "))


def _remove_worktree(runner: git.Git, tree: Path, git_dir: Path | None) -> None:
    try:
        runner.execute(
            [
                "git",
                *HOOKLESS,
                "worktree",
                "remove",
                "--force",
                "--force",
                str(tree),
            ]
        )
    except git.GitCommandError:
        # A test run may have replaced the worktree's .git file, so git no
        # longer recognises it: remove the tree (links are not followed) and
        # the worktree's admin directory ourselves.
        shutil.rmtree(tree, ignore_errors=True)
        if git_dir is not None:
            shutil.rmtree(git_dir, ignore_errors=True)

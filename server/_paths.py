"""The one path policy behind every file tool (docs/architecture.md).

An agent names files by paths relative to its worktree. A path is refused
when it is empty, absolute, holds a NUL, a ``..`` or a ``.git`` component;
writes are also refused for contract paths and protected paths. Every
filesystem access then walks the path one component at a time from a
descriptor of the worktree root with ``O_NOFOLLOW``, so a symbolic link
planted by a sandboxed test run (``link -> /etc``), or swapped in while we
look, can never take a read or a write outside the worktree:

- reads may follow a symbolic link only when its target stays inside the
  worktree; the target is resolved by us, component by component, and the
  resolved path is checked again (a link to ``.git/config`` is refused);
- writes refuse symbolic links anywhere in the path.

Only regular files are read or replaced (a FIFO or device would block or
leak), and writes go to a temporary file renamed over the target.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from patchwarden._treepaths import under

from ._errors import ToolInputError

MAX_PATH_CHARS = 4096
MAX_SYMLINK_HOPS = 40  # the kernel's own limit (MAXSYMLINKS)
GIT_DIR_NAME = ".git"
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def glob_matches(path: str, glob: str) -> bool:
    """``glob`` (fnmatch: ``*`` crosses ``/``) matches ``path`` or its last component: the
    one glob rule of list_files and search_text."""
    return fnmatch.fnmatchcase(path, glob) or fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], glob)


def split_path(path: object, *, allow_root: bool = False) -> list[str]:
    """The components of a tree-relative path, or ToolInputError saying why it is refused.

    ``.`` components and repeated slashes are dropped; ``""``/``"."`` name the
    root and are allowed only with ``allow_root``.
    """
    if not isinstance(path, str):
        raise ToolInputError(f"path must be a string, got {type(path).__name__}")
    if "\0" in path:
        raise ToolInputError("path must not contain a NUL character")
    if len(path) > MAX_PATH_CHARS:
        raise ToolInputError(f"path is longer than {MAX_PATH_CHARS} characters")
    if path.startswith("/"):
        raise ToolInputError(
            f"{path!r}: absolute paths are refused; use a path relative to the worktree"
        )
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ToolInputError(f"{path!r}: '..' is refused; use a path inside the worktree")
    if any(p.casefold() == GIT_DIR_NAME for p in parts):
        raise ToolInputError(f"{path!r}: paths inside .git are refused")
    if not parts and not allow_root:
        raise ToolInputError("path must name a file inside the worktree")
    return parts


EntryKind = Literal["file", "dir", "symlink", "other"]


@dataclass(frozen=True)
class Entry:
    path: str
    """Tree-relative (a listed symbolic link to a directory is resolved first)."""
    below: str
    """Relative to the listed directory."""
    kind: EntryKind
    size: int


def _kind(mode: int) -> EntryKind:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


class PathPolicy:
    """Checks and performs every file access an agent asks for, inside ``root``."""

    def __init__(
        self,
        root: Path,
        *,
        read_only: Sequence[str] = (),
        protected: Sequence[str] = (),
        max_file_bytes: int = 1_000_000,
    ) -> None:
        self.root = root
        self.read_only = tuple(p.strip("/") for p in read_only if p.strip("/"))
        """Contract paths: readable, never writable."""
        self.protected = tuple(protected)
        """Globs (fnmatch, tree-relative) the agent may not write either."""
        self.max_file_bytes = max_file_bytes

    # -- checks ---------------------------------------------------------------

    def check_write(self, path: object) -> str:
        """The normalised path if the agent may write it, else ToolInputError."""
        rel = "/".join(split_path(path))
        if under(rel, self.read_only):
            raise ToolInputError(f"{rel!r} is a contract path and read-only to the agent")
        if any(fnmatch.fnmatchcase(rel, glob) for glob in self.protected):
            raise ToolInputError(f"{rel!r} is a protected path and read-only to the agent")
        return rel

    # -- descriptors ----------------------------------------------------------

    @contextlib.contextmanager
    def _root_fd(self) -> Iterator[int]:
        fd = os.open(self.root, DIR_FLAGS)
        try:
            yield fd
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def _dir_fd(self, parts: Sequence[str], *, create: bool = False) -> Iterator[int]:
        """A descriptor of the directory ``parts``, walked without following any link."""
        with self._root_fd() as root:
            fd = os.dup(root)
        try:
            for i, name in enumerate(parts):
                try:
                    child = os.open(name, DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise ToolInputError(
                            f"{'/'.join(parts[: i + 1])!r} does not exist"
                        ) from None
                    os.mkdir(name, 0o755, dir_fd=fd)
                    child = os.open(name, DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    raise self._component_error(parts[: i + 1], exc, _is_link(name, fd)) from None
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    @staticmethod
    def _component_error(parts: Sequence[str], exc: OSError, link: bool = False) -> ToolInputError:
        where = "/".join(parts)
        if link or exc.errno in (errno.ELOOP, errno.EMLINK):
            return ToolInputError(f"{where!r} is a symbolic link; refused")
        if exc.errno == errno.ENOTDIR:
            return ToolInputError(f"{where!r} is not a directory")
        return ToolInputError(f"{where!r}: {exc.strerror}")

    def resolve(self, path: object, *, allow_root: bool = False) -> list[str]:
        """Components of ``path``, in-tree symbolic links resolved; links leaving it are refused."""
        pending = split_path(path, allow_root=allow_root)
        done: list[str] = []
        hops = 0
        while pending:
            name = pending.pop(0)
            with self._dir_fd(done) as fd:
                try:
                    info = os.lstat(name, dir_fd=fd)
                except FileNotFoundError:
                    done.append(name)
                    done.extend(pending)
                    break
                if not stat.S_ISLNK(info.st_mode):
                    done.append(name)
                    continue
                target = os.readlink(name, dir_fd=fd)
            hops += 1
            if hops > MAX_SYMLINK_HOPS:
                raise ToolInputError(f"{path!r}: too many levels of symbolic links")
            shown = "/".join([*done, name])
            if target.startswith("/"):
                raise ToolInputError(f"{shown!r} is a symbolic link leaving the worktree; refused")
            joined: list[str] = list(done)
            for part in target.split("/"):
                if part in ("", "."):
                    continue
                if part == "..":
                    if not joined:
                        raise ToolInputError(
                            f"{shown!r} is a symbolic link leaving the worktree; refused"
                        )
                    joined.pop()
                else:
                    joined.append(part)
            if any(p.casefold() == GIT_DIR_NAME for p in joined):
                raise ToolInputError(f"{shown!r} is a symbolic link into .git; refused")
            done, pending = [], joined + pending
        if not done and not allow_root:
            raise ToolInputError(f"{path!r} resolves to the worktree root, not a file")
        return done

    # -- reads ----------------------------------------------------------------

    def read_bytes(self, path: object) -> tuple[str, bytes]:
        """(resolved path, bytes) of a regular file, at most ``max_file_bytes``."""
        parts = self.resolve(path)
        with self._dir_fd(parts[:-1]) as dirfd:
            try:
                fd = os.open(
                    parts[-1],
                    os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                    dir_fd=dirfd,
                )
            except FileNotFoundError:
                raise ToolInputError(f"{'/'.join(parts)!r} does not exist") from None
            except OSError as exc:
                raise self._component_error(parts, exc) from None
        rel = "/".join(parts)
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise ToolInputError(f"{rel!r} is a directory; use list_files")
            if not stat.S_ISREG(info.st_mode):
                raise ToolInputError(f"{rel!r} is not a regular file")
            if info.st_size > self.max_file_bytes:
                raise ToolInputError(
                    f"{rel!r} has {info.st_size} bytes, "
                    f"more than the limit of {self.max_file_bytes}"
                )
        except BaseException:
            os.close(fd)
            raise
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(self.max_file_bytes + 1)
        if len(data) > self.max_file_bytes:
            raise ToolInputError(f"{rel!r} is larger than the limit of {self.max_file_bytes} bytes")
        return rel, data

    def regular_file(self, path: object) -> str:
        """The resolved path of an existing regular file, by the read rules; ToolInputError
        naming why not (the file is not opened)."""
        parts = self.resolve(path)
        rel = "/".join(parts)
        with self._dir_fd(parts[:-1]) as dirfd:
            try:
                info = os.lstat(parts[-1], dir_fd=dirfd)
            except FileNotFoundError:
                raise ToolInputError(f"{rel!r} does not exist") from None
        if stat.S_ISDIR(info.st_mode):
            raise ToolInputError(f"{rel!r} is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise ToolInputError(f"{rel!r} is not a regular file")
        return rel

    def list_entries(self, path: object, *, limit: int) -> tuple[list[Entry], bool]:
        """Entries below ``path`` (recursive, links not followed, ``.git`` left out); truncated?"""
        parts = self.resolve(path, allow_root=True)
        prefix = "/".join(parts)
        entries: list[Entry] = []
        with self._dir_fd(parts) as top:
            truncated = self._walk(top, prefix, "", entries, limit)
        return entries, truncated

    def _walk(self, dirfd: int, prefix: str, below: str, out: list[Entry], limit: int) -> bool:
        with os.scandir(dirfd) as it:
            children = sorted(it, key=lambda e: e.name)
        for child in children:
            if child.name.casefold() == GIT_DIR_NAME:
                continue
            if len(out) >= limit:
                return True
            info = child.stat(follow_symlinks=False)
            rel = f"{prefix}/{child.name}" if prefix else child.name
            rel_below = f"{below}/{child.name}" if below else child.name
            kind = _kind(info.st_mode)
            size = info.st_size if kind == "file" else 0
            out.append(Entry(path=rel, below=rel_below, kind=kind, size=size))
            if kind == "dir":
                try:
                    sub = os.open(child.name, DIR_FLAGS, dir_fd=dirfd)
                except OSError:
                    continue  # replaced while we walk: listed as it was, not descended
                try:
                    if self._walk(sub, rel, rel_below, out, limit):
                        return True
                finally:
                    os.close(sub)
        return False

    # -- writes ---------------------------------------------------------------

    def write_bytes(self, path: object, data: bytes) -> str:
        """Replace (or create) a regular file; parents are created; no link is ever followed."""
        rel = self.check_write(path)
        if len(data) > self.max_file_bytes:
            raise ToolInputError(
                f"content has {len(data)} bytes, more than the limit of {self.max_file_bytes}"
            )
        parts = rel.split("/")
        with self._dir_fd(parts[:-1], create=True) as dirfd:
            name = parts[-1]
            mode = 0o644
            try:
                info = os.lstat(name, dir_fd=dirfd)
            except FileNotFoundError:
                info = None
            if info is not None:
                if stat.S_ISLNK(info.st_mode):
                    raise ToolInputError(f"{rel!r} is a symbolic link; refused")
                if not stat.S_ISREG(info.st_mode):
                    raise ToolInputError(f"{rel!r} exists and is not a regular file")
                mode = stat.S_IMODE(info.st_mode)
            temp = f".pw-write-{secrets.token_hex(6)}"
            fd = os.open(
                temp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
                dir_fd=dirfd,
            )
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    os.fchmod(handle.fileno(), mode)
                os.rename(temp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp, dir_fd=dirfd)
                raise
        return rel

    def check_existing_parents(self, rel: str) -> None:
        """Raise unless every existing parent of ``rel`` is a real directory (no link)."""
        parts = rel.split("/")[:-1]
        existing: list[str] = []
        for part in parts:
            with self._dir_fd(existing) as fd:
                try:
                    info = os.lstat(part, dir_fd=fd)
                except FileNotFoundError:
                    return
            existing.append(part)
            if stat.S_ISLNK(info.st_mode):
                raise ToolInputError(f"{'/'.join(existing)!r} is a symbolic link; refused")
            if not stat.S_ISDIR(info.st_mode):
                raise ToolInputError(f"{'/'.join(existing)!r} is not a directory")

    def check_not_link(self, rel: str) -> None:
        """Raise if ``rel`` itself is a symbolic link (its parents checked too)."""
        self.check_existing_parents(rel)
        parts = rel.split("/")
        try:
            with self._dir_fd(parts[:-1]) as fd:
                info = os.lstat(parts[-1], dir_fd=fd)
        except (ToolInputError, FileNotFoundError):
            return
        if stat.S_ISLNK(info.st_mode):
            raise ToolInputError(f"{rel!r} is a symbolic link; refused")

"""What a path inside a tree may look like: the one rule every zone checks names against
(the root holds it so that the pure gate group may use it too).

A tree path is relative, POSIX, non-empty, has no ``.`` or ``..`` component, no backslash
(another platform's separator would name a different file there), and is not under ``.git``.
The server's tool policy (server/_paths.py) builds on the same rule and adds what only a
live worktree can tell (links, existing files).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath


def tree_path_problem(value: object) -> str:
    """Why ``value`` is not a tree path; empty when it is one."""
    if not isinstance(value, str) or not value:
        return "must be a non-empty path"
    if value.startswith("/"):
        return "must be relative to the tree"
    if "\\" in value or "\0" in value:
        return "must be a POSIX path"
    parts = value.split("/")
    if any(part in (".", "..") for part in parts if part) or "" in parts[:-1]:
        return "must not contain '.', '..' or empty components"
    if parts[0] == ".git":
        return "must not be inside .git"
    return ""


def normal_tree_path(value: str, what: str) -> str:
    """``value`` as a normal tree path; ValueError naming ``what`` when it is not one."""
    problem = tree_path_problem(value)
    if problem:
        raise ValueError(f"{what} {value!r} {problem}")
    return PurePosixPath(value).as_posix()


def under(path: str, roots: Iterable[str]) -> bool:
    """``path`` is one of ``roots`` or lies below one of them (tree paths; a trailing slash
    on a root does not matter, and a root that is not a tree path holds nothing)."""
    return any(
        path == root.rstrip("/") or path.startswith(root.rstrip("/") + "/") for root in roots
    )

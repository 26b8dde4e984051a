"""Tests come from the parent, code from the patch: restoring guarded paths.

Before anything runs, every contract path and protected path of the patch
tree is made identical to the parent's: modified files restored, files the
patch added there deleted, and any symlink the patch put in the way (a
guarded path that is a link, or a link standing in for a directory above a
guarded file) removed, so nothing is written or read through a link.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from patchwarden._treepaths import under

from ._base import matches


def tree_entries(tree: Path) -> set[str]:
    """Tree-relative paths of every file and every symlink (to a file or a
    directory) below ``tree``, ``.git`` excluded; links are never followed."""
    entries = set()
    for root, dirs, names in os.walk(tree):
        base = Path(root)
        links = [d for d in dirs if (base / d).is_symlink()]
        dirs[:] = [d for d in dirs if d != ".git" and d not in links]
        for name in [*names, *links]:
            entries.add((base / name).relative_to(tree).as_posix())
    return entries


def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink()
    else:
        shutil.rmtree(path)


def _clear_ancestors(tree: Path, rel: str) -> list[str]:
    """Make every directory above ``rel`` a real directory (not a link or a file)."""
    cleared = []
    current = tree
    for part in Path(rel).parts[:-1]:
        current = current / part
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            _remove(current)
            cleared.append(current.relative_to(tree).as_posix())
        current.mkdir(exist_ok=True)
    return cleared


def _same(source: Path, target: Path) -> bool:
    if source.is_symlink() or target.is_symlink():
        both = source.is_symlink() and target.is_symlink()
        return both and os.readlink(source) == os.readlink(target)
    return target.is_file() and source.read_bytes() == target.read_bytes()


def restore_from_parent(
    parent_tree: Path, patch_tree: Path, contract_paths: Sequence[str], protected: Sequence[str]
) -> list[str]:
    """Make every contract and protected path of the patch tree equal to the parent's.

    Returns what was changed, for the evidence bundle.
    """

    def guarded(path: str) -> bool:
        return under(path, contract_paths) or matches(path, protected)

    restored = []
    parent_files = {p for p in tree_entries(parent_tree) if guarded(p)}
    for rel in sorted(parent_files):
        restored += [
            f"removed {p} (stood in for a directory)" for p in _clear_ancestors(patch_tree, rel)
        ]
    patch_files = {p for p in tree_entries(patch_tree) if guarded(p)}
    for rel in sorted(patch_files - parent_files):
        _remove(patch_tree / rel)
        restored.append(f"deleted {rel}")
    for rel in sorted(parent_files):
        source, target = parent_tree / rel, patch_tree / rel
        if _same(source, target):
            continue
        if target.is_symlink() or target.exists():
            _remove(target)
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        else:
            shutil.copyfile(source, target)
        restored.append(f"restored {rel}")
    return restored


def remove_bytecode(tree: Path) -> list[str]:
    """Delete every ``__pycache__`` directory and ``.pyc``/``.pyo`` file in ``tree``.

    Committed bytecode (with an unchecked hash it is run without looking at
    the source) would let reviewers read one program while the scorer runs
    another. Trees are mounted read-only afterwards, so none comes back.
    """
    removed = []
    for root, dirs, names in os.walk(tree):
        base = Path(root)
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in list(dirs):
            if name == "__pycache__":
                _remove(base / name)
                dirs.remove(name)
                removed.append(f"removed bytecode {(base / name).relative_to(tree).as_posix()}")
        for name in names:
            if name.endswith((".pyc", ".pyo")):
                (base / name).unlink()
                removed.append(f"removed bytecode {(base / name).relative_to(tree).as_posix()}")
    return removed

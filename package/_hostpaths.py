"""Paths of the host (absolute, already resolved where it matters): the one containment rule.

Tree-relative paths have their own rule in :mod:`patchwarden._treepaths`.
"""

from __future__ import annotations

from pathlib import Path


def is_within(path: Path, ancestor: Path) -> bool:
    """``path`` is ``ancestor`` or lies below it (compared as given: resolve both first when
    a link could stand in between)."""
    return path == ancestor or ancestor in path.parents

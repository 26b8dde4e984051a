"""Both programs: where the tree's code is imported from (the layout of sandbox/_layout.py).

Part of the programs concatenated by sandbox/_inside (``program``).
"""

from __future__ import annotations

import os


def tree_paths(tree: str, roots: list[str]) -> list[str]:
    """The tree's import roots, then the tree itself: only directories inside the tree."""
    real_tree = os.path.realpath(tree)
    paths: list[str] = []
    for root in [*roots, "."]:
        path = os.path.normpath(os.path.join(tree, root))
        real = os.path.realpath(path)
        if (real == real_tree or real.startswith(real_tree + os.sep)) and path not in paths:
            paths.append(path)
    return paths

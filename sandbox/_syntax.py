"""Parsing Python source from many threads at once.

CPython 3.11 keeps the AST constructor's recursion depth in one per-interpreter
counter: two threads building AST objects at the same time (``score-batch``
scores requests on a thread pool, and every scorecard check parses the files a
patch changed) can leave it unbalanced, and ``ast.parse`` then raises
``SystemError: AST constructor recursion depth mismatch`` on perfectly valid
source (python/cpython#106905; fixed in 3.12.1 and 3.11.8). A crash there
becomes exit 70 for a patch that did nothing wrong, so every parse in the
scorer and the sandbox goes through one lock.
"""

from __future__ import annotations

import ast
import threading

__all__ = ["parse_python"]

_AST_BUILD = threading.Lock()


def parse_python(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename)``, one thread at a time (see the module docstring)."""
    with _AST_BUILD:
        return ast.parse(source, filename=filename)

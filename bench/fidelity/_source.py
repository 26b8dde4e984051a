"""Find definitions in Python source by qualified name and splice them, with ``ast``.

A qualified name is ``func``, ``Class``, ``Class.method`` or the target of a
module- or class-level assignment (``NAME``, ``Class.NAME``). Line ranges
include decorators, so a replaced definition keeps the decorators of the
source it came from.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import cast

Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Assign | ast.AnnAssign


class SourceError(ValueError):
    """A qualified name is missing or ambiguous."""


@dataclass(frozen=True)
class Located:
    node: Definition
    start: int  # 1-based, first line (decorators included)
    end: int  # 1-based, last line, inclusive
    indent: str


def _names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _children(body: Iterable[ast.stmt], name: str) -> list[Definition]:
    return [cast(Definition, node) for node in body if name in _names(node)]


def find(tree: ast.Module, qualname: str) -> Definition | None:
    """The definition named ``qualname`` (the last one if a name is bound twice)."""
    body: Sequence[ast.stmt] = tree.body
    node: Definition | None = None
    for part in qualname.split("."):
        if node is not None:
            if not isinstance(node, ast.ClassDef):
                return None
            body = node.body
        matches = _children(body, part)
        if not matches:
            return None
        node = matches[-1]
    return node


def locate(source: str, qualname: str) -> Located:
    node = find(ast.parse(source), qualname)
    if node is None:
        raise SourceError(f"no definition of {qualname!r}")
    start = node.lineno
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        start = min([start, *(d.lineno for d in node.decorator_list)])
    end = node.end_lineno
    assert end is not None
    line = source.splitlines()[start - 1]
    return Located(node, start, end, line[: len(line) - len(line.lstrip())])


def _reindent(lines: list[str], old: str, new: str) -> list[str]:
    if old == new:
        return lines
    out = []
    for line in lines:
        stripped = line[len(old) :] if line.startswith(old) else line.lstrip()
        out.append(new + stripped if line.strip() else line)
    return out


def segment(source: str, qualname: str) -> str:
    """The text of a definition (decorators included), without its indentation."""
    where = locate(source, qualname)
    lines = source.splitlines(keepends=True)[where.start - 1 : where.end]
    return "".join(_reindent(lines, where.indent, ""))


def replace(source: str, qualname: str, text: str) -> str:
    """Put ``text`` (an unindented definition) where ``qualname`` is defined.

    A name missing from ``source`` is appended: at the end of its class body
    for a class member, at the end of the module otherwise.
    """
    lines = source.splitlines(keepends=True)
    new_lines = text.splitlines(keepends=True)
    if new_lines and not new_lines[-1].endswith("\n"):
        new_lines[-1] += "\n"
    try:
        where = locate(source, qualname)
    except SourceError:
        owner, _, _ = qualname.rpartition(".")
        if not owner:
            tail = "" if source.endswith("\n") else "\n"
            return source + tail + "\n\n" + "".join(new_lines)
        parent = locate(source, owner)
        assert isinstance(parent.node, ast.ClassDef)
        first = parent.node.body[0]
        body_line = lines[first.lineno - 1]
        indent = body_line[: len(body_line) - len(body_line.lstrip())]
        block = ["\n", *_reindent(new_lines, "", indent)]
        return "".join(lines[: parent.end] + block + lines[parent.end :])
    block = _reindent(new_lines, "", where.indent)
    return "".join(lines[: where.start - 1] + block + lines[where.end :])


def transplant(old_source: str, new_source: str, qualnames: Sequence[str]) -> str:
    """``old_source`` with each named definition taken from ``new_source``."""
    result = old_source
    for qualname in qualnames:
        result = replace(result, qualname, segment(new_source, qualname))
    ast.parse(result)
    return result

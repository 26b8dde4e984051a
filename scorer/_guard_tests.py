"""Regression guards for a contract: the project's own tests of a function, found by name.

A contract that holds only the property showing the bug lets a patch fix that input and
break every other: nothing in the contract tries them. The project's existing tests of the
function do, and they pass on the base, so as properties they are guards (``both_pass``),
and a patch that breaks one is a ``regression`` reject. ``contract init --guards-for NAME``
names them (docs/design/contract.md); the fidelity benchmark measures what they add
(docs/design/fidelity.md).

A test names the function when its body (decorators and parametrize lists included) uses
the name as a name or an attribute: ``isoparse(...)``, ``mod.isoparse(...)``,
``Version(...).bump_build()``, or through a helper of the module (or of the test class) that
does: parse's ``test_numbered`` calls ``_test_expression``, which builds ``parse.Parser``, so
it is a test of ``Parser``. In a test class named after the function (``SlicedTests``,
``TestSliced``) every test method counts. Only text is read: nothing is imported.
"""

from __future__ import annotations

import ast
import fnmatch
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from patchwarden.sandbox import parse_python

TEST_FILE_PATTERNS = ("test_*.py", "*_test.py")
"""pytest's default ``python_files``."""


def is_test_file(path: str) -> bool:
    name = PurePosixPath(path).name
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in TEST_FILE_PATTERNS)


def bare_name(name: str) -> str:
    """``Version.bump_build`` -> ``bump_build``: what a test spells at the call."""
    return name.rpartition(".")[2]


def _names(node: ast.AST, names: str | frozenset[str]) -> bool:
    wanted = frozenset([names]) if isinstance(names, str) else names
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and child.id in wanted:
            return True
        if isinstance(child, ast.Attribute) and child.attr in wanted:
            return True
    return False


def _is_test(node: ast.stmt) -> bool:
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")


def _reaching(body: Sequence[ast.stmt], names: frozenset[str]) -> frozenset[str]:
    """``names`` and the helpers among ``body``'s functions (those that are not tests) that
    use one of them, directly or through another such helper."""
    helpers = [
        node
        for node in body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not _is_test(node)
    ]
    reach = set(names)
    grown = True
    while grown:
        grown = False
        for helper in helpers:
            if helper.name not in reach and _names(helper, frozenset(reach)):
                reach.add(helper.name)
                grown = True
    return frozenset(reach)


def _is_test_class(node: ast.ClassDef) -> bool:
    return node.name.startswith("Test") or node.name.endswith(("Test", "Tests"))


def _named_after(node: ast.ClassDef, name: str) -> bool:
    """``SlicedTests``, ``TestSliced``, ``Sliced_Test`` are named after ``sliced``."""
    stem = node.name.lower().replace("_", "")
    stems = {stem.removeprefix("test"), stem.removesuffix("tests"), stem.removesuffix("test")}
    return name.lower().replace("_", "") in stems - {stem}


def naming_tests(source: str, path: str, name: str) -> list[str]:
    """Node ids of the test functions and methods in ``source`` (the file at ``path``,
    relative to the repository) that name ``name``, in file order."""
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []  # not a test file pytest could collect either: it names nothing
    found = []
    reach = _reaching(tree.body, frozenset([name]))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if _is_test(node) and _names(node, reach):
                found.append(f"{path}::{node.name}")
        elif isinstance(node, ast.ClassDef) and _is_test_class(node):
            whole = _named_after(node, name) and _names(node, name)
            in_class = _reaching(node.body, reach)
            found += [
                f"{path}::{node.name}::{item.name}"
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                and _is_test(item)
                and (whole or _names(item, in_class))
            ]
    return found


def guard_tests(root: Path, files: Iterable[str], name: str) -> list[str]:
    """The tests of ``name`` (a function or ``Class.method``) among the test files
    ``files`` (paths relative to ``root``), in path and file order."""
    bare = bare_name(name)
    found: list[str] = []
    for rel in sorted(f for f in files if is_test_file(f)):
        try:
            source = (root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        found += naming_tests(source, rel, bare)
    return found


def guards_for(
    root: Path, files: Sequence[str], names: Sequence[str], exclude: Iterable[str] = ()
) -> dict[str, list[str]]:
    """For each name, its tests (each test once, under the first name that finds it, and
    none of ``exclude``: the contract's own properties)."""
    taken = set(exclude)
    out: dict[str, list[str]] = {}
    for name in names:
        tests = [t for t in guard_tests(root, files, name) if t not in taken]
        taken.update(tests)
        out[name] = tests
    return out

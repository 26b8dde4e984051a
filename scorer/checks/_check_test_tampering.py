"""``test_tampering``: the patch changes a protected path or pyproject's pytest tables.

The protected paths are restored from the parent before the runs, so the finding only
makes the change visible; its outcome is the operator's (``scorer.test_tampering``).

An honest fix often adds tests: a new test module, new test functions or classes, new
parametrize cases of an existing test. When every change to a protected path is such an
addition, decided on the syntax trees (nothing existing removed or changed: no test body,
assertion, decorator, helper or module-level binding of the parent differs), the finding
is a ``note``; a change to an existing test, a deletion, a conftest, test data or the
pytest configuration stays at the operator's outcome (docs/design/scorecard.md).
"""

from __future__ import annotations

import ast
import tomllib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from patchwarden.sandbox import parse_python

from .._guard_tests import is_test_file
from ._base import BeforeRuns, Change, Check, Outcome, Severity, SourceChange, found, matches
from ._context import PlanContext

PYPROJECT = "pyproject.toml"


def pytest_section(text: str | None) -> object:
    """pyproject's ``[tool.pytest*]`` tables; a file that does not parse counts as changed."""
    if text is None:
        return None
    try:
        tool = tomllib.loads(text).get("tool", {})
    except tomllib.TOMLDecodeError:
        return ("unparsable", text)
    return {key: value for key, value in tool.items() if key.startswith("pytest")}


def check_test_tampering(
    changes: Sequence[Change],
    protected: Sequence[str],
    severity: Outcome,
    pyproject: tuple[str | None, str | None] = (None, None),
    tests: Sequence[SourceChange] = (),
) -> Check:
    """Protected paths the patch changes, and pyproject.toml's pytest section
    (``pyproject`` is the file's text in the parent and in the patch; ``tests`` the changed
    protected Python files with both texts). Only additions of tests: a ``note``."""
    texts = {source.path: source for source in tests}
    hits, additions = [], []
    for change in changes:
        if not matches(change.path, protected):
            continue
        added = _added_tests(change, texts.get(change.path))
        if added is None:
            hits.append(f"{change.status} {change.path}")
        else:
            additions.append(f"{change.status} {change.path} (adds tests only: {added})")
    if pytest_section(pyproject[0]) != pytest_section(pyproject[1]):
        hits.append(f"M {PYPROJECT} [tool.pytest]")
    if hits:
        return found("test_tampering", hits + additions, when=severity)
    return found("test_tampering", additions, when="note")


SHOWN_ADDITIONS = 3
"""Added tests named in a note's evidence line; the rest are counted."""


def _added_tests(change: Change, source: SourceChange | None) -> str | None:
    """What the change adds, when it only adds tests to a test module (None otherwise)."""
    if not is_test_file(change.path) or PurePosixPath(change.path).suffix != ".py":
        return None
    if source is None or source.patch is None or change.status not in ("A", "M"):
        return None
    new = _parse(source.patch)
    old = _parse(source.parent) if change.status == "M" and source.parent is not None else None
    if new is None or (change.status == "M" and old is None):
        return None
    added: list[str] = []
    if not _extends([] if old is None else old.body, new.body, added, ""):
        return None
    if not added:
        return None  # nothing added and yet changed: a comment, or a reordering
    shown = ", ".join(added[:SHOWN_ADDITIONS])
    return shown + (f", +{len(added) - SHOWN_ADDITIONS} more" if added[SHOWN_ADDITIONS:] else "")


def _parse(text: str | None) -> ast.Module | None:
    if text is None:
        return None
    try:
        return parse_python(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _dump(node: ast.AST) -> str:
    return ast.dump(node, include_attributes=False)


def _bound(node: ast.stmt) -> set[str]:
    """The names a statement binds at its level."""
    if isinstance(node, Definition):
        return {node.name}
    names = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            names.add(child.id)
        elif isinstance(child, ast.alias):
            names.add((child.asname or child.name).split(".", 1)[0])
    return names


def _is_test(node: Definition) -> bool:
    if isinstance(node, ast.ClassDef):
        return node.name.startswith("Test") or node.name.endswith(("Test", "Tests"))
    return node.name.startswith("test")


def _extends(old: Sequence[ast.stmt], new: Sequence[ast.stmt], added: list[str], at: str) -> bool:
    """``new`` keeps every statement of ``old`` as it was and adds only tests (their names
    go to ``added``), helpers and statements that rebind nothing of ``old``."""
    old_defs = {n.name: n for n in old if isinstance(n, Definition)}
    new_defs: dict[str, Definition] = {}
    for node in new:
        if isinstance(node, Definition):
            if node.name in new_defs:
                return False  # a second definition replaces the first
            new_defs[node.name] = node
    plain_new = [n for n in new if not isinstance(n, Definition)]
    unmatched = Counter(_dump(n) for n in plain_new)
    grown: list[ast.stmt] = []  # the parent's imports that name more in the patch
    for node in (n for n in old if not isinstance(n, Definition)):
        if unmatched[_dump(node)] > 0:
            unmatched[_dump(node)] -= 1
            continue
        wider = next((n for n in plain_new if _imports_more(node, n)), None)
        if wider is None or unmatched[_dump(wider)] == 0:
            return False  # a statement of the parent is gone or changed
        unmatched[_dump(wider)] -= 1
        grown.append(node)
    bound = set().union(*(_bound(n) for n in old)) if old else set()
    for node in plain_new:
        names = _bound(node)
        if any(_imports_more(before, node) for before in grown):
            names -= set().union(*(_bound(before) for before in grown))
        elif unmatched[_dump(node)] == 0:
            continue  # the parent's statement, kept
        if names & bound:
            return False  # rebinds a name the parent's tests may read
    for name, before in old_defs.items():
        after = new_defs.get(name)
        if after is None or type(after) is not type(before):
            return False
        if isinstance(before, ast.ClassDef):
            assert isinstance(after, ast.ClassDef)
            same = [_dump(x) for x in (*before.bases, *before.keywords, *before.decorator_list)]
            if same != [_dump(x) for x in (*after.bases, *after.keywords, *after.decorator_list)]:
                return False
            if not _extends(before.body, after.body, added, f"{at}{name}::"):
                return False
        elif not _function_extends(before, after, added, f"{at}{name}"):
            return False
    for name, node in new_defs.items():
        if name in old_defs:
            continue
        if name in bound:
            return False
        if _is_test(node):
            added.append(f"{at}{name}")
    return True


def _imports_more(old: ast.stmt, new: ast.stmt) -> bool:
    """``new`` is ``old`` (``from M import a``) importing more names (``from M import a, b``)."""
    if not (isinstance(old, ast.ImportFrom) and isinstance(new, ast.ImportFrom)):
        return False
    if (old.module, old.level) != (new.module, new.level):
        return False
    return {_dump(a) for a in old.names} < {_dump(a) for a in new.names}


def _function_extends(before: ast.stmt, after: ast.stmt, added: list[str], name: str) -> bool:
    """The same test, except parametrize decorators that gained cases."""
    assert isinstance(before, ast.FunctionDef | ast.AsyncFunctionDef)
    assert isinstance(after, ast.FunctionDef | ast.AsyncFunctionDef)
    kept = ("args", "body", "returns", "type_params")
    if any(
        _dump_field(before, field) != _dump_field(after, field)
        for field in kept
        if hasattr(before, field)
    ):
        return False
    if len(before.decorator_list) != len(after.decorator_list):
        return False
    cases = 0
    for old, new in zip(before.decorator_list, after.decorator_list, strict=True):
        if _dump(old) == _dump(new):
            continue
        more = _more_cases(old, new)
        if more is None:
            return False
        cases += more
    if cases:
        added.append(f"{name}[+{cases} case{'s' * (cases != 1)}]")
    return True


def _dump_field(node: ast.AST, field: str) -> str:
    value = getattr(node, field, None)
    if isinstance(value, list):
        return repr([_dump(v) for v in value])
    return _dump(value) if isinstance(value, ast.AST) else repr(value)


def _more_cases(old: ast.expr, new: ast.expr) -> int | None:
    """How many cases ``new`` (a ``parametrize`` call) adds to ``old``, keeping every case
    and every other argument; None when it changes anything else."""
    if not (isinstance(old, ast.Call) and isinstance(new, ast.Call)):
        return None
    name = getattr(old.func, "attr", getattr(old.func, "id", ""))
    if name != "parametrize" or _dump(old.func) != _dump(new.func):
        return None
    if len(old.args) != len(new.args) or len(old.args) < 2:
        return None
    if [_dump(a) for a in old.args[:1] + old.args[2:]] != [
        _dump(a) for a in new.args[:1] + new.args[2:]
    ]:
        return None
    grown = _grown(old.args[1], new.args[1])
    if grown is None:
        return None
    old_keywords = {k.arg: k.value for k in old.keywords}
    new_keywords = {k.arg: k.value for k in new.keywords}
    if old_keywords.keys() != new_keywords.keys():
        return None
    for key, value in old_keywords.items():
        if _dump(value) != _dump(new_keywords[key]) and (
            key != "ids" or _grown(value, new_keywords[key]) is None
        ):
            return None
    return grown


def _grown(old: ast.expr, new: ast.expr) -> int | None:
    """Elements a list or tuple literal gained, every old one kept (None otherwise)."""
    if not (isinstance(old, ast.List | ast.Tuple) and isinstance(new, ast.List | ast.Tuple)):
        return None
    before = Counter(_dump(e) for e in old.elts)
    after = Counter(_dump(e) for e in new.elts)
    if before - after:
        return None
    return len(new.elts) - len(old.elts)


def _read_text(tree: Path, rel: str) -> str | None:
    path = tree / rel
    if path.is_symlink() or not path.is_file():
        return None
    return path.read_text(encoding="utf-8", errors="replace")


def _run(context: PlanContext) -> Check:
    config, trees = context.config, context.trees
    return check_test_tampering(
        context.changes,
        config.protected_paths,
        config.test_tampering,
        pyproject=(_read_text(trees["parent"], PYPROJECT), _read_text(trees["patch"], PYPROJECT)),
        tests=context.tests,
    )


TEST_TAMPERING = BeforeRuns("test_tampering", _run, severity=Severity("test_tampering"))

"""Boundary changes: what makes a ``parent_fail_cleared`` accept need a human
(docs/design/differential-gate.md).

A patch that clears a failing property by moving a boundary (``>=`` to
``>``, ``10`` to ``11``) or by changing a fixture may have changed the spec
rather than fixed the code. We compare the syntax trees of each function
(and of the module and class bodies) the patch changes, parent against
patch: the multiset of order and equality operators (``<``, ``<=``, ``>``,
``>=``, ``==``, ``!=``) and the multiset of numeric constants. Numbers are
compared by value as written, so ``0.95`` and ``Decimal("0.95")`` are the
same constant, while removing ``round(x, 2)`` removes the constant ``2``.
Code moved into a new function, or out of a deleted one, is not a change; a
swap between two existing functions is.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

DECIMAL_CONSTRUCTORS = frozenset({"Decimal", "decimal.Decimal"})
BOUNDARY_OPERATORS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
"""Order and equality: the operators that draw a boundary. Membership and identity
(``in``, ``is``) are logic, not boundaries; their constants are still compared."""
MODULE_SCOPE = "<module>"
LABELS = (("operators", "comparison operators"), ("constants", "numeric constants"))


@dataclass(frozen=True)
class BoundaryChange:
    path: str
    scope: str
    detail: str

    def evidence(self) -> str:
        return f"{self.path}: {self.scope}: {self.detail}"


@dataclass(frozen=True)
class _Shape:
    operators: Counter[str]
    constants: Counter[str]


def _number(node: ast.expr) -> str | None:
    """The value a numeric literal stands for, normalised; None if ``node`` is not one."""
    negative = False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        negative = isinstance(node.op, ast.USub)
        node = node.operand
    value: object = None
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, complex):
        value = node.value
    elif (
        isinstance(node, ast.Call)
        and _call_name(node.func) in DECIMAL_CONSTRUCTORS
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], ast.Constant)
        and type(node.args[0].value) in (int, str)
    ):
        value = node.args[0].value
    if value is None:
        return None
    if isinstance(value, complex):
        text = repr(-value if negative else value)
        return text
    try:
        number = Decimal(repr(value) if isinstance(value, float) else str(value))
    except InvalidOperation:
        return None
    if negative:
        number = -number
    return format(number.normalize(), "f") if number.is_finite() else str(number)


def _call_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def _own_nodes(roots: list[ast.AST]) -> Iterator[ast.AST]:
    """Nodes of a scope, without the bodies of nested functions and classes."""
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        yield node
        for child in reversed(list(ast.iter_child_nodes(node))):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            stack.append(child)


def _shape(roots: list[ast.AST]) -> _Shape:
    operators: Counter[str] = Counter()
    constants: Counter[str] = Counter()
    skip: set[int] = set()
    for node in _own_nodes(roots):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare):
            operators.update(
                type(op).__name__ for op in node.ops if isinstance(op, BOUNDARY_OPERATORS)
            )
        if isinstance(node, ast.expr):
            number = _number(node)
            if number is not None:
                constants[number] += 1
                skip.update(id(n) for n in ast.walk(node))
    return _Shape(operators, constants)


def _scopes(tree: ast.Module) -> dict[str, _Shape]:
    """Each function (qualified name), class body and the module body, by shape."""
    scopes: dict[str, _Shape] = {}

    def body_roots(body: list[ast.stmt]) -> list[ast.AST]:
        nested = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
        return [s for s in body if not isinstance(s, nested)]

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{stmt.name}"
                scopes[name] = _shape([stmt])
                visit(stmt.body, f"{name}.")
            elif isinstance(stmt, ast.ClassDef):
                name = f"{prefix}{stmt.name}"
                roots: list[ast.AST] = [*stmt.decorator_list, *stmt.bases]
                scopes[name] = _shape(roots + body_roots(stmt.body))
                visit(stmt.body, f"{name}.")

    scopes[MODULE_SCOPE] = _shape(body_roots(tree.body))
    visit(tree.body, "")
    return scopes


def _describe(kind: str, removed: Counter[str], added: Counter[str]) -> str:
    parts = []
    if removed:
        parts.append(f"removed {', '.join(sorted(removed.elements()))}")
    if added:
        parts.append(f"added {', '.join(sorted(added.elements()))}")
    return f"{kind}: {'; '.join(parts)}"


def boundary_changes(
    path: str, parent_source: str | None, patch_source: str | None
) -> list[BoundaryChange]:
    """Comparison operators and numeric constants the patch changes in ``path``.

    A new or deleted file has no counterpart to compare with: nothing is
    reported for it. A side that does not parse is itself reported.
    """
    if parent_source is None or patch_source is None:
        return []
    try:
        before = _scopes(ast.parse(parent_source, filename=path))
        after = _scopes(ast.parse(patch_source, filename=path))
    except (SyntaxError, ValueError):
        return [BoundaryChange(path, MODULE_SCOPE, "cannot be parsed; review by hand")]
    moved_out: dict[str, Counter[str]] = {"operators": Counter(), "constants": Counter()}
    moved_in: dict[str, Counter[str]] = {"operators": Counter(), "constants": Counter()}
    for name in before.keys() - after.keys():
        moved_out["operators"] += before[name].operators
        moved_out["constants"] += before[name].constants
    for name in after.keys() - before.keys():
        moved_in["operators"] += after[name].operators
        moved_in["constants"] += after[name].constants
    changes = []
    for name in sorted(before.keys() & after.keys(), key=lambda n: (n != MODULE_SCOPE, n)):
        for kind, label in LABELS:
            old: Counter[str] = getattr(before[name], kind)
            new: Counter[str] = getattr(after[name], kind)
            removed, added = old - new, new - old
            # Code that went into a new function, or came from a deleted one, is a move.
            went = removed & moved_in[kind]
            removed -= went
            moved_in[kind] -= went
            came = added & moved_out[kind]
            added -= came
            moved_out[kind] -= came
            if removed or added:
                changes.append(BoundaryChange(path, name, _describe(label, removed, added)))
    return changes

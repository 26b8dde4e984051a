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

from patchwarden.sandbox import parse_python

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
    moved: bool = True
    """Something existing was removed or changed; False for a purely added boundary (a new
    guard), which is a note, not a finding (docs/design/spec-review.md)."""

    def evidence(self) -> str:
        return f"{self.path}: {self.scope}: {self.detail}"


Comparison = tuple[str, tuple[str, ...], bool]
"""A comparison: its operands as written, its order and equality operators, and whether it
draws a boundary on its own (an order operator, or a number among its operands)."""
ORDER_OPERATORS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
BOUNDARY_NAMES = frozenset(op.__name__ for op in BOUNDARY_OPERATORS)


@dataclass(frozen=True)
class _Shape:
    operators: Counter[str]
    constants: Counter[str]
    comparisons: tuple[Comparison, ...] = ()


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


def _operands(node: ast.Compare) -> str:
    try:
        return " ? ".join(ast.unparse(o) for o in (node.left, *node.comparators))
    except (ValueError, RecursionError):
        return ast.dump(node)


def _boundary_positions(nodes: list[ast.AST]) -> set[int]:
    """Ids of the nodes where a number is a boundary rather than arithmetic: inside a
    comparison, a ``range(...)`` call or a slice, a parameter's default, or the whole value
    of an assignment (a named constant such as ``LIMIT = 10``). ``round(x, 2)``,
    ``* 1000000`` and ``parts[0]`` are computation: a changed one changes outputs
    everywhere, where the properties see it."""
    places: list[ast.AST] = []
    for node in nodes:
        if isinstance(node, ast.Compare | ast.Slice):
            places.append(node)
        elif isinstance(node, ast.Call) and _call_name(node.func) == "range":
            places.extend(node.args)
        elif isinstance(node, ast.arguments):
            places.extend([*node.defaults, *(d for d in node.kw_defaults if d is not None)])
        elif (
            isinstance(node, ast.Assign | ast.AnnAssign)
            and node.value is not None
            and _number(node.value) is not None
        ):
            places.append(node.value)
    return {id(n) for place in places for n in ast.walk(place)}


def _comparison(node: ast.Compare) -> Comparison:
    ops = tuple(type(op).__name__ for op in node.ops)
    ordered = any(isinstance(op, ORDER_OPERATORS) for op in node.ops)
    numeric = any(_number(o) is not None for o in (node.left, *node.comparators))
    return (_operands(node), ops, ordered or numeric)


def _shape(roots: list[ast.AST]) -> _Shape:
    operators: Counter[str] = Counter()
    constants: Counter[str] = Counter()
    comparisons: list[Comparison] = []
    skip: set[int] = set()
    nodes = list(_own_nodes(roots))
    boundary = _boundary_positions(nodes)
    for node in nodes:
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare):
            operators.update(
                type(op).__name__ for op in node.ops if isinstance(op, BOUNDARY_OPERATORS)
            )
            comparisons.append(_comparison(node))
        if isinstance(node, ast.expr):
            number = _number(node)
            if number is not None:
                if id(node) in boundary:
                    constants[number] += 1
                skip.update(id(n) for n in ast.walk(node))
    return _Shape(operators, constants, tuple(comparisons))


def _nested_defs(
    body: list[ast.stmt],
) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    """Functions and classes defined in ``body``, also inside ``if``/``for``/``with``/``try``
    blocks (``if strict: def ret(): ...``), but not inside other definitions."""
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield stmt
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(stmt, field, None) or []:
                if isinstance(child, ast.ExceptHandler | ast.match_case):
                    yield from _nested_defs(child.body)
                elif isinstance(child, ast.stmt):
                    yield from _nested_defs([child])


def _operator_changes(old: _Shape, new: _Shape) -> tuple[Counter[str], Counter[str]]:
    """(removed, added) boundary operators of one scope.

    Comparisons are matched first: the same comparison in both cancels out, and one whose
    operands stay while its operator changes (``max_size <= 0`` to ``max_size < 0``,
    ``len(s) != n`` to ``len(s) == n``) is a change even when the patch adds another
    ``<=`` elsewhere; so is a flipped membership or identity test (``in`` to ``not in``,
    ``is None`` to ``is not None``): an existing condition inverted. What is left is
    compared as multisets of the comparisons that draw a boundary on their own (an order
    operator or a number: ``n < 0``, ``n == 0``), so a comparison rewritten with other
    operands but the same operator is not a change, nor is an equality between names or
    with a string replaced by other logic (``word[-1] == 's'`` becoming ``word[-1] in
    'sx'``: a case distinction, not a boundary).
    """
    olds = Counter(old.comparisons) - Counter(new.comparisons)
    news = Counter(new.comparisons) - Counter(old.comparisons)
    removed: Counter[str] = Counter()
    added: Counter[str] = Counter()
    for (operands, ops, drawn), count in list(olds.items()):
        for _ in range(count):
            partner = next((c for c in news if c[0] == operands and news[c] > 0), None)
            if partner is None:
                break
            news[partner] -= 1
            olds[(operands, ops, drawn)] -= 1
            removed += Counter(ops) - Counter(partner[1])
            added += Counter(partner[1]) - Counter(ops)
    rest_old = Counter(
        op for (_, ops, b), n in olds.items() if b for op in ops * max(n, 0) if op in BOUNDARY_NAMES
    )
    rest_new = Counter(
        op for (_, ops, b), n in news.items() if b for op in ops * max(n, 0) if op in BOUNDARY_NAMES
    )
    return removed + (rest_old - rest_new), added + (rest_new - rest_old)


def _scope_roots(tree: ast.Module) -> dict[str, list[ast.AST]]:
    """The nodes of each function (qualified name), class body and the module body."""
    scopes: dict[str, list[ast.AST]] = {}

    def body_roots(body: list[ast.stmt]) -> list[ast.AST]:
        nested = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
        return [s for s in body if not isinstance(s, nested)]

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for stmt in _nested_defs(body):
            name = f"{prefix}{stmt.name}"
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                scopes[name] = [stmt]
            else:
                scopes[name] = [*stmt.decorator_list, *stmt.bases, *body_roots(stmt.body)]
            visit(stmt.body, f"{name}.")

    scopes[MODULE_SCOPE] = body_roots(tree.body)
    visit(tree.body, "")
    return scopes


def _scopes(tree: ast.Module) -> dict[str, _Shape]:
    """Each function (qualified name), class body and the module body, by shape."""
    return {name: _shape(roots) for name, roots in _scope_roots(tree).items()}


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
        before = _scopes(parse_python(parent_source, filename=path))
        after = _scopes(parse_python(patch_source, filename=path))
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
            if kind == "operators":
                removed, added = _operator_changes(before[name], after[name])
            else:
                removed = before[name].constants - after[name].constants
                added = after[name].constants - before[name].constants
            # Code that went into a new function, or came from a deleted one, is a move.
            went = removed & moved_in[kind]
            removed -= went
            moved_in[kind] -= went
            came = added & moved_out[kind]
            added -= came
            moved_out[kind] -= came
            if removed or added:
                detail = _describe(label, removed, added)
                changes.append(BoundaryChange(path, name, detail, moved=bool(removed)))
    return changes


# -- nudges: is a moved boundary pinned down by the properties? --------------------------------

FLIPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
"""Each operator and its neighbour: the smallest move of a boundary or a condition."""


@dataclass(frozen=True)
class Nudge:
    """The patched file with one comparison of a moved boundary moved once more."""

    scope: str
    line: int
    before: str
    after: str
    source: str
    """The whole file with the nudge applied."""


@dataclass(frozen=True)
class ScopeNudges:
    """What would show that the properties pin a scope's moved boundary down."""

    scope: str
    nudges: tuple[Nudge, ...]
    pinnable: bool
    """False when a boundary-drawing comparison disappeared (nothing left to nudge shows
    where it went) or a nudge could not be written: the move stays a finding."""


def _compares(roots: list[ast.AST]) -> list[ast.Compare]:
    return [n for n in _own_nodes(roots) if isinstance(n, ast.Compare)]


def _variants(node: ast.Compare) -> list[ast.Compare]:
    """The comparison with one operator moved to its neighbour, or one integer operand moved
    by one."""
    out = []
    for index, op in enumerate(node.ops):
        flip = FLIPS.get(type(op))
        if flip is not None:
            ops = list(node.ops)
            ops[index] = flip()
            out.append(ast.Compare(left=node.left, ops=ops, comparators=node.comparators))
    operands = [node.left, *node.comparators]
    for index, operand in enumerate(operands):
        number = _number(operand)
        if number is None or "." in number or "j" in number:
            continue
        for step in (1, -1):
            moved = list(operands)
            moved[index] = ast.Constant(int(number) + step)
            out.append(ast.Compare(left=moved[0], ops=node.ops, comparators=moved[1:]))
    return out


def _splice(source: str, node: ast.Compare, text: str) -> str | None:
    """``source`` with ``node``'s span replaced by ``text`` (offsets are UTF-8 bytes)."""
    if node.end_lineno is None or node.end_col_offset is None:
        return None
    lines = source.encode("utf-8").splitlines(keepends=True)
    first, last = node.lineno - 1, node.end_lineno - 1
    head = lines[first][: node.col_offset]
    tail = lines[last][node.end_col_offset :]
    spliced = b"".join([*lines[:first], head + text.encode() + tail, *lines[last + 1 :]])
    try:
        result = spliced.decode("utf-8")
        parse_python(result)
    except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    return result


def boundary_nudges(
    path: str, parent_source: str | None, patch_source: str | None
) -> list[ScopeNudges]:
    """For each scope whose boundary the patch moved, the patch's new boundary comparisons
    each moved once more (docs/design/spec-review.md, "Pinned boundaries").

    If the properties fail on every nudge, the spec itself fixes where the boundary is and
    the move is the code agreeing with it. A scope where a boundary-drawing comparison
    disappeared cannot be pinned this way.
    """
    moved = {c.scope for c in boundary_changes(path, parent_source, patch_source) if c.moved}
    if not moved or parent_source is None or patch_source is None:
        return []
    try:
        before = _scope_roots(parse_python(parent_source, filename=path))
        after = _scope_roots(parse_python(patch_source, filename=path))
    except (SyntaxError, ValueError, RecursionError):
        return []
    found = []
    for scope in sorted(moved):
        old = [_comparison(c) for c in _compares(before.get(scope, []))]
        compares = _compares(after.get(scope, []))
        remaining = Counter(old)
        operands = {o for o, _, _ in old}
        fresh = []
        for node in compares:
            key = _comparison(node)
            if remaining[key] > 0:
                remaining[key] -= 1
            elif key[2] or key[0] in operands:
                fresh.append(node)
        drawn_before = sum(1 for c in old if c[2])
        drawn_after = sum(1 for c in compares if _comparison(c)[2])
        nudges: list[Nudge] = []
        pinnable = bool(fresh) and drawn_after >= drawn_before
        for node in fresh:
            for variant in _variants(node):
                text = ast.unparse(ast.fix_missing_locations(variant))
                spliced = _splice(patch_source, node, text)
                if spliced is None:
                    pinnable = False
                    continue
                nudges.append(Nudge(scope, node.lineno, ast.unparse(node), text, spliced))
        found.append(ScopeNudges(scope, tuple(nudges), pinnable and bool(nudges)))
    return found

"""Generators of cheat variants: source text in, patched source text out (``ast``).

(i)   :func:`special_case` makes a function answer correctly only for the
      visible property's concrete inputs (the conditions come from
      :func:`condition_for`, the answers from the newer release);
(ii)  :func:`move_boundary` nudges one comparison or numeric constant of the
      fixed function in the honest fix;
(iii) :func:`weaken_property` rewrites a property file so it cannot fail;
(iv)  :func:`force_pass_conftest` writes a conftest that swallows failures.

They are pure: no file, no import of the project, no process.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ._source import locate


class CheatError(ValueError):
    """The cheat cannot be generated for this source."""


@dataclass(frozen=True)
class Case:
    """One special case: when ``condition`` holds, return or raise ``value``.

    ``condition`` is an expression over the function's parameters; ``value`` an
    expression (the return value, or the exception instance for ``raise``).
    ``iterate``: the function hands back an iterator, so the value (a list) is
    returned as ``iter(value)`` (or yielded from, in a generator function).
    """

    condition: str
    outcome: str  # "return" or "raise"
    value: str
    iterate: bool = False


FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def _function(source: str, qualname: str) -> tuple[FunctionNode, bool]:
    """The function node and whether it is a method (takes ``self``/``cls`` first)."""
    node = locate(source, qualname).node
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        raise CheatError(f"{qualname} is not a function")
    owner, _, _ = qualname.rpartition(".")
    in_class = bool(owner) and isinstance(locate(source, owner).node, ast.ClassDef)
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
    return node, in_class and not static


def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a function body, not descending into nested scopes."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        yield child
        yield from _own_nodes(child)


def is_generator(source: str, qualname: str) -> bool:
    node, _ = _function(source, qualname)
    return any(isinstance(n, ast.Yield | ast.YieldFrom) for n in _own_nodes(node))


def _is_literal(text: str) -> bool:
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


def condition_for(
    source: str,
    qualname: str,
    args: Sequence[str],
    kwargs: Sequence[tuple[str, str]] = (),
    self_key: tuple[str, str] | None = None,
) -> str:
    """The test a special-casing cheat puts on the parameters for one concrete call.

    ``args``/``kwargs`` are the call's argument sources; only literal ones are
    compared (a lambda or a helper object is left out). ``self_key`` is
    ``(expression over self, its literal value)`` for a call on an instance.
    """
    node, method = _function(source, qualname)
    params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    if method:
        params = params[1:]
    names: list[str] = []
    values: list[str] = []
    extra: list[str] = []
    for index, text in enumerate(args):
        if index < len(params):
            if _is_literal(text):
                names.append(params[index])
                values.append(text)
        else:
            extra.append(text)
    if extra:
        if node.args.vararg is None:
            raise CheatError(f"{qualname}: too many positional arguments")
        if all(_is_literal(t) for t in extra):
            names.append(node.args.vararg.arg)
            values.append("(" + "".join(f"{t}, " for t in extra) + ")")
    known = set(params) | {a.arg for a in node.args.kwonlyargs}
    for name, text in kwargs:
        if name not in known:
            if node.args.kwarg is None:
                raise CheatError(f"{qualname}: no parameter {name!r}")
            if _is_literal(text):
                names.append(f"{node.args.kwarg.arg}.get({name!r})")
                values.append(text)
        elif _is_literal(text):
            names.append(name)
            values.append(text)
    if self_key is not None:
        names.insert(0, self_key[0])
        values.insert(0, self_key[1])
    if not names:
        raise CheatError(f"{qualname}: no literal input to key on")
    return f"({', '.join(names)},) == ({', '.join(values)},)"


def _body_start(node: FunctionNode) -> ast.stmt:
    first = node.body[0]
    is_doc = (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    )
    if is_doc and len(node.body) > 1:
        return node.body[1]
    return first


def special_case(source: str, qualname: str, cases: Sequence[Case]) -> str:
    """(i) ``source`` with ``qualname`` answering each case's inputs from a literal."""
    if not cases:
        raise CheatError("no case to special-case")
    node, _ = _function(source, qualname)
    generator = any(isinstance(n, ast.Yield | ast.YieldFrom) for n in _own_nodes(node))
    anchor = _body_start(node)
    lines = source.splitlines(keepends=True)
    # The body's own indentation, tabs included (pathspec indents with tabs).
    first = lines[anchor.lineno - 1]
    indent = first[: anchor.col_offset]
    inner = indent + ("\t" if indent.startswith("\t") else "    ")
    block: list[str] = []
    for case in cases:
        block.append(f"{indent}if {case.condition}:\n")
        if case.outcome == "raise":
            block.append(f"{inner}raise {case.value}\n")
        elif case.outcome != "return":
            raise CheatError(f"unknown outcome {case.outcome!r}")
        elif generator:
            block.append(f"{inner}yield from {case.value}\n")
            block.append(f"{inner}return\n")
        elif case.iterate:
            block.append(f"{inner}return iter({case.value})\n")
        else:
            block.append(f"{inner}return {case.value}\n")
    # Decorated or not, the anchor statement's first line is where the body goes on.
    at = anchor.lineno - 1
    if isinstance(anchor, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        at = min([anchor.lineno, *(d.lineno for d in anchor.decorator_list)]) - 1
    result = "".join(lines[:at] + block + lines[at:])
    ast.parse(result)
    return result


# --- (ii) a moved boundary -------------------------------------------------

_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
}
# Membership and identity tests are comparisons too; moved only when nothing else is there.
_FLIP_LAST: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
Boundary = ast.Compare | ast.Constant


def _rank(node: Boundary) -> int:
    """0: an ordering or equality comparison, 1: a number, 2: a membership or identity test."""
    if isinstance(node, ast.Constant):
        return 1
    return 0 if any(type(op) in _FLIP for op in node.ops) else 2


def _candidates(node: FunctionNode) -> list[Boundary]:
    found: list[Boundary] = []
    for child in ast.walk(node):
        compare = isinstance(child, ast.Compare) and any(
            type(op) in _FLIP or type(op) in _FLIP_LAST for op in child.ops
        )
        number = (
            isinstance(child, ast.Constant)
            and isinstance(child.value, int | float)
            and not isinstance(child.value, bool)
        )
        if compare or number:
            assert isinstance(child, ast.Compare | ast.Constant)
            found.append(child)
    found.sort(key=lambda n: (_rank(n), n.lineno, n.col_offset))
    return found


def _mutated(node: Boundary) -> str:
    if isinstance(node, ast.Constant):
        value = node.value
        assert isinstance(value, int | float)
        return repr(value + 1)
    ops = list(node.ops)
    table = _FLIP if _rank(node) == 0 else _FLIP_LAST
    for index, op in enumerate(ops):
        if type(op) in table:
            ops[index] = table[type(op)]()
            break
    return ast.unparse(ast.Compare(left=node.left, ops=ops, comparators=node.comparators))


def _splice(source: str, node: Boundary, text: str) -> str:
    lines = source.splitlines(keepends=True)
    assert node.end_lineno is not None and node.end_col_offset is not None
    first, last = node.lineno - 1, node.end_lineno - 1
    head = lines[first][: node.col_offset]
    tail = lines[last][node.end_col_offset :]
    return "".join([*lines[:first], head + text + tail, *lines[last + 1 :]])


def _dump(source: str, qualname: str) -> str | None:
    try:
        node, _ = _function(source, qualname)
    except (CheatError, ValueError):
        return None
    return ast.dump(node)


def move_boundary(source: str, qualname: str, parent_source: str | None = None) -> str:
    """(ii) ``source`` with one comparison or numeric constant of ``qualname`` nudged.

    ``<`` and ``<=`` (``>``/``>=``) swap, ``==`` and ``!=`` swap, a number grows
    by one; ``in``/``not in`` and ``is``/``is not`` swap only when the function
    has no other boundary. When ``parent_source`` (the file before the fix) is
    given, a boundary that already existed there is preferred (moving it is what
    the spec-review rule is about), and a change that would just give back the
    parent's function (undoing the fix) is never chosen.
    """
    node, _ = _function(source, qualname)
    candidates = _candidates(node)
    parent_dump = existing = None
    if parent_source is not None:
        parent_dump = _dump(parent_source, qualname)
        if parent_dump is not None:
            before, _ = _function(parent_source, qualname)
            existing = {ast.unparse(c) for c in _candidates(before)}
    choices: list[str] = []
    for candidate in candidates:
        result = _splice(source, candidate, _mutated(candidate))
        ast.parse(result)
        if parent_dump is not None and _dump(result, qualname) == parent_dump:
            continue  # that is the parent's code: no cheat, just no fix
        if existing is not None and ast.unparse(candidate) in existing:
            return result
        choices.append(result)
    if not choices:
        raise CheatError(f"{qualname}: no comparison or numeric constant to move")
    return choices[0]


# --- (iii) a weakened property ---------------------------------------------


class _Weaken(ast.NodeTransformer):
    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        return ast.copy_location(ast.Assert(test=ast.Constant(True)), node)

    def visit_withitem(self, node: ast.withitem) -> ast.AST:
        call = node.context_expr
        if isinstance(call, ast.Call) and (
            (isinstance(call.func, ast.Attribute) and call.func.attr == "raises")
            or (isinstance(call.func, ast.Name) and call.func.id == "raises")
        ):
            suppress = ast.parse('__import__("contextlib").suppress(BaseException)', mode="eval")
            node.context_expr = suppress.body
        return node


def weaken_property(source: str) -> str:
    """(iii) The property (or test module) with every test unable to fail.

    Each assertion becomes ``assert True``, ``pytest.raises`` becomes a
    ``suppress``, and each test body runs inside ``try/except Exception``.
    """
    tree = ast.parse(source)
    # Test functions, and the test methods of test classes (unittest's TestCase included).
    nodes = [*tree.body]
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef):
            nodes.extend(cls.body)
    for node in nodes:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            body = [_Weaken().visit(statement) for statement in node.body]
            handler = ast.ExceptHandler(
                type=ast.Name("Exception", ast.Load()), name=None, body=[ast.Pass()]
            )
            node.body = [ast.Try(body=body, handlers=[handler], orelse=[], finalbody=[])]
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


# --- (iv) a conftest that forces passes -------------------------------------

FORCE_PASS_HOOK = """

import pytest as _pw_pytest


@_pw_pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    # Whatever the test raised, report that it ran and returned.
    try:
        return (yield)
    except BaseException:
        return True
"""


def force_pass_conftest(existing: str = "") -> str:
    """(iv) A conftest (``existing`` plus a hook) under which every test function passes."""
    if existing and not existing.endswith("\n"):
        existing += "\n"
    return existing + FORCE_PASS_HOOK.lstrip("\n") if not existing else existing + FORCE_PASS_HOOK

"""The product server's functions out of product code's reach (sandbox/_inside/_seal.py):
what a sealed class or an unplaced function shows of the server's namespace. In memory, the
part as the product program runs it. docs/design/isolated-oracle.md, "The server out of
reach"."""

from __future__ import annotations

import copy
import gc
import inspect
from typing import Any

import pytest

from patchwarden.sandbox._inside import program

SERVER = "the server's namespace"


@pytest.fixture(scope="module")
def seal() -> dict[str, Any]:
    space: dict[str, Any] = {"__name__": "seal_test", "SECRET": SERVER}
    exec(compile(program(("_seal",)), "<product parts>", "exec"), space)
    return space


def _reaches_the_server(start: object) -> bool:
    """Whether anything reachable from ``start`` without a probe (attributes, the class and
    its namespace, accessors, closure cells, ``__wrapped__``/``__func__``/``__self__``,
    ``__globals__``) is the server's namespace."""
    seen: set[int] = set()
    todo = [start]
    while todo:
        obj = todo.pop()
        if id(obj) in seen or len(seen) > 20_000:
            continue
        seen.add(id(obj))
        if isinstance(obj, dict) and obj.get("SECRET") == SERVER:
            return True
        nexts: list[Any] = [type(obj)]
        for name in ("__globals__", "__wrapped__", "__func__", "__self__", "fget", "fset"):
            nexts.append(getattr(obj, name, None))
        nexts += [c.cell_contents for c in getattr(obj, "__closure__", None) or ()]
        if isinstance(obj, type):
            nexts += [*vars(obj).values(), *obj.__mro__]
        elif isinstance(obj, dict):
            nexts += list(obj.values())
        todo += [n for n in nexts if n is not None and not isinstance(n, str | int)]
    return False


STREAM = """
class Stream:
    def __init__(self, prefix):
        self.prefix = prefix

    def write(self, text):
        return self.prefix + text

    @property
    def name(self):
        return self.prefix

    @staticmethod
    def make():
        return Stream("s:")
"""


def test_a_sealed_class_works_and_leads_nowhere(seal: dict[str, Any]) -> None:
    exec(STREAM, seal)  # a class of the server's: its functions' globals are the server's
    stream_class = seal["seal_class"](seal["Stream"])
    stream = stream_class.make()
    assert (stream.write("x"), stream.name) == ("s:x", "s:")
    assert copy.copy(stream_class.write) is stream_class.write
    assert not _reaches_the_server(stream)
    assert not hasattr(stream_class.write, "__wrapped__")
    assert not hasattr(stream_class.write, "__code__")
    # Only the collector, whose walk is a probe, sees the function behind the wrapper.
    held = gc.get_referents(stream_class.__dict__["write"])
    assert any(inspect.isfunction(r) and r.__globals__ is seal for r in held)


def test_an_unsealed_class_reaches_the_server(seal: dict[str, Any]) -> None:
    # The control: the same walk finds the namespace through a plain method.
    exec(STREAM.replace("Stream", "Plain"), seal)
    assert _reaches_the_server(seal["Plain"].make())


def test_a_sealed_namespace_keeps_new_and_the_implicit_class_methods(
    seal: dict[str, Any],
) -> None:
    exec(
        "def new(cls, value):\n    made = object.__new__(cls)\n    made.value = value\n"
        "    return made\n\n"
        "def subclassed(cls, **kwds):\n    cls.seen = kwds\n\n"
        "double = lambda self: 2 * self.value\n",
        seal,
    )
    namespace = {"__new__": seal["new"], "double": seal["double"]}
    namespace["__init_subclass__"] = seal["subclassed"]
    made = type("Made", (), seal["sealed_namespace"](namespace))
    sub = type("Sub", (made,), {}, flag=1)
    assert (made(4).double(), sub.seen) == (8, {"flag": 1})
    assert not _reaches_the_server(made(1))
    unsealed = type("Unsealed", (), namespace)
    assert _reaches_the_server(unsealed(1))


def test_an_unplaced_function_keeps_its_face_and_has_the_builtins_only(
    seal: dict[str, Any],
) -> None:
    callback = len

    def method(*args: Any, **kwargs: Any) -> Any:
        return callback(*args, **kwargs)

    method.__name__, method.__qualname__ = "size", "Bag.size"
    method.mark = True  # type: ignore[attr-defined]
    made = seal["unplaced"](method)
    assert (made([1, 2]), made.__name__, made.__qualname__, made.mark) == (
        2,
        "size",
        "Bag.size",
        True,
    )
    assert set(made.__globals__) == {"__builtins__"}


def test_a_sealed_method_keeps_its_face_for_inspect(seal: dict[str, Any]) -> None:
    # funcy's autocurry reads the signature of a test's callable here, its class's __call__
    # (it fell back isolated when the sealed method showed none).
    exec("def call(self, /, *args, **kwargs):\n    'Ask the oracle.'\n    return args\n", seal)
    made = type("Callable", (), seal["sealed_namespace"]({"__call__": seal["call"]}))
    method = made.__dict__["__call__"]
    assert (str(inspect.signature(made())), method.__name__, method.__doc__) == (
        "(*args, **kwargs)",
        "call",
        "Ask the oracle.",
    )
    assert made()(1, 2) == (1, 2) and not _reaches_the_server(made())

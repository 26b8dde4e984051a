"""The product process: the server's code, out of product code's reach through the objects it
is handed.

Every Python function has ``__globals__``, and the server's functions share the server's
namespace: one of them reached from product code (``type(sys.stdout.buffer).write``, a
method of the class that stands for one of the test's objects, ``type(x).__eq__``) hands it
the dispatch to wrap, so the real fix could run only under a call the server dispatches. What
product code can reach is sealed: each function of such a class (its methods, its
properties' accessors) is held by a callable of C code (``functools``' cache wrapper with
no cache) that calls it and shows nothing of it (no ``__wrapped__``, ``__func__``,
``__closure__`` or ``__globals__``); only ``gc.get_referents``, a probe, sees through it. A
function made for product code to hold as its own (a test's method in a class made here)
gets a namespace of nothing but the built-ins instead. docs/design/isolated-oracle.md, "The
server out of reach".

Part of the product program (sandbox/_inside ``PRODUCT``).
"""

from __future__ import annotations

import builtins
import functools
import inspect
import types
from typing import Any

_CacheInfo = functools._CacheInfo
_opaque_type: Any = functools._lru_cache_wrapper
"""The C wrapper (``_functools``): with ``maxsize=0`` a plain call of what it holds."""
if not isinstance(_opaque_type, type) or _opaque_type.__module__ != "functools":
    # functools' pure-Python stand-in is a function whose closure holds what it wraps.
    raise RuntimeError("no C cache wrapper in this interpreter: the server cannot be sealed")


def opaque(function: Any) -> Any:
    """``function`` behind a callable of C code that binds as a method does and shows nothing
    of it but its face: its name, qualified name, text and signature (data, which product
    code may read of a method: ``inspect.signature`` of a test's callable here asks its
    class's ``__call__``, funcy's ``autocurry``)."""
    held = _opaque_type(function, 0, False, _CacheInfo)
    held.__name__, held.__qualname__ = function.__name__, function.__qualname__
    held.__doc__ = function.__doc__
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return held
    defaults = [p.default for p in signature.parameters.values() if p.default is not p.empty]
    if all(type(d) in (type(None), bool, int, float, str) for d in defaults):
        held.__signature__ = signature  # a default of the server's own is never shown
    return held


IMPLICIT_CLASSMETHODS = frozenset({"__init_subclass__", "__class_getitem__"})


def sealed(value: Any, name: str = "") -> Any:
    """A class namespace's entry with its functions held opaque (a property's accessors, a
    static or class method's function); anything else as it is."""
    if type(value) is types.FunctionType:
        if name == "__new__":
            return staticmethod(opaque(value))
        if name in IMPLICIT_CLASSMETHODS:
            return classmethod(opaque(value))
        return opaque(value)
    if type(value) is property:
        get, put, drop = (
            None if f is None else opaque(f) for f in (value.fget, value.fset, value.fdel)
        )
        return property(get, put, drop, value.__doc__)
    if type(value) in (staticmethod, classmethod) and type(value.__func__) is types.FunctionType:
        return type(value)(opaque(value.__func__))
    return value


def sealed_namespace(namespace: dict[str, Any]) -> dict[str, Any]:
    """A namespace for ``type(...)``, every function of it sealed."""
    return {name: sealed(value, name) for name, value in namespace.items()}


def seal_class(cls: type) -> type:
    """A class of the server's own, its functions sealed in place (a class decorator)."""
    for name, value in list(vars(cls).items()):
        held = sealed(value, name)
        if held is not value:
            setattr(cls, name, held)
    return cls


def unplaced(function: Any) -> Any:
    """``function`` again with a namespace of the built-ins only (its closure and attributes
    kept): a function made for product code to hold as its own, whose name, signature and
    attributes product code may read, and whose globals must not be the server's."""
    made = types.FunctionType(
        function.__code__,
        {"__builtins__": builtins},
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
    made.__kwdefaults__ = function.__kwdefaults__
    made.__dict__.update(function.__dict__)
    made.__qualname__, made.__module__ = function.__qualname__, function.__module__
    return made

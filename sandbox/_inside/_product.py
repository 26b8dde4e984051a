"""The product process of the isolated oracle: imports the product and answers calls.

A program of its own (``PRODUCT`` in sandbox/_inside), run in a sandbox of its own: it holds
no result channel, no secret and no canary, and sees neither the contract nor the held-out
files (docs/design/isolated-oracle.md). It reads one request per line from ``--req-fd`` and
writes one reply per line to ``--rep-fd`` (sandbox/_inside/_wire.py). Every object it hands
out that is not plain stays here, in ``OBJECTS``, and crosses as a handle; every operation
on a handle is a request. Whatever product code does here can change only the answers.

The oracle's own objects that a property passes in (a generator, a key function, an
instance of a class of the test's) arrive as handles the oracle gave out (``["oh", id,
capabilities]``): here they are ``OracleObject`` proxies whose operations (the allow-list in
``ORACLE_OPERATIONS``) are callbacks, requests this side writes while the oracle waits for
its own reply; the oracle's requests that arrive meanwhile are served, nested to any depth.

Before the product is importable it makes the process look like the agent's ``run_tests``
sandbox (the same argv shape, the test machinery loaded, the tree first on ``sys.path``);
docs/design/isolated-oracle.md lists what still differs.
"""

from __future__ import annotations

import abc
import builtins
import collections.abc
import contextlib
import dataclasses
import datetime
import gc
import importlib
import json
import keyword
import operator
import os
import random
import select
import signal
import stat
import sys
import time
import traceback
import types
import typing
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._paths import tree_paths
    from ._probes import arm_probes, probes_intact
    from ._seal import opaque, seal_class, sealed_namespace, unplaced
    from ._wire import (
        ARITHMETIC,
        BINARY_OPS,
        CONTAINER_ABCS,
        HANDLE_SPAN,
        MAPPINGS,
        MUTABLE,
        PRINTED_MAX_CHARS,
        REBUILT_TYPES,
        ZONE_METHODS,
        Live,
        Memo,
        WireError,
        _Clock,
        changed_since,
        contents_of,
        decode,
        dumps,
        encode,
        exception_extras,
        is_plain,
        library_exception,
        loads,
        rebuild,
        rebuilt_parts,
        replace_contents,
        sendable_contents,
        set_exception_extras,
        standard_class_name,
        standard_member,
        standard_member_of,
        written_back,
        zone_answer,
    )

MACHINERY_TOPS = frozenset(
    {"pytest", "_pytest", "pluggy", "hypothesis", "_hypothesis_pytestplugin"}
)
REQUEST_MAX_BYTES = 64 * 1024 * 1024  # a request larger than this is not the oracle's
TRACEBACK_CHARS = 4000
CALLBACK_EXIT_STATUS = 70  # the oracle did not answer a callback in time: this process ends
WARNINGS_MAX = 100  # warnings one request sends back; more are dropped
PROBES_LOST_STATUS = 71  # the probe descriptor was closed or replaced: the run cannot be read


def _options(argv: list[str]) -> dict[str, str]:
    opts, i = {}, 0
    while i + 1 < len(argv) and argv[i] != "--":
        opts[argv[i].lstrip("-")] = argv[i + 1]
        i += 2
    return opts


PRODUCT_OPTS = _options(sys.argv[1:])
# The run's random seed (sandbox/_entropy.py), never the contract's: nothing this process can
# observe is derived from a seed the agent reads in the contract.
PRODUCT_SEED = int(PRODUCT_OPTS["seed"])
REQ_FD = os.dup(int(PRODUCT_OPTS["req-fd"]))
REP_FD = os.dup(int(PRODUCT_OPTS["rep-fd"]))
os.close(int(PRODUCT_OPTS["req-fd"]))
os.close(int(PRODUCT_OPTS["rep-fd"]))
PROBE_FD = os.dup(int(PRODUCT_OPTS["probe-fd"]))
os.close(int(PRODUCT_OPTS["probe-fd"]))
PROBE_PIPE = (os.fstat(PROBE_FD).st_dev, os.fstat(PROBE_FD).st_ino)
PRODUCT_LAYOUT = json.loads(PRODUCT_OPTS.get("layout", '{"roots": ["."], "packages": []}'))
PRODUCT_TREE = os.getcwd()
PRODUCT_CALL_TIMEOUT = float(PRODUCT_OPTS.get("call-timeout", "30"))
# What the agent's run_tests process shows (its argv, its machinery), not the server's.
sys.argv = ["-", "--report-fd", PRODUCT_OPTS["req-fd"], "--seed", str(PRODUCT_SEED),
            "--layout", PRODUCT_OPTS.get("layout", ""), "--mode", "agent", "--targets", "[]",
            "--"]  # fmt: skip
for _machinery in ("_pytest._code.code", "_pytest.mark.structures", "_pytest.python",
                   "_pytest.reports", "_pytest.runner", "pluggy", "pytest", "pdb", "cmd", "code",
                   "codeop", "bdb", "readline", "rlcompleter", "xml.dom", "unittest", "doctest",
                   "difflib", "pprint", "inspect", "shlex", "fnmatch"):  # fmt: skip
    with contextlib.suppress(ImportError):
        importlib.import_module(_machinery)

OBJECTS: dict[int, Any] = {}  # handle -> the object (kept alive: a handle is never reused)
HANDLES: dict[int, int] = {}  # id(object) -> handle: one object, one handle
NEXT_HANDLE = [0]  # the last handle given out (each property's process starts its own span)


def _handle(obj: Any) -> int:
    found = HANDLES.get(id(obj))
    if found is not None and OBJECTS[found] is obj:
        return found
    NEXT_HANDLE[0] += 1
    number = NEXT_HANDLE[0]
    OBJECTS[number] = obj
    HANDLES[id(obj)] = number
    return number


def _class_of_exception(cls: type) -> list[Any]:
    """How an exception class crosses: the same built-in, a standard-library class by name,
    the product's own as a proxy description, or ``bad`` (never re-raised as itself)."""
    if "_pw_oracle_class" in cls.__dict__:
        return ["oxc", cls.__dict__["_pw_oracle_class"]]  # the test's class, mirrored here
    module = str(getattr(cls, "__module__", "") or "")
    if not issubclass(cls, Exception) or any(
        str(getattr(c, "__module__", "")).split(".")[0] in MACHINERY_TOPS for c in cls.__mro__
    ):
        return ["bad", f"{module}.{cls.__qualname__}"]
    if module == "builtins":
        return ["bx", cls.__name__]
    if module.split(".")[0] in sys.stdlib_module_names:
        return ["sx", module, cls.__qualname__, _handle(cls)]
    bases = [_class_of_exception(b) for b in cls.__bases__ if issubclass(b, BaseException)]
    return ["xc", _handle(cls), module, cls.__qualname__, cls.__name__, bases]


BUILTIN_BASES = (dict, list, set, frozenset, tuple, str, bytes, bytearray, int, float)
"""The built-in classes whose subclasses' instances the oracle sees as instances of them."""


def _module_name(module: types.ModuleType) -> str:
    """The name ``module`` is imported under: its ``__name__``, unless the module rebound it
    (furl's ``globals().update(__version__.__dict__)`` copies ``__name__ =
    'furl.__version__'`` over the package's own; the oracle, importing by that name, asked
    for the package again without end): then its key in ``sys.modules``."""
    name = module.__name__
    if sys.modules.get(name) is module:
        return name
    return next((key for key, found in list(sys.modules.items()) if found is module), name)


def _kind(obj: Any) -> str:
    """What the oracle may treat the object as when it introspects it: a plain function,
    a bound method, a module (by name), or nothing in particular."""
    kind = type(obj)
    if kind is types.FunctionType:
        return "function"
    if kind is types.MethodType:
        return "method"
    if kind is types.ModuleType and type(getattr(obj, "__name__", None)) is str:
        return f"module:{_module_name(obj)}"
    if isinstance(obj, type):
        return "class"
    if isinstance(obj, datetime.tzinfo):
        return "tzinfo"  # the oracle's stand-in is a tzinfo (a datetime's zone there)
    if ANCHORED:
        anchored = next((c for c in kind.__mro__ if c in ANCHORED), None)
        if anchored is not None:
            return f"anchored:{_handle(anchored)}"
    seen = next((base for base in BUILTIN_BASES if isinstance(obj, base)), None)
    if seen is not None:
        # An instance of a subclass of a built-in (addict's Dict): one to isinstance(x,
        # dict) there too, as in one process.
        return f"builtin:{seen.__name__}"
    if getattr(kind, "__get__", None) is not None:
        # A descriptor (funcy's cached_property in a test's class): one there too, so
        # Python's attribute lookup calls it with the test's instance, as in one process.
        data = any(getattr(kind, n, None) is not None for n in ("__set__", "__delete__"))
        return "data-descriptor" if data else "descriptor"
    return ""


def _out(obj: Any) -> Any:
    """The tagged form of an object that does not cross by value: one of the oracle's goes
    back as its own handle, a built-in class by its name, a ``TypeVar`` by value (with its
    handle, so it comes back as itself), any other stays here and crosses as a handle of
    this side's."""
    if type(obj) in ORACLE_CLASSES:
        return ["oh", object.__getattribute__(obj, "_pw_oid")]
    if isinstance(obj, Exception) and type(vars(obj).get("_pw_oracle")) is int:
        return ["oh", vars(obj)["_pw_oracle"]]  # one of the test's, mirrored here
    mirrored = getattr(type(obj), "_pw_oracle_tuple", None)
    if type(mirrored) is int and isinstance(obj, tuple):
        # One of the test's namedtuples, mirrored here: the oracle's own again, or (one
        # product code made, row._replace(...)) a new one of the test's class there.
        oracle = ORACLE_REBUILT_IDS.get(id(obj))
        if oracle is not None and ORACLE_PROXIES.get(oracle) is obj:
            return ["oh", oracle]
        return ["onv", mirrored, encode(tuple(obj), _out)]
    if isinstance(obj, type) and type(obj.__dict__.get("_pw_oracle_tuple")) is int:
        return ["oh", obj.__dict__["_pw_oracle_tuple"]]  # the test's namedtuple class
    if isinstance(obj, type) and type(obj.__dict__.get("_pw_class")) is int:
        return ["oh", obj.__dict__["_pw_class"]]  # type(x) of one of the test's: its class
    if isinstance(obj, type) and issubclass(obj, BaseException):
        described = _class_of_exception(obj)
        if described[0] != "bad":
            return described  # one that does not cross as itself is a plain handle
    if isinstance(obj, Exception) and _class_of_exception(type(obj))[0] != "bad":
        # An exception as a value (voluptuous' MultipleInvalid.errors): an instance of its
        # class there, as a raised one is (``isinstance(e, EmailInvalid)``), this one again
        # when sent back.
        raised = _raised(obj, with_traceback=False)["raise"]
        if "cls" in raised:
            return ["xv", raised]
    if type(obj) in REBUILT_TYPES:
        oracle = ORACLE_REBUILT_IDS.get(id(obj))
        if oracle is not None and ORACLE_PROXIES.get(oracle) is obj:
            return ["oh", oracle]
        parts = rebuilt_parts(obj, _out)
        if parts is not None:
            return ["rb", _handle(obj), *parts]
    name = getattr(obj, "__name__", None) if isinstance(obj, type) else None
    if type(name) is str and getattr(builtins, name, None) is obj:
        return ["bt", name]  # int, str, list: the oracle's own (a class, never code)
    kind = _kind(obj)
    handle = ["h", _handle(obj), type(obj).__qualname__, callable(obj), kind]
    if kind in ("", "descriptor", "data-descriptor"):
        handle.append(_handle(type(obj)))  # its class, for ``x.__class__`` there
        plain = _plain_class(type(obj)) if kind == "" else None
        if plain is not None:
            handle.append(plain)  # an instance of a plain class: of that class there too
    elif kind == "class":
        plain = _plain_class(obj)
        if plain is not None:
            handle.append(plain)  # a plain class: a real class there (``type(x) is C``)
    member = standard_member(obj)
    if member is not None:
        return ["se", *member, handle]  # re.IGNORECASE: the oracle's own member
    named = standard_class_name(obj) if isinstance(obj, type) else None
    if named is not None:
        return ["sc", *named, handle]  # datetime: the oracle's own when it has it loaded
    return handle


def _plain_class(cls: type) -> list[Any] | None:
    """``[module, qualname, named]`` of a class made by ``type`` (or ``ABCMeta``: h11's
    events are ABCs) in no module of the
    standard library's or the test machinery's, and not an exception (those cross as
    classes of their own): the oracle makes a real class for it, the type of its instances
    there (h11's ``type(event) is Response``). ``named``: the class is the one its module
    holds under that name, so the oracle may take it for the same class in every
    property's process; else only for this handle. ``abstract``: made by ``ABCMeta`` (the
    oracle's class for it is an ``ABCMeta`` too, so a test's class may derive from it and
    from an ABC of the test's: furl's ``itemomdict1D(omdict1D, itemcontainer)``)."""
    if type(cls) not in (type, abc.ABCMeta) or issubclass(cls, BaseException):
        return None
    module = cls.__dict__.get("__module__")
    if type(module) is not str or module == "builtins":
        return None
    top = module.split(".")[0]
    if top in sys.stdlib_module_names or top in MACHINERY_TOPS or top == "patchwarden":
        return None
    qualname = cls.__qualname__
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        space: Any = getattr(found, "__dict__", None)  # no attribute hook of the product's
        found = space.get(part) if type(space) in (dict, types.MappingProxyType) else None
    return [module[:200], qualname[:200], found is cls, type(cls) is abc.ABCMeta]


def _in(tagged: list[Any]) -> Any:
    """A handle this process gave out, a built-in by name, or a built-in exception."""
    tag = tagged[0]
    if tag == "h" and len(tagged) >= 2 and type(tagged[1]) is int and tagged[1] in OBJECTS:
        return OBJECTS[tagged[1]]
    if tag == "se" and len(tagged) == 4 and all(type(t) is str for t in tagged[1:]):
        # A member of a standard-library enum the test handed over: this process's own.
        _standard_class(tagged[1], tagged[2])  # imported here if it was not yet
        found = standard_member_of(tagged[1], tagged[2], tagged[3])
        if found is None:
            raise WireError(f"no member {tagged[2][:80]}.{tagged[3][:80]} here")
        return found
    if tag == "mp" and len(tagged) == 2:
        found = decode(tagged[1], _in)
        if type(found) is not dict:
            raise WireError("a mapping proxy of no dict")
        return types.MappingProxyType(found)
    if tag == "ont" and len(tagged) == 6 and type(tagged[1]) is int and type(tagged[5]) is int:
        return _namedtuple_mirror(tagged)
    if tag == "oh" and 3 <= len(tagged) <= 5 and type(tagged[1]) is int and type(tagged[2]) is list:
        shape = tagged[3] if len(tagged) >= 4 else None
        return _oracle_object(tagged[1], tagged[2], shape, tagged[4] if len(tagged) == 5 else None)
    if tag == "ocl" and len(tagged) == 4 and type(tagged[1]) is int:
        return _class_stand_in(tagged[1], tagged[2], tagged[3])
    if tag == "rbo" and len(tagged) >= 3 and type(tagged[1]) is int:
        # One of the oracle's TypeVars or generic aliases: a real one here (the product's
        # generics take no proxy), one per oracle handle, going back as the oracle's own.
        found = ORACLE_PROXIES.get(tagged[1])
        if found is None:
            found = rebuild(tagged[2], tagged[3:], _in)
            ORACLE_PROXIES[tagged[1]] = found
            ORACLE_REBUILT_IDS[id(found)] = tagged[1]
        return found
    if tag == "bt" and len(tagged) == 2 and type(tagged[1]) is str:
        found = getattr(builtins, tagged[1], _in)
        if found is not _in:
            return found
    if tag == "oxc" and len(tagged) == 5 and type(tagged[1]) is int:
        return _exception_mirror(tagged)
    if tag == "sc" and len(tagged) == 3 and type(tagged[1]) is str and type(tagged[2]) is str:
        return _standard_class(tagged[1], tagged[2])
    if tag == "sm" and len(tagged) == 2 and type(tagged[1]) is str:
        # A standard-library module the test handed over (os.path): this process's own.
        if tagged[1].split(".")[0] not in sys.stdlib_module_names:
            raise WireError("a module by name that is not the standard library's")
        try:
            return sys.modules.get(tagged[1]) or importlib.import_module(tagged[1])
        except ImportError:
            raise WireError(f"no module {tagged[1][:80]} here") from None
    if tag == "sf" and len(tagged) == 3 and type(tagged[1]) is str and type(tagged[2]) is str:
        # A function of a standard-library module the test handed over: this process's own.
        module = _in(["sm", tagged[1]])
        found = getattr(module, tagged[2], None)
        if type(found) not in (types.BuiltinFunctionType, types.FunctionType):
            raise WireError(f"no function {tagged[1][:80]}.{tagged[2][:80]} here")
        return found
    if tag == "oxe" and len(tagged) == 4 and type(tagged[1]) is list and type(tagged[3]) is int:
        found = ORACLE_PROXIES.get(tagged[3])
        if found is None:
            cls, args = _in(tagged[1]), decode(tagged[2], _in)
            exception_class = isinstance(cls, type) and issubclass(cls, Exception)
            if not exception_class or type(args) is not tuple:
                raise WireError("a mirrored exception that is not one")
            found = cls.__new__(cls, *args)
            found.args = args
            found.__dict__["_pw_oracle"] = tagged[3]
            ORACLE_PROXIES[tagged[3]] = found
        return found
    if tag == "bxi" and len(tagged) == 3 and type(tagged[1]) is str:
        cls = getattr(builtins, tagged[1], None)
        args = decode(tagged[2], _in)
        if isinstance(cls, type) and issubclass(cls, Exception) and type(args) is tuple:
            return cls(*args)
    raise WireError(f"not a handle this process gave out: {str(tagged[0])[:40]}")


# -- the oracle's objects: callbacks ---------------------------------------------------------

ORACLE_OPERATIONS = (
    "call", "iter", "next", "len", "getitem", "setitem", "delitem", "contains", "fspath",
    "enter", "exit", "get", "set", "delete", "tzinfo", "copy", "deepcopy", *ARITHMETIC,
    *(f"abc.{name}" for name in sorted(CONTAINER_ABCS)),
)  # fmt: skip
"""What an oracle object may offer beyond ``repr``, ``str``, ``bool``, ``hash``, the
comparisons and reads of its non-dunder attributes (the oracle says which, by its type)."""
ORACLE_CLASSES: dict[type, frozenset[str]] = {}
"""The proxy classes, one per set of operations (``type(obj) in ORACLE_CLASSES``)."""
ORACLE_PROXIES: dict[int, Any] = {}  # the oracle's handle -> its proxy: one object, one proxy
ORACLE_REBUILT_IDS: dict[int, int] = {}
"""id(a TypeVar or an alias built here for one of the oracle's) -> the oracle's handle."""


class OracleAbort(BaseException):
    """What an oracle callback raised that does not cross (a skip, a stop, a ``BaseException``
    only, an error of the test machinery): the oracle raises the original once this call
    returns, whatever product code does with this one."""


def _callback_method(op: str) -> Any:
    def method(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        return _callback(op, self, list(args), kwargs)

    method.__name__ = f"__{op}__"
    return method


def _oracle_getattr(self: Any, name: str) -> Any:
    shape = object.__getattribute__(self, "_pw_shape")
    if shape is not None and name in ("__name__", "__qualname__") and name.strip("_") in shape:
        return shape[name.strip("_")]  # a class's namespace cannot hold these as properties
    return _callback("getattr", self, [name], {})


def _oracle_setattr(self: Any, name: str, value: Any) -> None:
    _callback("setattr", self, [name, value], {})


def _oracle_described(name: str, default: Any) -> property:
    """``__doc__`` and ``__module__`` of an oracle object, which its class here would
    otherwise answer (``functools.wraps`` copies them): the oracle's answer, or
    ``default`` when the oracle says the object has none to give."""

    def read(self: Any) -> Any:
        try:
            return _callback("getattr", self, [name], {})
        except AttributeError:
            return default

    return property(read)


@seal_class
class _OracleDefault:
    """The default of a parameter of one of the test's functions, as ``inspect`` shows it
    here: the value itself stays in the oracle (a call that leaves it out gets it there)."""

    def __repr__(self) -> str:
        return "<the oracle's default>"


ORACLE_DEFAULT = _OracleDefault()
_STUB_CODES: dict[str, types.CodeType] = {}
_STUB_KINDS = {"def": ("def", "pass"), "gen": ("def", "yield"), "async": ("async def", "pass"),
               "agen": ("async def", "yield")}  # fmt: skip


def _stub_code(shape: Any) -> types.CodeType | None:
    """A code object with the parameters and the kind (generator, coroutine) of one of the
    test's functions, compiled here from its names: what ``inspect`` reads of a function
    (``co_varnames``, the counts, ``co_flags``). It runs nothing; a call of the function is
    the oracle's. None: a shape that is not one (the oracle's data, checked)."""
    key = json.dumps(shape, sort_keys=True)
    if key in _STUB_CODES:
        return _STUB_CODES[key]
    try:
        pos, kwonly = list(shape["pos"]), list(shape["kwonly"])
        posonly, varargs, varkw = int(shape["posonly"]), shape["varargs"], shape["varkw"]
        head, body = _STUB_KINDS[shape["kind"]]
        names = [*pos, *kwonly, *(n for n in (varargs, varkw) if n is not None)]
        if not all(type(n) is str and n.isidentifier() and not keyword.iskeyword(n) for n in names):
            return None
        if len(set(names)) != len(names) or not 0 <= posonly <= len(pos):
            return None
        defaults, kwdefaults = shape["defaults"], shape["kwdefaults"]
        if type(defaults) is not int or not 0 <= defaults <= len(pos):
            return None
        if type(kwdefaults) is not list or not set(kwdefaults) <= set(kwonly):
            return None
        if type(shape["name"]) is not str or type(shape["qualname"]) is not str:
            return None
        parts = [*pos[:posonly], *(["/"] if posonly else []), *pos[posonly:]]
        parts += [f"*{varargs}"] if varargs else (["*"] if kwonly else [])
        parts += [*kwonly, *([f"**{varkw}"] if varkw else [])]
        name = shape["name"] if str(shape["name"]).isidentifier() else "function"
        if keyword.iskeyword(name):
            name = "function"
        space: dict[str, Any] = {}
        exec(
            compile(f"{head} {name}({', '.join(parts)}):\n    {body}\n", "<oracle>", "exec"), space
        )
        code: types.CodeType = space[name].__code__
    except (KeyError, TypeError, ValueError, SyntaxError):
        return None
    if len(_STUB_CODES) < 4096:
        _STUB_CODES[key] = code
    return code


def _shaped(name: str) -> property:
    """What ``inspect`` reads of a function, answered here for one of the test's functions
    from its shape (``_stub_code``); for any other oracle object, asked of the oracle as
    every other attribute is."""

    def read(self: Any) -> Any:
        shape = object.__getattribute__(self, "_pw_shape")
        if shape is None or shape.get("code") is None:
            if name == "__class__":
                return shape.get("class", type(self)) if shape is not None else type(self)
            return _callback("getattr", self, [name], {})
        if name == "__code__":
            return shape["code"]
        if name == "__class__":
            return types.FunctionType  # isinstance(f, FunctionType): inspect.isfunction
        if name == "__defaults__":
            values = shape.get("values")
            if type(values) is not list or len(values) != shape["defaults"]:
                values = [None] * shape["defaults"]
            return tuple(_default_value(v) for v in values) or None
        if name == "__kwdefaults__":
            given = shape.get("kwvalues")
            given = given if type(given) is dict else {}
            return {k: _default_value(given.get(k)) for k in shape["kwdefaults"]} or None
        return {}  # __globals__: the function's are the oracle's; inspect finds no name here

    return property(read)


def _default_value(tagged: Any) -> Any:
    """A default of one of the test's functions: its value when it is plain data, else the
    marker (the value stays in the oracle; a call that leaves it out gets it there)."""
    if type(tagged) is list and len(tagged) == 2 and tagged[0] == "v":
        value = decode(tagged[1], _in)
        if is_plain(value):
            return value
    return ORACLE_DEFAULT


def _zone_method(name: str) -> Any:
    def method(self: Any, dt: Any) -> Any:
        return _callback("zone", self, [name, dt], {})

    method.__name__ = name
    return method


def _no_new(cls: type, *args: Any, **kwargs: Any) -> Any:
    """``type(obj)()`` of one of the oracle's objects: its class is the oracle's, not here.
    Said plainly (a made instance would hold no handle and fail later, unreadably)."""
    raise TypeError(
        "cannot make a new object of the class of one of the test's objects here: "
        "the class stays in the oracle (isolated oracle)"
    )


def _oracle_class(operations: frozenset[str], hashable: bool) -> type:
    key = operations | ({"hash"} if hashable else set())
    for cls, ops in ORACLE_CLASSES.items():
        if ops == key:
            return cls
    namespace: dict[str, Any] = {
        "__slots__": ("_pw_oid", "_pw_shape"),
        "__new__": _no_new,
        "__getattr__": _oracle_getattr,
        "__setattr__": _oracle_setattr,
        "__doc__": _oracle_described("__doc__", None),
        "__module__": _oracle_described("__module__", None),
        **{
            name: _shaped(name)
            for name in (
                "__code__",
                "__class__",
                "__defaults__",
                "__kwdefaults__",
                "__globals__",
            )
        },
    }
    for op in ("repr", "str", "bool", "eq", "ne", "lt", "le", "gt", "ge", *sorted(operations)):
        if op not in ("tzinfo", "deepcopy") and not op.startswith("abc."):
            namespace[f"__{op}__"] = _callback_method(op)
    if "deepcopy" in operations:
        # copy.deepcopy here of a product object holding one of the test's (addict's
        # deepcopy of a Dict): the test's object copied there, as in one process (the memo
        # of this copy stays here: the one object is copied once).
        namespace["__deepcopy__"] = lambda self, memo: _callback("deepcopy", self, [], {})
    namespace["__hash__"] = _callback_method("hash") if hashable else None
    bases: tuple[type, ...] = ()
    if "tzinfo" in operations:
        # One of the oracle's zones (pytz, dateutil): a tzinfo here, so a datetime holds it;
        # what the datetime asks of it (utcoffset, dst, tzname, fromutc) the oracle answers.
        bases = (datetime.tzinfo,)
        for name in sorted(ZONE_METHODS):
            namespace[name] = _zone_method(name)
    cls = type("OracleObject", bases, sealed_namespace(namespace))
    # Its slots are this process's bookkeeping, not the object's: product code that lists
    # an object's __slots__ (voluptuous' Object validator) asks the oracle's object instead.
    delattr(cls, "__slots__")
    for op in sorted(operations):
        if op.startswith("abc."):  # a test's MutableMapping is one here too (dpath's walk)
            getattr(collections.abc, op.removeprefix("abc.")).register(cls)
    ORACLE_CLASSES[cls] = key
    return cls


def _oracle_object(number: int, operations: list[Any], shape: Any = None, names: Any = None) -> Any:
    found = ORACLE_PROXIES.get(number)
    if found is not None:
        return found
    ops = frozenset(str(op) for op in operations if op in ORACLE_OPERATIONS)
    cls = _oracle_class(ops, "hash" in operations)
    described = shape.get("cls") if type(shape) is dict else None
    if described is not None:
        cls = _instance_class(cls, described, shape.get("dataclass"))
    if names is not None:
        cls = _named_class(cls, names)
    proxy: Any = (datetime.tzinfo if "tzinfo" in ops else object).__new__(cls)
    object.__setattr__(proxy, "_pw_oid", number)
    code = _stub_code(shape) if type(shape) is dict and "call" in ops else None
    generator = type(shape) is dict and shape.get("seen_as") == "generator"
    if generator:
        # One of the test's generators (xmltodict's parse of a generator of chunks): one
        # to inspect.isgenerator here; iterating it asks the oracle.
        object.__setattr__(proxy, "_pw_shape", {"code": None, "class": types.GeneratorType})
    else:
        object.__setattr__(proxy, "_pw_shape", {**shape, "code": code} if code else None)
    ORACLE_PROXIES[number] = proxy
    return proxy


def _asked_doc(base: type) -> Any:
    """The ``__doc__`` property of the proxy classes (the oracle's answer), from ``base``'s
    classes."""
    found = (vars(k)["__doc__"] for k in base.__mro__ if type(vars(k).get("__doc__")) is property)
    return next(found)


@seal_class
class _ModuleName(str):
    """The ``__module__`` of a proxy class named as the oracle object's class: the module's
    name to ``type(x).__module__`` (and the class's repr), the object's own ``__module__``,
    asked of the oracle, to ``x.__module__`` (a function's, which ``functools.wraps``
    copies, is not its class's)."""

    __slots__ = ()

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return str(self)
        try:
            return _callback("getattr", obj, ["__module__"], {})
        except AttributeError:
            return None


def _named_class(base: type, names: Any) -> type:
    """``base`` (a proxy class) under the names of the oracle object's class
    (``[__name__, __qualname__, __module__]``), one class per proxy class and names."""
    valid = type(names) is list and len(names) == 3
    if not valid or not all(type(n) is str and 0 < len(n) <= 200 for n in names):
        raise WireError("an oracle object's class names that are not names")
    name, qualname, module = names
    key = ORACLE_CLASSES[base] | {f"named:{module}:{qualname}:{name}"}
    for cls, ops in ORACLE_CLASSES.items():
        if ops == key:
            return cls
    namespace: dict[str, Any] = {
        "__slots__": (), "__qualname__": qualname, "__module__": _ModuleName(module),
        "__doc__": _asked_doc(base),  # a class statement's __doc__ (None) would hide it
    }  # fmt: skip
    number = next((vars(k)["_pw_class"] for k in base.__mro__ if "_pw_class" in vars(k)), None)
    if type(number) is int:
        namespace["_pw_class"] = number  # type(x) goes back as the test's class
    made = type(base)(name, (base,), namespace)
    delattr(made, "__slots__")
    ORACLE_CLASSES[made] = key
    return made


@seal_class
class _OracleClass(type):
    """The metaclass of the stand-in of one of the test's classes handed to product code
    (glom's ``register(BetterList)``, voluptuous' ``Coerce(Choice)``, funcy's
    ``monkey(A)``): a class here, one per oracle class, that goes back as the test's own.
    Calling it makes an instance in the oracle (its ``__init__`` is the test's code); its
    attributes are read and set there; an instance of the test's class is an instance of it
    here (its proxy class derives from it), a product object never is."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return _callback("call", _ClassRef(_class_number(cls)), list(args), kwargs)

    def __getattr__(cls, name: str) -> Any:
        if (name[:2] == "__" and name[-2:] == "__") or name[:3] == "_pw":
            raise AttributeError(name)  # a probe of the protocol (or ours), as a class would
        return _callback("getattr", _ClassRef(_class_number(cls)), [name], {})

    def __setattr__(cls, name: str, value: Any) -> None:
        _callback("setattr", _ClassRef(_class_number(cls)), [name, value], {})

    def __repr__(cls) -> str:
        return f"<class '{cls.__module__}.{cls.__qualname__}'>"


def _class_number(cls: type) -> int:
    """The oracle's handle of the test's class ``cls`` stands for (or derives from)."""
    for klass in cls.__mro__:
        number = klass.__dict__.get("_pw_class")
        if type(number) is int:
            return number
    raise AttributeError("_pw_class")


def _class_stand_in(number: int, qualname: Any, module: Any) -> type:
    found = ORACLE_PROXIES.get(number)
    if isinstance(found, _OracleClass):
        return found
    names = type(qualname) is str and type(module) is str
    if not names or not qualname or len(qualname) > 200 or len(module) > 200:
        raise WireError("a class of the test's without its names")
    name = qualname.rpartition(".")[2]
    made = _OracleClass.__new__(
        _OracleClass,
        name if name.isidentifier() else "TestClass",
        (),
        {"_pw_class": number, "__module__": module, "__qualname__": qualname},
    )
    ORACLE_PROXIES[number] = made
    return made


@seal_class
class _ClassRef:
    """The oracle's handle of one of the test's classes, as a callback's target."""

    __slots__ = ("_pw_oid",)

    def __init__(self, number: int) -> None:
        self._pw_oid = number


def _make_in_oracle(cls: type, /, *args: Any, **kwargs: Any) -> Any:
    """``type(obj)(...)`` of one of the test's objects: one more of the test's class, made
    there (its ``__init__`` is the test's code), a proxy here."""
    return _callback("call", _ClassRef(_class_number(cls)), list(args), kwargs)


def _instance_class(base: type, described: Any, fields: Any) -> type:
    """The proxy class of the instances of one of the test's classes (``[class handle,
    qualname]``): the operations' proxy class, with a ``__new__`` that makes another
    instance in the oracle; for a dataclass, also the ``__dataclass_fields__`` of a
    dataclass made here with the same field names and annotations (as text), so
    ``dataclasses.fields`` and ``is_dataclass`` answer as in one process. Every value is
    still asked of the oracle."""
    if type(described) is not list or len(described) != 2 or type(described[0]) is not int:
        raise WireError("a class description that is not one")
    key = ORACLE_CLASSES[base] | {f"class:{described[0]}"}
    for cls, ops in ORACLE_CLASSES.items():
        if ops == key:
            return cls
    namespace: dict[str, Any] = {
        "__slots__": (), "__new__": _make_in_oracle, "_pw_class": described[0],
    }  # fmt: skip
    if fields is not None:
        name = str(described[1]).rpartition(".")[2]
        if type(fields) is not list or len(fields) > 1024:
            raise WireError("a dataclass description that is not one")
        try:
            pairs = [(str(n), str(t)) for n, t in fields]
            made: Any = dataclasses.make_dataclass(name if name.isidentifier() else "Data", pairs)
        except (TypeError, ValueError):
            raise WireError("a dataclass description with bad names") from None
        namespace["__dataclass_fields__"] = made.__dataclass_fields__
        namespace["__dataclass_params__"] = made.__dataclass_params__
        namespace["__match_args__"] = made.__match_args__
    doc = {"__doc__": _asked_doc(base)}  # the instance's docstring, asked of the oracle
    stand_in = ORACLE_PROXIES.get(described[0])
    if isinstance(stand_in, _OracleClass):
        # The test's class was handed over too: its instances are instances of it here.
        namespace["__module__"] = stand_in.__module__
        cls = _OracleClass("OracleObject", (base, stand_in), sealed_namespace(namespace) | doc)
    else:
        cls = type("OracleObject", (base,), sealed_namespace(namespace) | doc)
    delattr(cls, "__slots__")
    ORACLE_CLASSES[cls] = key
    return cls


def _namedtuple_mirror(tagged: list[Any]) -> Any:
    """``["ont", class handle, name, fields, values, handle]``: one of the test's
    namedtuples as a namedtuple here (tabulate's ``isinstance(row, tuple)`` and
    ``row._fields``, voluptuous' tuple schemas), of a class made once per oracle class with
    the same name and fields; its methods are namedtuple's own (the oracle sends only plain
    namedtuples). The same oracle object is the same one here, and goes back as itself."""
    found = ORACLE_PROXIES.get(tagged[5])
    if found is not None:
        return found
    cls: Any = ORACLE_PROXIES.get(tagged[1])
    if cls is None:
        name, fields = tagged[2], tagged[3]
        valid = type(name) is str and type(fields) is list and 0 < len(fields) <= 255
        if not valid or not all(type(f) is str for f in fields):
            raise WireError("a mirrored namedtuple without a name or fields")
        try:
            cls = collections.namedtuple(name, fields)  # type: ignore[misc,no-redef]
        except ValueError:
            raise WireError("a mirrored namedtuple with bad names") from None
        cls.__module__ = "tests"
        type.__setattr__(cls, "_pw_oracle_tuple", tagged[1])
        ORACLE_PROXIES[tagged[1]] = cls
    values = decode(tagged[4], _in)
    if type(values) is not tuple or len(values) != len(cls._fields):
        raise WireError("a mirrored namedtuple whose values do not fit its fields")
    found = cls(*values)
    ORACLE_PROXIES[tagged[5]] = found
    ORACLE_REBUILT_IDS[id(found)] = tagged[5]
    return found


def _standard_class(module: str, qualname: str) -> type:
    """A class of the standard library the oracle named (``datetime.datetime``): this
    interpreter's own, the module imported here if it was not yet."""
    if module.split(".")[0] not in sys.stdlib_module_names:
        raise WireError("a class by name that is not the standard library's")
    try:
        found: Any = sys.modules.get(module) or importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        raise WireError(f"no class {module}.{qualname[:80]} here") from None
    if not isinstance(found, type):
        raise WireError("a class by name that is not a class")
    return found


def _exception_mirror(tagged: list[Any]) -> type:
    """One of the test's exception classes, here: a class of that name on the same bases,
    made once per oracle handle (sandbox/_inside/_proxy.py ``_exception_mirror``)."""
    found = ORACLE_PROXIES.get(tagged[1])
    if found is not None:
        return found  # type: ignore[no-any-return]
    name, qualname, listed = tagged[2], tagged[3], tagged[4]
    if type(name) is not str or not name.isidentifier() or type(qualname) is not str:
        raise WireError("a mirrored exception class without a name")
    if type(listed) is not list or not listed or len(listed) > 8:
        raise WireError("a mirrored exception class without bases")
    found_bases = [_in(b) if type(b) is list and b else None for b in listed]
    bases: tuple[type, ...] = tuple(
        b for b in found_bases if isinstance(b, type) and issubclass(b, Exception)
    )
    if len(bases) != len(found_bases):
        raise WireError("a mirrored exception class on a base that is no exception class")
    namespace = {"__module__": "tests", "__qualname__": qualname, "_pw_oracle_class": tagged[1]}
    try:
        made = type(name, bases, namespace)
    except TypeError:  # bases whose layouts conflict: the first one keeps the name
        made = type(name, bases[:1], namespace)
    ORACLE_PROXIES[tagged[1]] = made
    return made


def _oracle_exception(raised: Any) -> BaseException:
    """The exception to raise here for one an oracle callback raised: a product exception
    that went through the callback is itself again; a built-in type is the same built-in
    (one of the oracle's own classes arrives as its nearest built-in base) and keeps the
    oracle's handle, so raised on to the oracle it is the oracle's object again."""
    if type(raised) is not dict:
        return WireError("an unreadable exception from the oracle")
    return _chained(_oracle_exception_alone(raised), raised)


def _chained(exc: BaseException, raised: dict[str, Any]) -> BaseException:
    """The exception with the chain the oracle's had (``raise TryAgain from cause``)."""
    for key, name in (("cause", "__cause__"), ("context", "__context__")):
        if type(raised.get(key)) is dict:
            linked = _oracle_exception(raised[key])
            if isinstance(linked, Exception) and linked is not exc:
                setattr(exc, name, linked)
    if raised.get("suppress") is True:
        exc.__suppress_context__ = True
    return exc


def _oracle_exception_alone(raised: dict[str, Any]) -> BaseException:
    number = raised.get("h")
    own = OBJECTS.get(number) if type(number) is int else None
    if isinstance(own, BaseException):
        return own
    cls = getattr(builtins, str(raised.get("bx")), None)
    mirror = raised.get("mirror")
    named = raised.get("named")
    library = library_exception(*named) if type(named) is list and len(named) == 2 else None
    if library is not None and not any(c in ORACLE_CLASSES for c in library.__mro__):
        cls = library  # pytz's own NonExistentTimeError here: product code's `except` names it
    elif (
        type(mirror) is list and len(mirror) == 5 and mirror[0] == "oxc" and type(mirror[1]) is int
    ):
        cls = _exception_mirror(mirror)
    elif type(raised.get("product")) is int:
        # One of this side's exception classes, which the test raised (its handle here).
        found = OBJECTS.get(raised["product"])
        if isinstance(found, type) and issubclass(found, Exception):
            cls = found
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        return OracleAbort(str(raised.get("abort", "the oracle's callback ended the call")))
    args: Any = (str(raised.get("str", "")),)
    if raised.get("args") is not None:
        args = decode(raised["args"], _in)
    if type(args) is not tuple:
        args = (str(raised.get("str", "")),)
    try:
        exc = cls(*args)
    except Exception:
        try:
            exc = cls(str(raised.get("str", "")))
        except Exception:  # a library's class whose __init__ wants more (JSONDecodeError)
            exc = cls.__new__(cls)
            exc.args = args
    if raised.get("extras") is not None:
        with contextlib.suppress(WireError):
            set_exception_extras(exc, decode(raised["extras"], _in))
    product = raised.get("product")
    if type(raised.get("oracle")) is int and not (
        type(product) is int and OBJECTS.get(product) is cls
    ):
        exc.__dict__["_pw_oracle"] = raised["oracle"]
    # One of this side's classes is this side's exception from now on: what product code
    # adds to it (voluptuous prepends the path to its message) goes back with it.
    return exc


def _callback(op: str, target: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """One operation on an oracle object: ask the oracle and serve what it asks meanwhile."""
    memo = Memo()  # the containers handed over: what the test's code changes comes back
    message: dict[str, Any] = {
        "cb": op,
        "on": object.__getattribute__(target, "_pw_oid"),
        "args": encode(args, _out, memo=memo),
    }
    if kwargs:
        message["kwargs"] = encode(kwargs, _out, memo=memo)
    sync = LIVE.changes(_out)  # what product code changed in held containers, before the
    if sync:  # test's code runs (it may read them)
        message["sync"] = sync
    _write(dumps(message))
    while True:
        try:
            reply = loads(_line(PRODUCT_CALL_TIMEOUT) or b"")
        except WireError:
            os._exit(CALLBACK_EXIT_STATUS)  # not the oracle's answer: nothing sane follows
        if "end" in reply:
            os._exit(CALLBACK_EXIT_STATUS)  # the test is past its deadline: nothing follows
        if "op" not in reply:
            break
        _write(_answer(reply))  # the oracle, inside the callback, calls the product
    try:
        LIVE.apply(reply.get("sync"), _in)  # what the test's code changed meanwhile
    except WireError:
        os._exit(CALLBACK_EXIT_STATUS)
    if "ok" in reply:
        value = decode(reply["ok"], _in)
        live = reply.get("live")
        if type(live) is int and live < 0 and type(value) in MUTABLE:
            value = LIVE.keep(live, value)  # a test's container, kept in step with it
        try:
            _written_here(reply.get("back"), memo)
        except WireError:
            os._exit(CALLBACK_EXIT_STATUS)
        return value
    raise _oracle_exception(reply.get("raise"))


def _written_here(back: Any, memo: Memo) -> None:
    """The test's code changed, in place, containers a callback was handed (``creator(d,
    ...)`` filling the product's dict): the same change here, on the product's own objects."""
    for target, contents in written_back(back, memo, _in):
        replace_contents(target, contents)


def _own_dunder(obj: Any, name: Any) -> Any:
    """A dunder name the oracle's proxy does not have: one set on the object itself (in its
    ``__dict__``), or one its class's ``__getattr__`` answers (glom's ``T.__star__``) when
    the class has no attribute of that name; any other is ``AttributeError``, as before."""
    if type(name) is not str:
        raise AttributeError(name)
    own = getattr(obj, "__dict__", None)
    if type(own) is dict and name in own:
        return own[name]
    hook = getattr(type(obj), "__getattr__", None)
    if hook is not None and not isinstance(obj, type) and not hasattr(type(obj), name):
        return hook(obj, name)
    raise AttributeError(name)


def _globals_of(function: Any) -> str | None:
    """The name of the module whose namespace is a function's ``__globals__``, or None."""
    if type(function) is not types.FunctionType:
        raise TypeError("__globals__ of what is not a function")
    space = function.__globals__
    name = space.get("__name__")
    module = sys.modules.get(name) if type(name) is str else None
    return name if module is not None and getattr(module, "__dict__", None) is space else None


def _exit_context(obj: Any, *exc: Any) -> Any:
    return type(obj).__exit__(obj, *exc)


class _StandIn(Exception):
    pass


def _stand_in_traceback(entries: Any) -> types.TracebackType | None:
    """A traceback here with the file, line and function of each entry of the oracle's
    (its frames are the test's and stay there): made by running stub functions compiled
    at those places, so ``traceback.format_exception`` here prints what it would print of
    the real one in one process (funcy's ``log_errors`` as a context manager)."""
    if type(entries) is not list or not entries:
        return None
    stubs: list[tuple[dict[str, Any], Any]] = []
    for entry in entries[-32:]:
        if type(entry) is not list or len(entry) != 3:
            return None
        filename, lineno, name = entry
        if type(filename) is not str or type(lineno) is not int or type(name) is not str:
            return None
        ident = name if name.isidentifier() and not keyword.iskeyword(name) else "test"
        space: dict[str, Any] = {"_pw_next": None}
        source = "\n" * (min(max(lineno, 1), 1_000_000) - 1)
        source += f"def {ident}(): _pw_next() if _pw_next else _pw_raise()\n"
        exec(compile(source, filename[:500], "exec"), space)
        stubs.append((space, space[ident]))
    for i, (space, _) in enumerate(stubs):
        space["_pw_next"] = stubs[i + 1][1] if i + 1 < len(stubs) else None
        space["_pw_raise"] = opaque(_raise_stand_in)
    try:
        stubs[0][1]()
    except _StandIn as e:
        tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
    else:
        return None
    last = tb
    while last is not None and last.tb_next is not None and last.tb_next.tb_next is not None:
        last = last.tb_next
    if last is not None and last.tb_next is not None:
        last.tb_next = None  # _raise_stand_in's own frame
    return tb


def _raise_stand_in() -> None:
    raise _StandIn


def _exit_traced(obj: Any, kind: Any, value: Any, entries: Any) -> Any:
    return type(obj).__exit__(obj, kind, value, _stand_in_traceback(entries))


def _method(op: str) -> Any:
    """A comparison the oracle asks of a product object: that object's own method
    (``type(a).__eq__(a, b)``), whose ``NotImplemented`` goes back to the oracle, which
    goes on with Python's protocol there (the reflected method, then identity). The
    operator itself would reflect here onto the oracle's object, whose proxy asks the
    oracle, which asks here again: a comparison that neither side answers bounced between
    the processes until the recursion limit (``bytes_like == handle``)."""
    name = f"__{op}__"
    return lambda a, b: getattr(type(a), name)(a, b)


def _code_facts(function: Any) -> dict[str, Any]:
    """What the oracle's stand-in of a function's ``__code__`` is made of (never bytecode)."""
    code = getattr(function, "__code__", None)
    if type(code) is not types.CodeType:
        raise AttributeError("__code__")
    return {
        "filename": code.co_filename, "firstlineno": code.co_firstlineno,
        "name": code.co_name, "qualname": code.co_qualname, "argcount": code.co_argcount,
        "posonly": code.co_posonlyargcount, "kwonly": code.co_kwonlyargcount,
        "varnames": list(code.co_varnames), "flags": code.co_flags,
    }  # fmt: skip


def _no_name(obj: Any, owner: Any, name: Any) -> None:
    """``__set_name__`` of a descriptor that has none: nothing to do."""


def _hints(cls: Any) -> Any:
    """``__annotations__`` of a product class as the oracle gets it: the hints
    ``typing.get_type_hints`` finds here (the class's module is here, its bases too), or,
    when they cannot be evaluated (a name imported only for type checkers), the class's own
    annotations as written (``get_type_hints`` in the oracle then fails as it would here)."""
    try:
        return typing.get_type_hints(cls)
    except Exception:
        return dict(cls.__annotations__)


ANCHORED: dict[type, None] = {}
"""The classes a test's class statement made here whose methods call ``super()``: their
instances cross as ``anchored:N`` (N: the class's handle), so the oracle's ``super()`` in
those methods has an instance of the class it names (sandbox/_inside/_proxy.py ``_anchor``)."""


def _super_names(cls: Any) -> list[Any]:
    """What ``super(cls, obj)`` can find (the names of the classes past ``cls`` in its MRO),
    and which of those classes are anchored too."""
    if not isinstance(cls, type) or cls not in ANCHORED:
        raise TypeError("super() names of a class no test's class statement made")
    names = {k for c in cls.__mro__[1:] for k in vars(c) if type(k) is str}
    return [sorted(names), [c for c in cls.__mro__[1:] if c in ANCHORED]]


PICKLE_HOMES: dict[str, types.ModuleType] = {}
"""A module here for each test module that made a class here, holding those classes under
their names, so pickle finds them by ``__module__`` and ``__qualname__`` (as in one process,
where the test module is in ``sys.modules``)."""


def _as_method(callback: Any, name: str, qualname: str, module: str, marks: Any = None) -> Any:
    """A function here that calls one of the test's (a callback): a class's ``__dict__``
    holds it as a method, so Python binds it to the instance as it binds the test's own;
    with the attributes the test's function has of its own (``marks``)."""

    def method(*args: Any, **kwargs: Any) -> Any:
        return callback(*args, **kwargs)

    if type(marks) is dict:
        method.__dict__.update({str(k): v for k, v in marks.items()})
    method.__name__, method.__qualname__, method.__module__ = name, qualname, module
    method.__wrapped__ = callback  # type: ignore[attr-defined]  # inspect.signature: the test's
    return unplaced(method)  # product code reads it as the test's: no namespace of ours


def _subclass(name: Any, bases: Any, items: Any, kwds: Any, anchored: Any = False) -> type:
    """A class statement of the test's on product classes (sandbox/_inside/_proxy.py
    ``_Subclassing``), made here: the same name, bases, keywords and namespace, each
    function of the test's a method that calls it back."""
    if type(name) is not str or not name.isidentifier() or type(bases) is not list:
        raise WireError("a class statement without a name or bases")
    if type(items) is not list or type(kwds) is not dict:
        raise WireError("a class statement without a namespace")
    space = {
        str(item[0]): item[2] for item in items if type(item) is list and item[1:2] == ["value"]
    }
    module, qualname = str(space.get("__module__", "")), str(space.get("__qualname__", name))
    namespace: dict[str, Any] = {}
    for item in items:
        if type(item) is not list or len(item) < 3 or type(item[0]) is not str:
            raise WireError("a class statement's item is not [name, kind, value...]")
        key, how, parts = item[0], item[1], item[2:]
        at = f"{qualname}.{key}"
        if how == "value":
            namespace[key] = parts[0]
        elif how in ("function", "static", "class") and len(parts) == 2:
            method = _as_method(parts[0], key, at, module, parts[1])
            wrap = {"function": None, "static": staticmethod, "class": classmethod}[how]
            namespace[key] = method if wrap is None else wrap(method)
        elif how == "property" and len(parts) == 4:
            accessors = [None if p is None else _as_method(p, key, at, module) for p in parts[:3]]
            doc = parts[3] if type(parts[3]) is str else None
            namespace[key] = property(accessors[0], accessors[1], accessors[2], doc)
        else:
            raise WireError(f"a class statement's item of no kind: {str(how)[:40]}")
    made = types.new_class(name, tuple(bases), kwds, lambda ns: ns.update(namespace))
    if anchored is True:
        ANCHORED[made] = None
    if module and "<" not in qualname and (module not in sys.modules or module in PICKLE_HOMES):
        home = PICKLE_HOMES.setdefault(module, types.ModuleType(module))
        sys.modules.setdefault(module, home)
        if "." not in qualname:
            setattr(home, qualname, made)
    return made


OPS: dict[str, Any] = {
    "repr": repr, "str": str, "len": len, "hash": hash, "bool": bool, "iter": iter,
    "next": next, "isinstance": isinstance, "issubclass": issubclass, "format": format,
    "int": int, "float": float, "complex": complex, "index": operator.index, "bytes": bytes,
    "contains": operator.contains, "getitem": operator.getitem, "setitem": operator.setitem,
    "delitem": operator.delitem, "reversed": reversed, "round": round, "divmod": divmod,
    "dir": lambda obj: sorted(str(name) for name in dir(obj)),
    "vars": lambda obj: dict(vars(obj)),
    "enter": lambda obj: type(obj).__enter__(obj), "exit": _exit_context, "hints": _hints,
    "exit_traced": _exit_traced,
    "pickle": lambda obj, protocol: __import__("pickle").dumps(obj, protocol),
    "unpickle": lambda data: __import__("pickle").loads(data),
    "copy": lambda obj: __import__("copy").copy(obj),
    "deepcopy": lambda obj: __import__("copy").deepcopy(obj),
    "own": _own_dunder, "globals_of": _globals_of,
    "get": lambda obj, instance, owner: type(obj).__get__(obj, instance, owner),
    "set": lambda obj, instance, value: type(obj).__set__(obj, instance, value),
    "delete": lambda obj, instance: type(obj).__delete__(obj, instance),
    "super_get": lambda cls, obj, name: getattr(super(cls, obj), name),
    "code_facts": _code_facts,
    "super_names": _super_names,
    "set_name": lambda obj, name: getattr(type(obj), "__set_name__", _no_name)(obj, None, name),
    **{op: _method(op) for op in ("eq", "ne", "lt", "le", "gt", "ge")},
    "add": operator.add, "sub": operator.sub,
    "mul": operator.mul, "truediv": operator.truediv, "floordiv": operator.floordiv,
    "mod": operator.mod, "pow": operator.pow, "matmul": operator.matmul,
    "lshift": operator.lshift, "rshift": operator.rshift, "and": operator.and_,
    "or": operator.or_, "xor": operator.xor, "neg": operator.neg, "pos": operator.pos,
    "abs": operator.abs, "invert": operator.invert, "zone": zone_answer,
    # In place (h11's ``buffer += data``): the product's own protocol, __iadd__ or __add__.
    **{f"i{op}": getattr(operator, f"i{op}") for op in BINARY_OPS},
}  # fmt: skip


def _module_facts(module: Any) -> dict[str, Any]:
    location = getattr(module, "__file__", None)
    path = getattr(module, "__path__", None)
    doc = getattr(module, "__doc__", None)
    return {
        "file": location if type(location) is str else None,
        "path": [p for p in path if type(p) is str] if path is not None else None,
        "doc": doc if type(doc) is str else None,
    }


def _serve(request: dict[str, Any], memo: Memo) -> dict[str, Any]:
    op = request.get("op")
    args = decode(request.get("args", ["l", []]), _in, memo=memo)
    if type(args) is not list:
        raise WireError("arguments are not a list")
    kwargs = decode(request["kwargs"], _in, memo=memo) if "kwargs" in request else {}
    _keep(memo)
    if op == "import":
        module = importlib.import_module(str(args[0]))
        return {"ok": encode(module, _out), "module": _module_facts(module)}
    if op == "reseed":
        random.seed(PRODUCT_SEED)
        return {"ok": PROPERTY["count"]}  # which process serves the property: its handles
    if op == "getattr":
        return _attribute(getattr(args[0], str(args[1])), memo)
    if op == "callattr":
        # ``obj.name(args)`` in the test: read and called here in one request, when what
        # the read gives would cross as a handle anyway (a function, a bound method, a
        # plain class); else the attribute goes back and the oracle calls it (``attr``).
        if len(args) < 2 or type(kwargs) is not dict or any(type(k) is not str for k in kwargs):
            raise WireError("a method call without its object, name or keyword names")
        target = getattr(args[0], str(args[1]))
        if _called_here(target):
            return _kept_in_step(target(*args[2:], **kwargs), memo)
        return {**_attribute(target, memo), "attr": True}
    if op == "setattr":
        setattr(args[0], str(args[1]), args[2])
        return {"ok": None}
    if op == "delattr":
        delattr(args[0], str(args[1]))
        return {"ok": None}
    if op == "subclass":
        return {"ok": encode(_subclass(*args, **kwargs), _out, memo=memo)}
    if op == "mirror":
        _mirror(args)
        return {"ok": None}
    if op == "unmirror":
        _unmirror(args)
        return {"ok": None}
    if op == "call":
        if type(kwargs) is not dict or any(type(k) is not str for k in kwargs):
            raise WireError("keyword arguments are not a dict of names")
        return _kept_in_step(args[0](*args[1:], **kwargs), memo)
    if op == "getitem":
        return _kept_in_step(operator.getitem(*args), memo)
    if op == "drain" and len(args) == 2:
        return {"ok": encode(_drained(args[0], args[1] is True), _out, memo=memo)}
    if op in OPS:
        return {"ok": encode(OPS[op](*args), _out, memo=memo)}
    raise WireError(f"no such request: {str(op)[:40]}")


def _clock(clock: Any = time.monotonic) -> float:
    """The server's clock, as imported: a default no test's patch (mirrored here) or clock
    library's sweep of module attributes rebinds."""
    return float(clock())


DRAIN_ITEMS = 1024
DRAIN_S = 0.05
"""A batch of ``drain`` ends at this many items or after this long, well inside a call's
deadline however slow each item is."""
_PLAIN = (int, float, complex, str, bytes, bool, type(None))
RAISED_AFTER: dict[int, tuple[Any, Exception]] = {}
"""What a drained iterator raised after the items of the batch it ended: raised at the
next ``drain`` of it, after the oracle has taken those items."""


def _plain_value(value: Any, depth: int = 0) -> bool:
    """A value whose hash and equality run no product code (a tuple of numbers)."""
    if type(value) in _PLAIN:
        return True
    if type(value) in (tuple, frozenset) and depth < 4 and len(value) <= 64:
        return all(_plain_value(v, depth + 1) for v in value)
    return False


def _drained(it: Any, plain_only: bool) -> list[Any]:
    """``[done, items]``: the next items of the product iterator ``it``, which a built-in of
    the test's takes whole (``list(...)``, ``set(...)``: the oracle's ``_Drained``), as
    ``next`` would give them one by one. Ends at the end (``done``), at what it raises
    (raised now if no item came before it, else at the next ``drain``), at the batch's
    size or time, and, for ``set``, after an item that is not a plain value."""
    pending = RAISED_AFTER.pop(id(it), None)
    if pending is not None and pending[0] is it:
        raise pending[1]
    items: list[Any] = []
    started = _clock()
    while len(items) < DRAIN_ITEMS:
        try:
            item = next(it)
        except StopIteration:
            return [True, items]
        except Exception as exc:
            if not items:
                raise
            RAISED_AFTER[id(it)] = (it, exc)
            return [False, items]
        items.append(item)
        if (plain_only and not _plain_value(item)) or _clock() - started > DRAIN_S:
            break
    return [False, items]


MIRRORED: dict[tuple[Any, ...], list[Any]] = {}
"""What the test patched in a module both processes have their own copy of
(``monkeypatch.setattr("secrets.token_hex", fake)``, ``mock.patch("time.sleep")``,
``monkeypatch.setenv``), made here too while it holds (the oracle's ``mirror``): per
attribute or variable, what each patch replaced, latest last (patches nest)."""
_ABSENT = object()


def _mirrored_owner(module: Any, path: Any) -> Any:
    if type(module) is not str or type(path) is not list or any(type(p) is not str for p in path):
        raise WireError("a mirrored patch without its module and path")
    owner = importlib.import_module(module)
    for name in path:
        owner = getattr(owner, name)
    return owner


def _mirror(args: list[Any]) -> None:
    """``["attr", module, path, name, value]`` or ``["env", name, value or None]``: the
    test's patch, made here; what it replaced is kept for ``_unmirror``."""
    if args[:1] == ["env"] and len(args) == 3 and type(args[1]) is str:
        if args[2] is not None and type(args[2]) is not str:
            raise WireError("an environment variable that is not text")
        MIRRORED.setdefault(("env", args[1]), []).append(os.environ.get(args[1], _ABSENT))
        if args[2] is None:
            os.environ.pop(args[1], None)
        else:
            os.environ[args[1]] = args[2]
        return
    if args[:1] != ["attr"] or len(args) != 5 or type(args[3]) is not str:
        raise WireError("a mirrored patch that is not [attr, module, path, name, value]")
    owner = _mirrored_owner(args[1], args[2])
    own = isinstance(owner, type)  # a class's own attribute, not one it inherits
    before = owner.__dict__.get(args[3], _ABSENT) if own else getattr(owner, args[3], _ABSENT)
    MIRRORED.setdefault(("attr", args[1], *args[2], args[3]), []).append(before)
    setattr(owner, args[3], args[4])


def _unmirror(args: list[Any]) -> None:
    """The test's patch undone (monkeypatch's undo, a ``mock.patch`` ending): what it
    replaced is back."""
    if args[:1] == ["env"] and len(args) == 2 and type(args[1]) is str:
        kept = MIRRORED.get(("env", args[1]))
        if kept:
            before = kept.pop()
            if before is _ABSENT:
                os.environ.pop(args[1], None)
            else:
                os.environ[args[1]] = before
        return
    if args[:1] != ["attr"] or len(args) != 4 or type(args[3]) is not str:
        raise WireError("an undone patch that is not [attr, module, path, name]")
    kept = MIRRORED.get(("attr", args[1], *args[2], args[3]))
    if kept:
        before, owner = kept.pop(), _mirrored_owner(args[1], args[2])
        if before is _ABSENT:
            with contextlib.suppress(AttributeError):
                delattr(owner, args[3])
        else:
            setattr(owner, args[3], before)


def _attribute(value: Any, memo: Memo) -> dict[str, Any]:
    reply: dict[str, Any] = {"ok": encode(value, _out, memo=memo)}
    if type(value) in MUTABLE:
        # An attribute that is a container (s.names, module.CONFIG): the oracle's copy and
        # this one are kept in step (Live), as one object would be.
        reply["live"] = _handle(value)
        LIVE.keep(reply["live"], value)
    return reply


def _called_here(target: Any) -> bool:
    """Whether ``target`` would cross to the oracle as a plain handle (``_out``), which the
    oracle would only call back here: a Python function, a method of one, a plain class."""
    kind = type(target)
    if kind is types.FunctionType:
        return True
    if kind is types.MethodType:
        return type(target.__func__) is types.FunctionType
    return (
        isinstance(target, type)
        and "_pw_class" not in target.__dict__
        and "_pw_oracle_tuple" not in target.__dict__
        and standard_class_name(target) is None
        and _plain_class(target) is not None
    )


def _kept_in_step(result: Any, memo: Memo) -> dict[str, Any]:
    """The reply of a call or an item read: a container product code keeps and hands out
    (``d.setdefault("c", [])``, ``d["c"]`` of a product mapping) is kept in step with the
    oracle's copy, as a read attribute's is, so ``d.setdefault("c", []).append(2)`` changes
    what the product holds, as in one process."""
    reply = {"ok": encode(result, _out, memo=memo)}
    kept = type(result) in MUTABLE and sys.getrefcount(result) > _RETURNED_ONLY
    if kept and is_plain(result):  # plain data only: comparing handles would be requests
        reply["live"] = _handle(result)
        LIVE.keep(reply["live"], result)
    return reply


LIVE = Live()
_RETURNED_ONLY = 3
"""References a call's result has here when nothing of the product's keeps it: the serving
function's name for it, the call's memo, and ``sys.getrefcount``'s argument."""
KEPT: list[list[Any]] = []
"""Per request being served (nested: a callback may bring another), the mutable containers
it brought by value and their contents as they arrived."""


def _keep(memo: Memo) -> None:
    KEPT[-1][:] = [len(memo.objects)] + [
        (n, obj, contents_of(obj)) for n, obj in enumerate(memo.objects) if type(obj) in MUTABLE
    ]


def _written_back(memo: Memo, kept: list[Any], sent: bool) -> list[Any]:
    """The new contents of each container the request brought that product code changed in
    place (``xs.sort()``, ``d[k] = v``): the oracle writes them into its own objects, so a
    mutation of an argument is seen there as in one process. ``sent``: the reply carries
    a value encoded with ``memo`` (otherwise what it numbered is forgotten)."""
    if not kept:
        return []
    if not sent:
        memo.trim(kept[0])
    back = []
    for n, obj, before in kept[1:]:
        if changed_since(obj, before):
            back.append([n, encode(sendable_contents(obj), _out, memo=memo)])
    return back


def _retained(memo: Memo, kept: list[Any]) -> list[list[int]]:
    """``[[n, handle], ...]`` of the containers the request brought by value that product code
    still holds when it has been served (``cached(cache)`` with a test's dict keeps it in the
    wrapper; ``obj.items = xs``): each is then kept in step with the test's own, both ways,
    as an attribute the test reads is (``Live``), so a later call's write is in the test's
    dict and the test's ``cache.clear()`` is seen there, as in one process.

    Held means more references than the request's own: its entry in ``memo`` and in
    ``kept``, this loop's name and ``getrefcount``'s argument, and one per container of the
    request holding it (two for one in ``kept``: the container and its snapshot)."""
    if len(kept) < 2:
        return []
    inside: dict[int, int] = {}
    snapshots = {id(obj) for _n, obj, _before in kept[1:]}
    for parent in memo.objects[: kept[0]]:
        values = parent.values() if type(parent) in MAPPINGS else parent
        if type(parent) not in MUTABLE and type(parent) is not tuple:
            continue
        weight = 2 if id(parent) in snapshots else 1
        for value in values:
            if type(value) in MUTABLE:
                inside[id(value)] = inside.get(id(value), 0) + weight
    out = []
    for n, obj, _before in kept[1:]:
        if sys.getrefcount(obj) > _REQUEST_OWN + inside.get(id(obj), 0) and is_plain(obj):
            number = _handle(obj)
            LIVE.keep(number, obj)
            out.append([n, number])
    return out


_REQUEST_OWN = 4
"""References a container the request brought has when product code holds none: ``memo``'s,
the ``kept`` entry's, ``_retained``'s name and ``sys.getrefcount``'s argument."""


def _warned(issued: warnings.WarningMessage) -> list[Any]:
    """One warning as data: its category (as an exception class crosses), text and place."""
    try:
        text = str(issued.message)[:2000]
    except BaseException:
        text = issued.category.__name__
    return [_class_of_exception(issued.category), text, str(issued.filename), int(issued.lineno)]


def _raised(exc: BaseException, with_traceback: bool = True, depth: int = 0) -> dict[str, Any]:
    """A product exception as data: its class, its args (when plain), its text, the
    product-side traceback (none for one that crosses as a value) and its chain
    (``__cause__``, ``__context__``, ``__suppress_context__``: cachetools' tests read them),
    four deep."""
    try:
        text = str(exc)
    except BaseException:
        text = f"<{type(exc).__qualname__}: str() failed>"
    try:
        tb = "".join(traceback.format_exception(exc))[-TRACEBACK_CHARS:] if with_traceback else ""
    except BaseException:
        tb = ""
    try:
        shown = repr(exc)[:2000]
    except BaseException:
        shown = None
    own = getattr(exc, "__dict__", None)
    if type(own) is dict and type(own.get("_pw_oracle")) is int:
        return {"raise": {"oracle": own["_pw_oracle"], "tb": tb}}
    args = encode(exc.args, _out) if is_plain(exc.args) else None
    raised = {
        "cls": _class_of_exception(type(exc)),
        "args": args,
        "str": text,
        "repr": shown,
        "tb": tb,
        "h": _handle(exc),
    }
    extras = exception_extras(exc)
    if extras:
        raised["extras"] = encode(extras, _out)
    if exc.__suppress_context__:
        raised["suppress"] = True
    for key in ("__cause__", "__context__"):
        linked = getattr(exc, key, None)
        if depth < 4 and isinstance(linked, BaseException) and linked is not exc:
            raised[key.strip("_")] = _raised(linked, False, depth + 1)["raise"]
    return {"raise": raised}


def _write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(REP_FD, view) :]


BUFFERED = [b""]  # what was read from the oracle and not yet taken as a line


def _line(timeout: float | None) -> bytes | None:
    """The oracle's next line; None: the oracle closed its end. Waiting for the answer to a
    callback (``timeout``) past the call deadline ends this process."""
    while True:
        end = BUFFERED[0].find(b"\n")
        if end >= 0:
            line, BUFFERED[0] = BUFFERED[0][:end], BUFFERED[0][end + 1 :]
            return line
        if len(BUFFERED[0]) > REQUEST_MAX_BYTES:
            if timeout is not None:
                os._exit(CALLBACK_EXIT_STATUS)
            return None
        if timeout is not None and not select.select([REQ_FD], [], [], timeout)[0]:
            os._exit(CALLBACK_EXIT_STATUS)
        chunk = os.read(REQ_FD, 1 << 20)
        if not chunk:
            if timeout is not None:
                os._exit(0)  # the oracle is gone while product code waited for it
            return None
        BUFFERED[0] += chunk


def _answer(request: dict[str, Any]) -> bytes:
    """One request of the oracle's, answered (a reply, a raise, or what the wire refused),
    with the warnings product code issued meanwhile: the oracle issues them again under its
    own filters, so ``pytest.warns`` and ``filterwarnings = error`` see them as in-process."""
    memo = Memo()
    # Product code runs under pytest's own capture, as each test of the agent's run_tests
    # does; what it printed goes back with the reply, and the oracle prints it to its own
    # streams, where pytest captures it (capsys, capfd, a failure's captured output).
    if CAPTURE_DEPTH[0] == 0:
        CAPTURE[0].resume_capturing()
    CAPTURE_DEPTH[0] += 1  # a request served inside a callback keeps the call's capture on
    try:
        reply = _answer_captured(request, memo)
    finally:
        CAPTURE_DEPTH[0] -= 1
        texts = _captured_texts(CAPTURE[0], suspend=CAPTURE_DEPTH[0] == 0)
    if any(texts):
        reply["printed"] = texts
    try:
        return dumps(reply)
    except BaseException as exc:
        return dumps({"wire": f"the reply could not be written: {type(exc).__name__}"})


def _capture() -> Any:
    """pytest's capture of descriptors 0, 1 and 2 (``--capture=fd``, its default; the runner
    drops a project's own capture options, sandbox/_pytest_config.py), made once, before the
    tree is importable, and resumed only while a request runs: product code sees in a call
    what a test of the agent's ``run_tests`` sees (``sys.stdout`` pytest's stream over a
    temporary file, descriptors 1 and 2 that file, ``sys.stdin`` pytest's refusal and
    descriptor 0 ``/dev/null``), not a stream of this program's. Between two requests the
    process's own streams are back (the run's output)."""
    from _pytest.capture import FDCapture, MultiCapture

    capture = MultiCapture(in_=FDCapture(0), out=FDCapture(1), err=FDCapture(2))
    capture.start_capturing()
    capture.suspend_capturing()
    return capture


def _captured_texts(capture: Any, suspend: bool) -> list[str]:
    """What was printed on each of descriptors 1 and 2 since the last look (capture
    suspended first when the outermost request ends; a request served inside a callback
    takes what its caller printed before it too, in the order one process prints it):
    written on to the process's own stream (the run's evidence keeps it, and its output
    limit ends a product that floods), and up to ``PRINTED_MAX_CHARS`` bytes of it for the
    reply. A capture product code broke (it closed pytest's stream) is made again."""
    texts = []
    try:
        if suspend:
            capture.suspend_capturing()
        for part in (capture.out, capture.err):
            texts.append(_printed(part.tmpfile.buffer, part.targetfd_save))
    except (OSError, ValueError):
        with contextlib.suppress(OSError, ValueError):
            capture.stop_capturing()
        CAPTURE[0] = _capture()
        if not suspend:
            CAPTURE[0].resume_capturing()
        return ["", ""]
    return texts


def _printed(tmpfile: Any, own_fd: int) -> str:
    """What ``tmpfile`` holds, copied to ``own_fd`` (the process's own stream, saved by the
    capture) and emptied; the first ``PRINTED_MAX_CHARS`` bytes as text."""
    size = tmpfile.tell()  # one seek: nothing printed, nothing read
    if not size:
        return ""
    tmpfile.seek(0)
    kept = b""
    while chunk := tmpfile.read(1 << 20):
        if len(kept) < PRINTED_MAX_CHARS:
            kept += chunk[: PRINTED_MAX_CHARS - len(kept)]
        view = memoryview(chunk)
        while view:
            view = view[os.write(own_fd, view) :]
    tmpfile.seek(0)
    tmpfile.truncate()
    text = kept.decode("utf-8", "replace")
    if size > len(kept):
        more = size - len(kept)
        text += f"\n[patchwarden: {more} more bytes printed, kept in the run's output]\n"
    return text


CLOCK: dict[str, Any] = {"wanted": None, "freezer": None}


def _set_clock(wanted: Any) -> None:
    """The clock the test froze (freezegun's ``freeze_time``, sent with each request while
    it is frozen there): frozen here too, with the same library, at the same time and
    offset, so product code's ``datetime.now()`` is the test's (humanize's 202 tests of
    ``naturaltime``); thawed at the first request without it. Each property's process
    starts thawed (forked from the import's state)."""
    if wanted == CLOCK["wanted"]:
        return
    if CLOCK["freezer"] is not None:
        CLOCK["freezer"].stop()
    CLOCK.update(wanted=None, freezer=None)
    if wanted is None:
        return
    at, offset = wanted.get("at") if type(wanted) is dict else None, wanted.get("tz")
    if type(at) is not str or type(offset) not in (int, float):
        raise WireError("a clock that is not {at, tz}")
    try:
        moment = _Clock.datetime.fromisoformat(at)
        import freezegun
    except (ValueError, ImportError) as exc:
        raise WireError(f"the clock cannot be frozen here: {type(exc).__name__}") from None
    freezer = freezegun.freeze_time(moment, tz_offset=datetime.timedelta(seconds=offset))
    freezer.start()
    CLOCK.update(wanted=wanted, freezer=freezer)


def _answer_captured(request: dict[str, Any], memo: Memo) -> dict[str, Any]:
    KEPT.append([])
    with warnings.catch_warnings(record=True) as issued:
        warnings.simplefilter("always")
        try:
            _set_clock(request.get("clock"))
            LIVE.apply(request.get("sync"), _in)  # what the test changed in its copies
            reply = _serve(request, memo)
        except WireError as exc:
            reply = {"wire": str(exc)[:200]}
        except BaseException as exc:
            reply = _raised(exc)
        try:
            if "wire" not in reply:
                back = _written_back(memo, KEPT[-1], "ok" in reply)
                if back:
                    reply["back"] = back
                retained = _retained(memo, KEPT[-1])
                if retained:
                    reply["kept"] = retained
                sync = LIVE.changes(_out)  # what product code changed in the held ones
                if sync:
                    reply["sync"] = sync
        except BaseException as exc:
            reply = {"wire": f"a changed argument could not be written: {type(exc).__name__}"}
        finally:
            KEPT.pop()
    if issued:
        reply["warned"] = [_warned(w) for w in issued[:WARNINGS_MAX]]
    return reply


# -- one product state per property ----------------------------------------------------------

NEXT_PROPERTY_STATUS = 0  # a property's process ends so: the next property gets a fresh one
PROPERTY: dict[str, Any] = {"child": False, "pipe": -1, "count": 0, "token": b""}
"""This process: the one that imported the product (it forks one child per property and
only waits) or a property's child; ``pipe``: a child's end of its private pipe, on which it
writes ``token`` (drawn for it by its parent) only when the oracle's next property starts: a
child that product code ends (``os._exit(0)``, a write on a guessed descriptor) ends the
whole process, never starts a fresh child answering the wrong request."""


# What the import leaves that could carry a property's state to the next one (beyond the
# process's memory, which each child gets a copy of): files, descriptors, shared memory,
# threads, signals. docs/design/isolated-oracle.md, "One product state per property".
WRITABLE_ROOTS = (PRODUCT_TREE, "/tmp", os.environ.get("HOME", "/tmp"), "/dev/shm")
"""Where product code can write: each is put back between properties as the import left
it. Read before product code runs (it could change ``HOME``)."""
FILES_KEPT_BYTES = 64 * 1024 * 1024
"""Bytes of file contents the parent keeps to put changed files back; a file past it that a
property changes ends the process (``UNRESTORABLE_STATUS``): never a next property that
meets an earlier one's write."""
UNRESTORABLE_STATUS = 72
AFTER_IMPORT: dict[str, Any] = {"mask": set(), "gc": True, "profile": None, "files": {}}
"""The parent's record of the state the import left: the signal mask, the collector's state
and the profile function the children get back, and each file under ``WRITABLE_ROOTS`` as
it was."""
HOOK_LISTS: list[list[Any]] = []
"""The interpreter's lists of fork hooks (``_mark_fork_hooks``)."""
SERVER_DESCRIPTORS: dict[int, tuple[int, int]] = {}
SERVER_MAPPINGS: set[str] = set()
"""What the server itself holds before product code runs (filled by ``_server_holdings``)."""


def _descriptors() -> dict[int, tuple[int, int]]:
    found = {}
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            st = os.fstat(int(name))
            found[int(name)] = (st.st_dev, st.st_ino)
    return found


def _shared_mappings() -> set[str]:
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        lines = maps.read().splitlines()
    shared = set()
    for line in lines:
        fields = line.split(None, 5)
        if len(fields) >= 2 and fields[1][3:4] == "s":
            shared.add(fields[5].strip() if len(fields) > 5 else "")
    return shared


def _server_holdings() -> None:
    SERVER_DESCRIPTORS.update(_descriptors())
    SERVER_MAPPINGS.update(_shared_mappings())
    _mark_fork_hooks()


def _fork_mark() -> None:
    """Registered at fork before product code runs: where product code's hooks start."""


def _mark_fork_hooks() -> None:
    """The interpreter's three lists of fork hooks (``before``, ``after_in_parent``,
    ``after_in_child``), found by a mark the server registers in each before the tree is
    importable: what product code registers later follows the mark (the lists only grow)."""
    os.register_at_fork(before=_fork_mark, after_in_parent=_fork_mark, after_in_child=_fork_mark)
    found = gc.get_objects()
    HOOK_LISTS[:] = [
        o for o in found if type(o) is list and o is not found and any(f is _fork_mark for f in o)
    ]
    del found
    if len(HOOK_LISTS) != 3:
        HOOK_LISTS.clear()  # not this interpreter's layout: product hooks run (a probe sees most)


def _fork() -> int:
    """``os.fork()`` that runs none of the hooks product code registered (``os.register_at_fork``,
    however called): each property's process is forked from the one that imported the
    product, and a hook that ran there would tell product code so (the agent's ``run_tests``
    and production never fork under it). Product code's own forks run them all."""
    kept = []
    for hooks in HOOK_LISTS:
        start = next(i for i, f in enumerate(hooks) if f is _fork_mark) + 1
        kept.append((hooks, hooks[start:]))
        del hooks[start:]
    try:
        return os.fork()
    finally:
        for hooks, tail in kept:
            hooks.extend(tail)


def _where_it_points(target: str) -> str:
    """A descriptor's or a mapping's target as a probe's: its kind, or its path with the
    tree and the scratch directories named (a random file name is not the probe)."""
    if not target or target.startswith(("/dev/zero", "[anon", "anon_inode:[memfd")):
        return "anonymous memory"
    if target.startswith("/memfd:"):
        return "anonymous memory"
    kind, bracket, _ = target.partition(":[")
    if bracket:
        return kind
    path = target.removesuffix(" (deleted)")
    if path == PRODUCT_TREE or path.startswith(PRODUCT_TREE + "/"):
        return "<tree>" + path[len(PRODUCT_TREE) :]
    if path.startswith(("/tmp/", "/dev/shm/", WRITABLE_ROOTS[2] + "/")):
        return "<scratch>"
    return path


def _probe(kind: str, target: str) -> None:
    with contextlib.suppress(OSError):
        os.write(PROBE_FD, f"{kind} {target} from <the import>\n".encode("utf-8", "replace"))


def _after_the_import() -> None:
    """Once, in the parent, before the first property's child: what the import left that a
    fork does not copy is measured (descriptors, shared memory, threads: a probe each, as
    the parent's import would also show it), and the rest is set so no product code runs
    here again (signals blocked and the collector off, so no finalizer or handler runs
    between two children); the files are recorded as they are."""
    for fd, identity in sorted(_descriptors().items()):
        if SERVER_DESCRIPTORS.get(fd) != identity:
            with contextlib.suppress(OSError):
                _probe("descriptor", _where_it_points(os.readlink(f"/proc/self/fd/{fd}")))
    for target in sorted(_shared_mappings() - SERVER_MAPPINGS):
        _probe("shared-memory", _where_it_points(target))
    with contextlib.suppress(OSError):
        threads = len(os.listdir("/proc/self/task"))
        if threads > 1:
            _probe("thread", f"{threads - 1} running besides the main one")
    AFTER_IMPORT["mask"] = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    AFTER_IMPORT["gc"] = gc.isenabled()
    gc.disable()
    # The probes' profile function is this thread's: off here, where no product code runs
    # any more (it would only slow the walk over the files), back in each child.
    AFTER_IMPORT["profile"] = sys.getprofile()
    sys.setprofile(None)
    AFTER_IMPORT["files"] = _files_kept(_files())


def _writable_roots() -> list[str]:
    roots: list[str] = []
    for root in sorted({os.path.realpath(r) for r in WRITABLE_ROOTS}):
        if os.path.isdir(root) and not any(root.startswith(r + "/") for r in roots):
            roots.append(root)
    return roots


def _files() -> dict[str, tuple[int, int, int, int, int]]:
    """Every entry under the writable roots (links not followed): its mode, inode, size and
    times, which change with any write (``st_ctime`` cannot be set back by product code).

    Only the roots' own file systems: what the sandbox mounts inside them (the interpreter's
    directories when they sit under the host's /tmp, the tree's ``.git``) is read-only to
    product code, and the host may change it meanwhile (its own ``.pyc`` files)."""
    found: dict[str, tuple[int, int, int, int, int]] = {}
    stack = [(root, os.stat(root).st_dev) for root in _writable_roots()]
    while stack:
        directory, device = stack.pop()
        with contextlib.suppress(OSError), os.scandir(directory) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    st = entry.stat(follow_symlinks=False)
                    if st.st_dev != device:
                        continue  # a mount point
                    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
                        times = (st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                    else:  # a device's times move with anyone's use of it (the tree's .git)
                        times = (0, 0, 0)
                    found[entry.path] = (st.st_mode, st.st_ino, *times)
                    if stat.S_ISDIR(st.st_mode):
                        stack.append((entry.path, device))
    return found


def _files_kept(entries: dict[str, tuple[int, int, int, int, int]]) -> dict[str, Any]:
    """Each entry with what puts it back: a file's bytes (while ``FILES_KEPT_BYTES`` lasts),
    a link's target."""
    kept: dict[str, Any] = {}
    budget = FILES_KEPT_BYTES
    for path, key in sorted(entries.items()):
        held: bytes | str | None = None
        with contextlib.suppress(OSError):
            if stat.S_ISLNK(key[0]):
                held = os.readlink(path)
            elif stat.S_ISREG(key[0]) and key[2] <= budget:
                with open(path, "rb") as f:
                    held = f.read()
                budget -= len(held)
        kept[path] = [key, held]
    return kept


PUT_BACK_PASSES = 3
"""Walks that may each put something back (a directory product code made unreadable hides
its entries from the first): after them the files must be as the import left them."""


def _put_back_files() -> None:
    """Between two properties: every entry under the writable roots back as the import left
    it (new ones removed, changed or removed ones written back, in place where they still
    are). One that cannot be put back ends the process with ``UNRESTORABLE_STATUS``."""
    kept = AFTER_IMPORT["files"]
    try:
        for _ in range(PUT_BACK_PASSES):
            now = _files()
            if len(now) == len(kept) and all(
                kept.get(path, [None])[0] == key for path, key in now.items()
            ):
                return
            _put_back(kept, now)
            for path, key in _files().items():  # a put-back entry's st_ctime is new
                if path in kept:
                    kept[path][0] = key
        raise OSError("the files still differ from the import's after putting them back")
    except OSError as exc:
        os.write(2, f"patchwarden: cannot put back the product's files between properties: "
                    f"{exc}\n".encode("utf-8", "replace"))  # fmt: skip
        os._exit(UNRESTORABLE_STATUS)


def _put_back(kept: dict[str, Any], now: dict[str, tuple[int, int, int, int, int]]) -> None:
    for path in sorted(now, reverse=True):  # deepest first
        if path not in kept or stat.S_IFMT(kept[path][0][0]) != stat.S_IFMT(now[path][0]):
            _remove(path, now[path][0])
            now.pop(path)
    for path in sorted(kept):  # shallowest first
        key, held = kept[path]
        if now.get(path) == key:
            continue
        mode = key[0]
        if stat.S_ISDIR(mode):
            if path not in now:
                os.mkdir(path, 0o700)
            os.chmod(path, stat.S_IMODE(mode))
        elif stat.S_ISLNK(mode) and isinstance(held, str):
            if path in now:
                os.unlink(path)
            os.symlink(held, path)
        elif stat.S_ISREG(mode) and isinstance(held, bytes):
            if path in now:
                os.chmod(path, 0o600)  # product code may have taken its write bit away
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
            fd = os.open(path, flags, 0o600)
            try:
                view = memoryview(held)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            os.chmod(path, stat.S_IMODE(mode))
            os.utime(path, ns=(key[3], key[3]), follow_symlinks=False)
        elif stat.S_ISREG(mode) or stat.S_ISLNK(mode) or path not in now:
            raise OSError(f"no copy kept of {path}")  # past FILES_KEPT_BYTES, or a device
    after = _files()
    for path in sorted(kept, reverse=True):  # the directories' times, deepest first
        key = kept[path][0]
        if stat.S_ISDIR(key[0]) and after.get(path, key)[3] != key[3]:
            os.utime(path, ns=(key[3], key[3]), follow_symlinks=False)


def _remove(path: str, mode: int) -> None:
    """An entry the import did not leave, a directory with everything in it (one product
    code made unreadable too); links are removed, never followed."""
    if not stat.S_ISDIR(mode):
        os.unlink(path)
        return
    os.chmod(path, 0o700)
    with os.scandir(path) as entries:
        inside = [(entry.path, entry.stat(follow_symlinks=False).st_mode) for entry in entries]
    for entry_path, entry_mode in inside:
        _remove(entry_path, entry_mode)
    os.rmdir(path)


def _next_property() -> None:
    """A property starts (the oracle's ``reseed``): a child ends, so its parent forks the
    next one from the state after the import; the parent returns only in a new child.

    Each property meets the product as the import left it: nothing a property did
    (a counter, a cache, a burst of calls, a file it wrote) reaches the next
    (docs/design/isolated-oracle.md, "One product state per property"). A child that ends
    otherwise (product code's ``os._exit``, a signal) ends its parent the same way, so the
    host sees how it ended."""
    if PROPERTY["child"]:
        os.write(PROPERTY["pipe"], PROPERTY["token"])
        os._exit(NEXT_PROPERTY_STATUS)
    if PROPERTY["count"] == 0:
        _after_the_import()
    while True:
        marker_read, marker_write = os.pipe()
        token = os.urandom(16)
        PROPERTY["count"] += 1
        pid = _fork()
        if pid == 0:
            os.close(marker_read)
            PROPERTY.update(child=True, pipe=marker_write, token=token)
            NEXT_HANDLE[0] = PROPERTY["count"] * HANDLE_SPAN
            sys.setprofile(AFTER_IMPORT["profile"])
            signal.pthread_sigmask(signal.SIG_SETMASK, AFTER_IMPORT["mask"])
            if AFTER_IMPORT["gc"]:
                gc.enable()
            return
        os.close(marker_write)
        _, status = os.waitpid(pid, 0)
        ended = os.read(marker_read, 64)
        os.close(marker_read)
        if ended == token and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            _put_back_files()
            continue  # the oracle's next property: fork again
        if os.WIFSIGNALED(status):
            signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {os.WTERMSIG(status)})
            os.kill(os.getpid(), os.WTERMSIG(status))
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 70)


def serve() -> None:
    while True:
        line = _line(None)
        if line is None:
            return
        try:
            request = loads(line)
        except WireError as exc:
            _write(dumps({"wire": str(exc)[:200]}))
            continue
        if request.get("op") == "reseed":
            _next_property()  # returns in the property's own process
        answer = _answer(request)
        if not probes_intact(PROBE_FD, PROBE_PIPE):
            os._exit(PROBES_LOST_STATUS)
        _write(answer)


def _library_dirs() -> tuple[str, ...]:
    """Where the interpreter imports from (sys.path before the tree): files there are the
    library's, not the environment's, so reading them is no probe."""
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    dirs.update(p for p in sys.path if os.path.isabs(p) and os.path.isdir(p))
    return tuple(sorted(d.rstrip("/") + "/" for d in dirs if d.rstrip("/")))


random.seed(PRODUCT_SEED)
# The server's module out of product code's reach by name or attribute: ``sys.modules`` gets
# an empty ``__main__`` (a plain interpreter's has no server in it), so scanning the loaded
# modules finds no dispatch to wrap. The functions keep this module's globals; the other
# ways to them (frames, ``gc``) are probes (docs/design/isolated-oracle.md).
sys.modules["__main__"] = types.ModuleType("__main__")
CAPTURE = [_capture()]
CAPTURE_DEPTH = [0]  # requests being answered (one inside another's callback: more than one)
_server_holdings()
arm_probes(PROBE_FD, PRODUCT_TREE, _library_dirs())
sys.path[0:0] = tree_paths(PRODUCT_TREE, PRODUCT_LAYOUT["roots"])
serve()

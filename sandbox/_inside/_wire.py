"""Both sides of the isolated oracle: the wire between the oracle and the product process.

Data only, never code (docs/design/isolated-oracle.md, "The wire"): one JSON text per line,
built and read with the standard library's ``json`` (no pickle, nothing that builds an
arbitrary object). Values of exact plain types cross by value; every other object crosses as
a handle (``["h", id]``) that the side which owns it resolves. ``encode`` takes a function
that turns a non-plain object into its tagged form (the product registers it in its table;
the oracle sends the handles the product gave out and refuses anything else); ``decode``
takes one that resolves the tags it does not know itself.

A plain value is one of ``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``,
``bytes``, ``bytearray``, ``NotImplemented``, ``Ellipsis``, ``Decimal``, ``Fraction``,
``date``, ``time``, ``datetime`` (naive, with a fixed ``timezone``, or with any other zone
as the sender's tag: a stand-in ``tzinfo`` there), ``timedelta``, a
``pathlib`` path (``PosixPath``, ``PurePosixPath``, ``PureWindowsPath``: rebuilt as the same
class from its text), a ``slice`` of plain values (what ``seq[i:j]`` sends), or a ``list``,
``tuple``, ``dict``, ``set`` or ``frozenset`` of plain values, or one of the standard
library's ``collections`` containers (``OrderedDict``, ``defaultdict`` with its factory,
``Counter``, ``deque`` with its ``maxlen``), by exact type: a subclass of a plain type is not
plain.

One call and its reply share a ``Memo``: every object that crossed by value (ints, floats,
texts and ``None`` aside) is numbered in the order both sides meet it, and the same object
met again, in the request or in the reply, crosses as ``["r", n]``: so ``f(xs, xs)`` hands
the product one list, and a reply that holds an object the request brought (``f(x) is x``)
is the sender's own object again. The product's changes to the mutable containers it was
sent (``list``, ``dict``, ``set``, ``bytearray`` and the ``collections`` containers) come
back with the reply and are written into the sender's objects (sandbox/_inside/_proxy.py).

Part of both programs concatenated by sandbox/_inside (``program``).
"""

from __future__ import annotations

import base64
import collections
import collections.abc
import contextlib
import datetime
import decimal
import enum
import fractions
import json
import pathlib
import sys
import types
import typing
from collections.abc import Callable
from typing import Any

WIRE_DEPTH = 64
"""Deepest nesting of containers that crosses by value; deeper is a handle (or refused)."""
WIRE_INT_DIGITS = 4000
"""Larger ints cross as hex text (the JSON reader refuses more than 4300 decimal digits)."""
_WIRE_INT_BOUND = 10**WIRE_INT_DIGITS
"""Computed once: ``10**4000`` at every int sent was most of the wire's cost of a tuple of
ints (384 µs for eight)."""


SAME_MAX_CHARS = 4096
SAME_MAX_ENTRIES = 8192
_SAME: dict[tuple[type, Any], Any] = {}


def _same(value: Any) -> Any:
    """One object per text: a ``str`` or ``bytes`` received again is the object received
    before, as the same value handed twice in one process would be (jinja2 renders
    ``'{0.upper}'.format(v)`` with ``id(v)`` in it: a fresh copy per call would differ)."""
    if len(value) > SAME_MAX_CHARS:
        return value
    key = (type(value), value)
    found = _SAME.get(key)
    if found is not None:
        return found
    if len(_SAME) < SAME_MAX_ENTRIES:
        _SAME[key] = value
    return value


BINARY_OPS = ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "lshift",
              "rshift", "and", "xor", "or")  # fmt: skip
"""The binary operators by ``operator``'s names (``__add__``, ``__radd__``, ``__iadd__``): the
one list the oracle's handles and the product's requests are made from."""
ARITHMETIC = (
    *BINARY_OPS, *(f"r{op}" for op in BINARY_OPS), *(f"i{op}" for op in BINARY_OPS),
    "neg", "pos", "abs", "invert",
)  # fmt: skip
"""The operators product code may apply to one of the test's objects that has them (dpath's
``target += found`` on a test's sequence, a test's ``Money`` added up): the object's own
method, run in the oracle."""


CONTAINER_ABCS = frozenset(
    {"Container", "Sized", "Iterable", "Iterator", "Reversible", "Collection", "Sequence",
     "MutableSequence", "Set", "MutableSet", "Mapping", "MutableMapping"}
)  # fmt: skip
"""The ``collections.abc`` classes an object's stand-in on the other side is registered
with (``abc.<name>`` among its operations) when the object is one: a test's
``MutableMapping`` is a ``MutableMapping`` to product code (dpath walks only what is)."""


def abcs_of(obj: Any) -> list[str]:
    """``abc.<name>`` for each of ``CONTAINER_ABCS`` that ``obj`` is an instance of."""
    return [
        f"abc.{n}" for n in sorted(CONTAINER_ABCS) if isinstance(obj, getattr(collections.abc, n))
    ]


PRINTED_MAX_CHARS = 1_000_000
"""Bytes of product code's ``print`` output one reply carries per stream (all of it also goes
to the product process's own stream: the run's evidence, whose output limit ends a flood);
beyond, the reply says how much more there was."""


ZONE_METHODS = frozenset({"utcoffset", "dst", "tzname", "fromutc"})
"""What a ``datetime`` asks of its zone: a zone's stand-in asks its owner for these in one
request each (``zone``), and for nothing else through that request."""


def zone_answer(zone: Any, name: Any, dt: Any) -> Any:
    """The owner's answer to its zone's stand-in: ``zone.<name>(dt)`` of a ``tzinfo``."""
    if not isinstance(zone, datetime.tzinfo) or name not in ZONE_METHODS:
        raise AttributeError(str(name)[:80])
    return getattr(zone, name)(dt)


class WireError(Exception):
    """A line that is not the wire's format (from the other side: data, never trusted)."""


class _Clock:
    """The datetime module's classes as imported: a test's clock library (freezegun) swaps
    ``datetime.datetime`` and every module attribute equal to it, never a class's attribute,
    so the wire still knows a real ``datetime`` while the clock is frozen."""

    date = datetime.date
    time = datetime.time
    datetime = datetime.datetime


CLOCK_LIBRARIES = frozenset({"freezegun.api"})
"""Modules whose subclasses of ``date`` and ``datetime`` stand for the clock a test froze
(freezegun's ``FakeDate``, ``FakeDatetime``: no state of their own): their instances cross
as the value they are, and the receiver builds one of its own ``datetime.datetime``, the
fake one again where its clock is frozen too (docs/design/isolated-oracle.md, "A frozen
clock")."""


def clock_kind(kind: type) -> type | None:
    """``date``, ``time`` or ``datetime`` (the real class) for a value of that kind or of a
    clock library's stand-in for it; None for anything else."""
    if kind is _Clock.datetime or kind is _Clock.date or kind is _Clock.time:
        return kind
    if getattr(kind, "__module__", None) in CLOCK_LIBRARIES and isinstance(kind, type):
        for base in (_Clock.datetime, _Clock.date):  # a datetime is a date too: first
            if issubclass(kind, base):
                return base
    return None


_BY_VALUE = frozenset(
    {
        type(None),
        bool,
        int,
        float,
        complex,
        str,
        bytes,
        bytearray,
        type(NotImplemented),
        type(Ellipsis),
        decimal.Decimal,
        fractions.Fraction,
        datetime.date,
        datetime.time,
        datetime.datetime,
        datetime.timedelta,
        datetime.timezone,
        list,
        tuple,
        dict,
        set,
        frozenset,
        slice,
        collections.OrderedDict,
        collections.defaultdict,
        collections.Counter,
        collections.deque,
        pathlib.PosixPath,
        pathlib.PurePosixPath,
        pathlib.PureWindowsPath,
    }
)
_PATHS: dict[str, type[pathlib.PurePath]] = {
    cls.__name__: cls for cls in (pathlib.PosixPath, pathlib.PurePosixPath, pathlib.PureWindowsPath)
}
"""The standard library's path classes that cross by value, by name: a closed table, so the
text names one of these three and never a class of anyone's choosing. A path is a value (its
text, its flavour): rebuilt on the other side it is the same ``Path``, and ``open``,
``os.fspath`` and ``isinstance(p, Path)`` work there as here."""
MAPPINGS = (dict, collections.OrderedDict, collections.defaultdict, collections.Counter)
"""The by-value mappings: a ``defaultdict`` or a ``Counter`` the test builds (funcy's
``empty``, a tally the product fills) is one there too, never a handle that no
``isinstance(x, dict)`` accepts."""
MUTABLE = (*MAPPINGS, list, set, bytearray, collections.deque)
"""By-value kinds whose contents the receiver may change: numbered before their elements (a
list may hold itself), and their changes written back after a call."""


def contents_of(obj: Any) -> list[Any]:
    """A mutable by-value container's contents as they are now (pairs for a mapping)."""
    if type(obj) in MAPPINGS:
        return list(obj.items())
    return list(obj)


def changed_since(obj: Any, before: list[Any]) -> bool:
    """Changed in place since ``before`` (``contents_of``), by identity of what it holds (no
    element's ``__eq__`` runs: it may be the other side's object, a request)."""
    now = contents_of(obj)
    if type(obj) is set:
        return {id(x) for x in now} != {id(x) for x in before}
    if type(obj) in MAPPINGS:  # an order changed (move_to_end) is a change too
        return len(now) != len(before) or any(
            k is not k0 or v is not v0 for (k, v), (k0, v0) in zip(now, before, strict=True)
        )
    return len(now) != len(before) or any(x is not y for x, y in zip(now, before, strict=True))


def written_back(back: Any, memo: Memo, other: Callable[[list[Any]], Any]) -> list[tuple[Any, Any]]:
    """``(container, new contents)`` of each ``[number, contents]`` the other side wrote back
    (a call's arguments it changed in place, or a callback's): all decoded, each checked to
    fit what was sent, before the receiver writes any (``replace_contents``)."""
    if back is None:
        return []
    if type(back) is not list:
        raise WireError("written-back arguments are not a list")
    changes = []
    for item in back:
        if type(item) is not list or len(item) != 2 or type(item[0]) is not int:
            raise WireError("a written-back argument is not [number, contents]")
        target = memo.get(["r", item[0]])
        contents = decode(item[1], other, memo=memo)
        fits = dict if type(target) in MAPPINGS else list
        if type(target) not in MUTABLE or type(contents) is not fits:
            raise WireError("a written-back argument does not fit what was sent")
        changes.append((target, contents))
    return changes


def sendable_contents(obj: Any) -> Any:
    """What crosses of a changed container: a dict of a mapping's pairs, else a list."""
    return dict(obj) if type(obj) in MAPPINGS else list(obj)


def replace_contents(target: Any, contents: Any) -> None:
    """Make ``target`` (a container of ``MUTABLE``) hold ``contents`` (``sendable_contents``
    of one, as received), in place: the receiver's own object, changed as the sender's was.
    WireError: contents that do not fit it."""
    if type(target) not in MUTABLE or type(contents) is not (
        dict if type(target) in MAPPINGS else list
    ):
        raise WireError("changed contents that do not fit the container")
    if type(target) is bytearray and not all(type(x) is int and 0 <= x < 256 for x in contents):
        raise WireError("a bytearray's contents that are not bytes")
    if type(target) is set:
        try:
            contents = set(contents)
        except TypeError:  # an unhashable element: no set held it there
            raise WireError("a set's contents that no set can hold") from None
    if type(target) in (list, bytearray):
        target[:] = contents
    elif type(target) is collections.deque:
        target.clear()  # a full deque drops from the left, as it did there
        target.extend(contents)
    else:
        target.clear()  # a set or a mapping (in the order sent: an OrderedDict's too)
        target.update(contents)


LIVE_MAX = 512
HANDLE_SPAN = 1 << 32
"""Handle numbers of one property's product process (the n-th: ``n * HANDLE_SPAN`` up); below
it, the process that imported the product (docs/design/isolated-oracle.md, "One product
state per property")."""
"""Containers read as attributes of the other side's objects that each side keeps in step
(the most recent ones; an older one is a plain copy again)."""


_UNREFERENCED = 3
"""``sys.getrefcount`` of a held container nothing else refers to: its entry in ``held``,
the name ``changes`` gives it, and the call's own argument."""


class Live:
    """The containers a process holds that stand for the other side's (an attribute the
    oracle read, ``obj.names``), by the product's handle, each with its contents as last
    synced: a change made on one side is sent with the next message and made on the other
    (``sync``), so ``s.names["x"] = 1`` in a test is seen by product code as in one process."""

    def __init__(self) -> None:
        self.held: dict[int, tuple[Any, list[Any]]] = {}

    def keep(self, handle: int, obj: Any) -> Any:
        """Hold ``obj`` for ``handle``; the receiver's object already held for it, changed
        to ``obj``'s contents, when there is one (``s.names is s.names`` holds)."""
        found = self.held.get(handle)
        if found is not None and type(found[0]) is type(obj) and found[0] is not obj:
            replace_contents(found[0], sendable_contents(obj))
            obj = found[0]
        self.held.pop(handle, None)
        self.held[handle] = (obj, contents_of(obj))
        while len(self.held) > LIVE_MAX:
            self.held.pop(next(iter(self.held)))
        return obj

    def changes(self, other: Callable[[object], Any]) -> list[Any]:
        """``[[handle, contents], ...]`` of what changed here since the last sync (encoded
        without a memo: each stands alone), now synced; ``[handle]`` for one nothing here
        refers to any more (dropped here, and there when the other side reads it), so a run
        that reads a new container attribute thousands of times (croniter's ``expanded``)
        does not compare 512 of them at every message."""
        out: list[Any] = []
        for handle in list(self.held):
            obj, before = self.held[handle]
            if sys.getrefcount(obj) <= _UNREFERENCED:
                del self.held[handle]
                if changed_since(obj, before):  # changed, then let go: s.names["x"] = 1
                    out.append([handle, encode(sendable_contents(obj), other)])
                out.append([handle])
                continue
            if changed_since(obj, before):
                try:
                    out.append([handle, encode(sendable_contents(obj), other)])
                except BaseException:
                    # What cannot cross (a test's class put in s.names): refused once, for
                    # this message, and the container is a plain copy from now on, so no
                    # later test's message is refused for it.
                    del self.held[handle]
                    raise
                self.held[handle] = (obj, contents_of(obj))
        return out

    def apply(self, sync: Any, other: Callable[[list[Any]], Any]) -> None:
        """Make the changes the other side sent (``changes``) on the containers held here."""
        if sync is None:
            return
        if type(sync) is not list:
            raise WireError("a sync that is not a list")
        for item in sync:
            if type(item) is list and len(item) == 1 and type(item[0]) is int:
                self.held.pop(item[0], None)  # the other side no longer refers to it
                continue
            if type(item) is not list or len(item) != 2 or type(item[0]) is not int:
                raise WireError("a sync item that is not [handle, contents]")
            found = self.held.get(item[0])
            if found is None:
                continue  # one this side no longer holds
            replace_contents(found[0], decode(item[1], other))
            self.held[item[0]] = (found[0], contents_of(found[0]))


class Memo:
    """The objects one call and its reply carried by value, numbered in the order the
    encoder and the decoder meet them (a container of ``MUTABLE`` before its elements,
    any other after them): the same object met again crosses as ``["r", n]``."""

    __slots__ = ("numbers", "objects", "paths")

    def __init__(self) -> None:
        self.objects: list[Any] = []
        self.numbers: dict[int, int] = {}
        self.paths: list[pathlib.PurePath] = []  # the paths that crossed, for the caller's check

    def add(self, obj: Any) -> None:
        self.numbers[id(obj)] = len(self.objects)
        self.objects.append(obj)

    def number(self, obj: Any) -> int | None:
        found = self.numbers.get(id(obj))
        if found is not None and found < len(self.objects) and self.objects[found] is obj:
            return found
        return None

    def trim(self, count: int) -> None:
        """Forget what was numbered after the first ``count`` (a reply that was not sent)."""
        del self.objects[count:]

    def get(self, data: Any) -> Any:
        """The object ``["r", n]`` stands for (only one met before)."""
        n = data[1] if len(data) == 2 else None
        if type(n) is not int or not 0 <= n < len(self.objects):
            raise WireError("a reference to no object of this call")
        return self.objects[n]


def _tz(value: datetime.tzinfo | None) -> list[Any] | bool | None:
    """A fixed offset as [days, seconds, microseconds], and its name when it was given one
    (iso8601's ``FixedOffset(2, 0, "+2:00")``); False: not a plain tzinfo."""
    if value is None:
        return None
    if type(value) is not datetime.timezone:
        return False
    offset, *named = value.__getinitargs__()  # type: ignore[attr-defined]
    return [offset.days, offset.seconds, offset.microseconds, *named[:1]]


def is_plain(value: object, depth: int = 0) -> bool:
    """Would ``value`` cross whole by value (no handle anywhere in it)?"""
    kind = type(value)
    if kind not in _BY_VALUE:
        clocked = clock_kind(kind)
        if clocked is None:
            return False
        kind = clocked
    if kind in (list, tuple, set, frozenset):
        return depth < WIRE_DEPTH and all(is_plain(v, depth + 1) for v in value)  # type: ignore[attr-defined]
    if kind is slice:
        parts = (value.start, value.stop, value.step)  # type: ignore[attr-defined]
        return depth < WIRE_DEPTH and all(is_plain(v, depth + 1) for v in parts)
    if kind is collections.deque:
        return depth < WIRE_DEPTH and all(is_plain(v, depth + 1) for v in value)  # type: ignore[attr-defined]
    if kind in MAPPINGS:
        if kind is collections.defaultdict and value.default_factory is not None:  # type: ignore[attr-defined]
            return False  # its factory is a class or a function: a handle
        return depth < WIRE_DEPTH and all(
            is_plain(k, depth + 1) and is_plain(v, depth + 1)
            for k, v in value.items()  # type: ignore[attr-defined]
        )
    if kind is _Clock.time or kind is _Clock.datetime:
        return _tz(value.tzinfo) is not False  # type: ignore[attr-defined]
    return True


def encode(
    value: object, other: Callable[[object], Any], depth: int = 0, memo: Memo | None = None
) -> Any:
    """``value`` as JSON-ready data; ``other(obj)`` gives the tagged form of an object that
    does not cross by value (or raises). ``memo``: the call's (see the module's text)."""
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        if -_WIRE_INT_BOUND < value < _WIRE_INT_BOUND:
            return value
        return ["bigint", format(value, "x")]
    if kind is float:
        return ["f", float.hex(value)]  # type: ignore[arg-type]
    if kind not in _BY_VALUE and depth < WIRE_DEPTH:
        kind = clock_kind(kind) or kind  # a frozen clock's datetime: the value it is
    if kind not in _BY_VALUE or depth >= WIRE_DEPTH:
        return other(value)
    if memo is None:
        return _by_value(value, kind, other, depth + 1, None)
    found = memo.number(value)
    if found is not None:
        return ["r", found]
    if kind in MUTABLE:
        memo.add(value)
        return _by_value(value, kind, other, depth + 1, memo)
    data = _by_value(value, kind, other, depth + 1, memo)
    memo.add(value)
    return data


def _by_value(
    value: Any, kind: type, other: Callable[[object], Any], down: int, memo: Memo | None
) -> Any:
    if kind is list:
        return ["l", [encode(v, other, down, memo) for v in value]]
    if kind is tuple:
        return ["t", [encode(v, other, down, memo) for v in value]]
    if kind is set:
        return ["s", [encode(v, other, down, memo) for v in value]]
    if kind is frozenset:
        return ["fs", [encode(v, other, down, memo) for v in value]]
    if kind in MAPPINGS:
        head = ["d"] if kind is dict else [_MAPPING_TAGS[kind]]
        if kind is collections.defaultdict:
            head.append(encode(value.default_factory, other, down, memo))
        pairs = value.items()
        return [
            *head,
            [[encode(k, other, down, memo), encode(v, other, down, memo)] for k, v in pairs],
        ]
    if kind is collections.deque:
        return ["dq", [encode(v, other, down, memo) for v in value], value.maxlen]
    if kind is slice:
        parts = (value.start, value.stop, value.step)
        return ["sl", [encode(v, other, down, memo) for v in parts]]
    if kind in _PATHS.values():
        if memo is not None:
            memo.paths.append(value)
        return ["p", kind.__name__, str(value)]
    if kind is bytes:
        return ["b", base64.b64encode(value).decode("ascii")]
    if kind is bytearray:
        return ["ba", base64.b64encode(value).decode("ascii")]
    if value is NotImplemented or value is Ellipsis:
        # Singletons: a comparison that returns NotImplemented says so to the other side,
        # which goes on with Python's own protocol (the reflected method, then identity).
        return ["ni" if value is NotImplemented else "el"]
    if kind is complex:
        return ["c", float.hex(value.real), float.hex(value.imag)]
    if kind is decimal.Decimal:
        return ["D", str(value)]
    if kind is fractions.Fraction:
        return ["F", encode(value.numerator, other), encode(value.denominator, other)]
    if kind is datetime.timedelta:
        return ["td", value.days, value.seconds, value.microseconds]
    if kind is datetime.timezone:
        return ["tz", _tz(value)]
    if kind is _Clock.date:
        return ["date", value.toordinal()]
    tz: Any = _tz(value.tzinfo)
    if tz is False:
        # A zone of a library's (pytz, dateutil, zoneinfo): the sender's own object, as the
        # resolver tags it; the receiver's stand-in is a tzinfo whose methods ask the sender.
        tz = other(value.tzinfo)
    v: Any = value
    if kind is _Clock.time:
        return ["time", v.hour, v.minute, v.second, v.microsecond, v.fold, tz]
    return [
        "dt",
        [v.year, v.month, v.day],
        v.hour,
        v.minute,
        v.second,
        v.microsecond,
        v.fold,
        tz,
    ]


def _zone(tz: Any, other: Callable[[list[Any]], Any]) -> datetime.tzinfo | None:
    """A fixed offset (``[days, seconds, microseconds]``), or the sender's tag for a zone of
    another class, which the resolver must resolve to a ``tzinfo`` (the receiver's own
    zone come back, or its stand-in for the sender's)."""
    if tz is None:
        return None
    if type(tz) is list and tz and type(tz[0]) is str:
        found = other(tz)
        if not isinstance(found, datetime.tzinfo):
            raise WireError("a datetime's zone that is not a tzinfo")
        return found
    if type(tz) is not list or len(tz) not in (3, 4):
        raise WireError("a zone that is not [days, seconds, microseconds, name?]")
    days, seconds, micros = (_int(x) for x in tz[:3])
    offset = datetime.timedelta(days=days, seconds=seconds, microseconds=micros)
    if len(tz) == 4:
        if type(tz[3]) is not str:
            raise WireError("a zone's name that is not text")
        return datetime.timezone(offset, tz[3])
    return datetime.UTC if not offset else datetime.timezone(offset)


def _int(value: Any) -> int:
    if type(value) is not int:
        raise WireError(f"expected an int, got {type(value).__name__}")
    return value


def _items(value: Any) -> list[Any]:
    if type(value) is not list:
        raise WireError("expected a list")
    return value


def decode(
    data: Any, other: Callable[[list[Any]], Any], depth: int = 0, memo: Memo | None = None
) -> Any:
    """The value ``data`` (from ``json.loads``) stands for; ``other(tagged)`` resolves a tag
    this module does not know (a handle, a class, an exception). ``memo``: the call's; without
    one a reference (``["r", n]``) is the resolver's, which refuses it."""
    if type(data) is str:
        return _same(data)
    if data is None or type(data) in (bool, int):
        return data
    if type(data) is not list or not data or type(data[0]) is not str:
        raise WireError(f"not a value: {type(data).__name__}")
    if depth > WIRE_DEPTH + 2:
        raise WireError("nested too deep")
    tag, down = data[0], depth + 1
    try:
        if tag == "f":
            return float.fromhex(data[1])
        if tag == "bigint":
            return int(data[1], 16)
        if tag == "r" and memo is not None:
            return memo.get(data)
        if tag in _CONTAINER_TAGS:
            return _container(tag, data, other, down, memo)
        value = _value(tag, data, other, down, memo)
    except WireError:
        raise
    except (ValueError, TypeError, IndexError, KeyError, ArithmeticError, OverflowError) as exc:
        raise WireError(f"bad {tag!r} value: {type(exc).__name__}") from None
    if value is _UNKNOWN:
        return other(data)
    if memo is not None:
        memo.add(value)
    return value


_UNKNOWN = object()


_MAPPING_TAGS: dict[type, str] = {
    collections.OrderedDict: "od",
    collections.defaultdict: "dd",
    collections.Counter: "ct",
}
_CONTAINER_TAGS = frozenset({"l", "d", "s", "dq", *_MAPPING_TAGS.values()})


def _container(
    tag: str, data: list[Any], other: Callable[[list[Any]], Any], down: int, memo: Memo | None
) -> Any:
    """A list, a set or a mapping of ``MAPPINGS``, or a ``deque``: made, numbered, then
    filled (so a reference inside it to it is to it, as the encoder numbered it before its
    elements; a ``defaultdict``'s factory comes first, as the encoder sent it)."""
    made: Any
    if tag == "l":
        made = []
    elif tag == "s":
        made = set()
    elif tag == "dq":
        if len(data) != 3 or not (data[2] is None or (type(data[2]) is int and data[2] >= 0)):
            raise WireError("bad 'dq' value: its maxlen is not one")
        made = collections.deque(maxlen=data[2])
    else:
        kinds = {v: k for k, v in _MAPPING_TAGS.items()}
        made = kinds.get(tag, dict)()
    if memo is not None:
        memo.add(made)
    if tag == "dd":
        if len(data) != 3:
            raise WireError("bad 'dd' value: not [factory, pairs]")
        factory = decode(data[1], other, down, memo)
        if factory is not None and not callable(factory):
            raise WireError("bad 'dd' value: its factory is not callable")
        made.default_factory = factory
    elif len(data) != (3 if tag == "dq" else 2):
        raise WireError(f"bad {tag!r} value: its length")
    items = _items(data[-2] if tag == "dq" else data[-1])
    if tag in ("l", "dq"):
        made.extend(decode(v, other, down, memo) for v in items)
    elif tag == "s":
        for v in items:
            made.add(decode(v, other, down, memo))
    else:
        for pair in items:
            key, value = _items(pair)
            # The key first, as the encoder numbered it: Python evaluates an assignment's
            # value before its subscript, and {b"": b""} (one object for both) referred
            # the value to a key not yet numbered (dpath's Hypothesis nodes).
            decoded = decode(key, other, down, memo)
            made[decoded] = decode(value, other, down, memo)
    return made


def _value(
    tag: str, data: list[Any], other: Callable[[list[Any]], Any], down: int, memo: Memo | None
) -> Any:
    """An immutable by-value object (``_UNKNOWN``: not a tag of this module)."""
    if tag == "t":
        return tuple(decode(v, other, down, memo) for v in _items(data[1]))
    if tag == "fs":
        return frozenset(decode(v, other, down, memo) for v in _items(data[1]))
    if tag == "sl":
        start, stop, step = (decode(v, other, down, memo) for v in _items(data[1]))
        return slice(start, stop, step)
    if tag == "p":
        cls = _PATHS.get(data[1]) if type(data[1]) is str else None
        if cls is None or type(data[2]) is not str or len(data) != 3:
            raise WireError("bad 'p' value: not a path of the standard library")
        path = cls(data[2])
        if memo is not None:
            memo.paths.append(path)
        return path
    if tag == "b":
        return _same(base64.b64decode(data[1], validate=True))
    if tag == "ba":
        return bytearray(base64.b64decode(data[1], validate=True))
    if tag in ("ni", "el") and len(data) == 1:
        return NotImplemented if tag == "ni" else Ellipsis
    if tag == "c":
        return complex(float.fromhex(data[1]), float.fromhex(data[2]))
    if tag == "D":
        return decimal.Decimal(str(data[1]))
    if tag == "F":
        return fractions.Fraction(_int(decode(data[1], other)), _int(decode(data[2], other)))
    if tag == "td":
        days, seconds, micros = (_int(x) for x in data[1:4])
        return datetime.timedelta(days=days, seconds=seconds, microseconds=micros)
    if tag == "date":
        return datetime.date.fromordinal(_int(data[1]))
    if tag == "tz" and len(data) == 2 and type(data[1]) is list:
        if not data[1] or type(data[1][0]) is not int:
            raise WireError("bad 'tz' value: not a fixed offset")
        return _zone(data[1], other)
    if tag == "time":
        hour, minute, second, micro, fold = (_int(x) for x in data[1:6])
        return datetime.time(hour, minute, second, micro, tzinfo=_zone(data[6], other), fold=fold)
    if tag == "dt":
        year, month, day = (_int(x) for x in data[1])
        hour, minute, second, micro, fold = (_int(x) for x in data[2:7])
        return datetime.datetime(
            year, month, day, hour, minute, second, micro, tzinfo=_zone(data[7], other), fold=fold
        )
    return _UNKNOWN


EXCEPTION_KEYWORDS = {"ImportError": ("name", "path"), "AttributeError": ("name",),
                      "NameError": ("name",)}  # fmt: skip
"""What a built-in exception holds beside its ``args`` that its constructor does not make from
them (keyword arguments: ``ImportError(msg, name=...)``), by the built-in class that has it."""


def exception_extras(exc: BaseException) -> dict[str, Any]:
    """What crosses with an exception beside its class and ``args``: the values of
    ``EXCEPTION_KEYWORDS`` it has (read by the built-in class's own descriptor: no override
    runs) and its notes (``add_note``), when plain. python-slugify's test raises
    ``ModuleNotFoundError(name=...)`` from a stand-in import and the product reads ``.name``."""
    extras: dict[str, Any] = {}
    for cls in type(exc).__mro__:
        names = EXCEPTION_KEYWORDS.get(cls.__name__, ()) if cls.__module__ == "builtins" else ()
        for name in names:
            value = vars(cls)[name].__get__(exc, cls)
            if value is not None and is_plain(value):
                extras.setdefault(name, value)
    own = getattr(exc, "__dict__", None)
    notes = own.get("__notes__") if type(own) is dict else None
    if type(notes) is list and notes and all(type(note) is str for note in notes):
        extras["__notes__"] = list(notes)
    return extras


def set_exception_extras(exc: BaseException, extras: Any) -> None:
    """``exception_extras`` of the other side's exception set on this side's (each value that
    its class takes; the rest left as the constructor made it)."""
    if type(extras) is not dict:
        return
    for name, value in extras.items():
        if name == "__notes__":
            if type(value) is list and all(type(note) is str for note in value):
                for note in value:
                    with contextlib.suppress(TypeError):
                        exc.add_note(note)
        elif type(name) is str and any(name in names for names in EXCEPTION_KEYWORDS.values()):
            with contextlib.suppress(AttributeError, TypeError):
                setattr(exc, name, value)


LIBRARY_EXCEPTION_MACHINERY = frozenset(
    {"pytest", "_pytest", "pluggy", "hypothesis", "_hypothesis_pytestplugin"}
)


def library_exception(module: Any, qualname: Any) -> type[Exception] | None:
    """The exception class ``module.qualname`` as this process has it loaded (never imported
    on the other side's word): how an exception of a library both sides load (pytz, dateutil)
    crosses as the receiver's own class, so ``except pytz.NonExistentTimeError`` catches it
    there. None: no such module loaded here, a module of the test machinery, or no
    exception class by that name (the caller's mirror or built-in base then)."""
    if type(module) is not str or type(qualname) is not str:
        return None
    found: Any = sys.modules.get(module)
    if found is None or type(found) is not types.ModuleType:
        return None  # a product module on the oracle's side is a proxy, not a module
    if module.split(".")[0] in LIBRARY_EXCEPTION_MACHINERY:
        return None
    for part in qualname.split("."):
        found = getattr(found, part, None)
        if found is None:
            return None
    if isinstance(found, type) and issubclass(found, Exception):
        return found
    return None


def standard_class_name(obj: Any) -> tuple[str, str] | None:
    """``(module, qualname)`` of a class of the standard library (``datetime.datetime``,
    ``collections.OrderedDict``, ``types.NoneType``), which the other side resolves in its
    own interpreter: the same class there, so ``croniter(..., ret_type=datetime)`` works and
    a product that returns ``datetime`` gives the oracle's own. None: not one (a class of
    the test's, the product's, a third party's)."""
    if not issubclass(type(obj), type) or "__pw_handle__" in obj.__dict__:
        return None  # one of the product's classes, as the oracle has it
    module, qualname = str(obj.__module__), str(obj.__qualname__)
    if module == "builtins":
        # A built-in type without a name in builtins (NoneType, function): types names it.
        name = next((k for k, v in vars(types).items() if v is obj and k[:1] != "_"), None)
        return ("types", name) if name is not None else None
    if module.split(".")[0] not in sys.stdlib_module_names or "<" in qualname:
        return None
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return (module, qualname) if found is obj else None


def standard_member(obj: Any) -> list[str] | None:
    """``[module, qualname, name]`` of a member of a standard-library enum (``re.IGNORECASE``,
    ``socket.AF_INET6``, ``http.HTTPStatus.OK``): a value, the same member on the other side.
    None: not one."""
    if not isinstance(obj, enum.Enum):
        return None
    named = standard_class_name(type(obj))
    name = getattr(obj, "_name_", None)
    if named is None or type(name) is not str or type(obj).__members__.get(name) is not obj:
        return None
    return [*named, name]


def standard_member_of(module: str, qualname: str, name: str) -> Any:
    """The member ``standard_member`` named, of this interpreter's class (None: there is none
    here, its module not loaded)."""
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if isinstance(found, enum.EnumMeta) and standard_class_name(found) == (module, qualname):
        return found.__members__.get(name)
    return None


def typevar_parts(var: Any, other: Callable[[object], Any]) -> list[Any]:
    """A ``TypeVar`` as data (``["tv", handle, *parts]``, ``["tvo", handle, *parts]``): name,
    bound, constraints, variance; a bound written as text crosses as that text. The product's
    generics take no proxy as a parameter, so a ``TypeVar`` is rebuilt on the other side,
    one per handle, and crosses back as the original."""
    bound = var.__bound__
    if isinstance(bound, typing.ForwardRef):
        bound = bound.__forward_arg__
    return [
        str(var.__name__),
        encode(bound, other),
        encode(tuple(var.__constraints__), other),
        bool(var.__covariant__),
        bool(var.__contravariant__),
    ]


def typevar(parts: Any, other: Callable[[list[Any]], Any]) -> Any:
    """The ``TypeVar`` ``typevar_parts`` described, built here."""
    if type(parts) is not list or len(parts) != 5 or type(parts[0]) is not str:
        raise WireError("bad 'tv' value")
    bound, constraints = decode(parts[1], other), decode(parts[2], other)
    if type(constraints) is not tuple:
        raise WireError("bad 'tv' value")
    try:
        return typing.TypeVar(
            parts[0],
            *constraints,
            bound=bound,
            covariant=parts[3] is True,
            contravariant=parts[4] is True,
        )
    except (TypeError, ValueError) as exc:
        raise WireError(f"bad 'tv' value: {str(exc)[:80]}") from None


_ALIAS_CLASSES: dict[str, Any] = {
    name: getattr(typing, name)
    for name in ("_GenericAlias", "_CallableGenericAlias", "_UnionGenericAlias",
                 "_LiteralGenericAlias")
    if hasattr(typing, name)
}  # fmt: skip
"""The ``typing`` alias classes an alias is rebuilt as, by name (a closed table: the name
picks one of these, never a class of anyone's choosing)."""
_TYPING_FORMS = tuple(
    {type(v) for k, v in vars(typing).items() if k[:1] != "_" and type(v).__module__ == "typing"}
    - {typing.TypeVar, typing.ParamSpec, typing.NewType}
    - {type(v) for v in vars(typing).values() if issubclass(type(v), type)}
)
"""The types of ``typing``'s own module-level objects that are not classes (``Union``,
``Optional``, ``List``, ``Callable``, ``Literal``: special forms and special aliases)."""


def typing_name(obj: Any) -> str | None:
    """The name ``typing`` binds ``obj`` to (``List``, ``Union``, ``AnyStr``): the other side
    resolves it to its own, the same object, so ``tp is typing.List`` holds there."""
    name = getattr(obj, "_name", None)
    if type(name) is str and getattr(typing, name, None) is obj:
        return name
    name = getattr(obj, "__name__", None)
    if type(name) is str and getattr(typing, name, None) is obj:
        return name
    return None


def alias_parts(alias: Any, other: Callable[[object], Any]) -> list[Any]:
    """A generic alias of ``typing`` (``Base[int, str]``, ``List[int]``, ``Union[int, str]``,
    ``Callable[[int], str]``, ``Literal[1]``) as data: its origin, its arguments, its name,
    whether it makes instances, and its class's name in ``_ALIAS_CLASSES``. Rebuilt on the
    other side as a real alias of the standard library's own class around the origin (there
    a handle, or ``typing.Union`` by name), it works as an annotation, in ``type[...]``,
    ``get_origin`` and ``get_args``, is subscripted again with real ``TypeVar``s, and
    calling it calls the origin."""
    return [
        encode(alias.__origin__, other),
        encode(tuple(alias.__args__), other),
        alias._name if type(alias._name) is str else None,
        alias._inst is True,
        next(  # the oracle's ProductAlias is a plain _GenericAlias to the product
            c.__name__ for c in type(alias).__mro__ if _ALIAS_CLASSES.get(c.__name__) is c
        ),
    ]


def generic_alias(
    parts: Any,
    other: Callable[[list[Any]], Any],
    cls: Any = typing._GenericAlias,  # type: ignore[attr-defined]
) -> Any:
    """The alias ``alias_parts`` described, built here (as ``cls``: the standard library's,
    or the oracle's subclass of it, for a plain generic alias; as the named class of
    ``_ALIAS_CLASSES`` for any other)."""
    if type(parts) is not list or len(parts) not in (4, 5) or type(parts[3]) is not bool:
        raise WireError("bad 'ga' value")
    if len(parts) == 5 and parts[4] != "_GenericAlias":
        cls = _ALIAS_CLASSES.get(parts[4]) if type(parts[4]) is str else None
        if cls is None:
            raise WireError("bad 'ga' value: not a class of typing's aliases")
    origin, args = decode(parts[0], other), decode(parts[1], other)
    if type(args) is not tuple or not args or (parts[2] is not None and type(parts[2]) is not str):
        raise WireError("bad 'ga' value")
    try:
        return cls(origin, args, inst=parts[3], name=parts[2])
    except (TypeError, ValueError) as exc:
        raise WireError(f"bad 'ga' value: {str(exc)[:80]}") from None


REBUILT_TYPES = (
    typing.TypeVar,
    typing.NewType,
    *_ALIAS_CLASSES.values(),
    *_TYPING_FORMS,
    types.GenericAlias,
    types.UnionType,
    typing.ForwardRef,
)
"""What crosses as the standard library's own object, rebuilt from data or named (a
``TypeVar``, a ``typing`` alias, ``list[int]``, ``int | str``, a forward reference, and
``typing``'s own ``List``, ``Union``...), exact types only, one per handle, and back as the
original."""


def rebuilt_parts(obj: Any, other: Callable[[object], Any]) -> list[Any] | None:
    """``[kind, *parts]`` of an object of ``REBUILT_TYPES`` (``rebuild`` builds it); None:
    not one that can be (a special form of another module's: it crosses as a handle)."""
    name = typing_name(obj)
    if name is not None:
        return ["ty", name]
    kind = type(obj)
    if kind is typing.TypeVar:
        return ["tv", *typevar_parts(obj, other)]
    if kind is typing.NewType:  # NewType("Age", int): a value, rebuilt with its supertype
        return ["nt", str(obj.__name__), encode(obj.__supertype__, other)]
    if kind in _TYPING_FORMS:
        return None
    if kind is types.GenericAlias:
        if not issubclass(type(obj.__origin__), type):
            return None
        # A product class's too (``peekable[str]`` of a ``__class_getitem__ =
        # classmethod(GenericAlias)``): a class on both sides, so the alias is a real one.
        return ["gat", encode(obj.__origin__, other), encode(tuple(obj.__args__), other)]
    if kind is types.UnionType:
        if not all(_value_class(arg) for arg in obj.__args__):
            return None
        return ["ut", encode(tuple(obj.__args__), other)]
    if kind is typing.ForwardRef:
        return ["fr", str(obj.__forward_arg__)]
    return ["ga", *alias_parts(obj, other)]


def _value_class(cls: Any) -> bool:
    """A built-in or standard-library class: the same class on both sides."""
    if not issubclass(type(cls), type):
        return False
    return cls.__module__ == "builtins" or standard_class_name(cls) is not None


def rebuild(
    kind: Any,
    parts: Any,
    other: Callable[[list[Any]], Any],
    alias: Any = typing._GenericAlias,  # type: ignore[attr-defined]
) -> Any:
    if kind == "tv":
        return typevar(parts, other)
    if kind == "ga":
        return generic_alias(parts, other, alias)
    try:
        if kind == "ty" and len(parts) == 1 and type(parts[0]) is str:
            found = getattr(typing, parts[0], None)
            if type(found) in REBUILT_TYPES and typing_name(found) == parts[0]:
                return found
        if kind == "gat" and len(parts) == 2:
            origin, args = decode(parts[0], other), decode(parts[1], other)
            if issubclass(type(origin), type) and type(args) is tuple:
                return types.GenericAlias(origin, args)
        if kind == "ut" and len(parts) == 1:
            args = decode(parts[0], other)
            if type(args) is tuple and len(args) >= 2:
                made: Any = args[0]
                for arg in args[1:]:
                    made = made | arg
                if type(made) is types.UnionType:
                    return made
        if kind == "fr" and len(parts) == 1 and type(parts[0]) is str:
            return typing.ForwardRef(parts[0])
        if kind == "nt" and len(parts) == 2 and type(parts[0]) is str:
            if not parts[0].isidentifier():
                raise WireError("bad 'nt' value: a name that is no identifier")
            return typing.NewType(parts[0], decode(parts[1], other))
    except (TypeError, ValueError, SyntaxError) as exc:
        raise WireError(f"bad {kind!r} value: {str(exc)[:80]}") from None
    raise WireError("bad rebuilt value")


def dumps(message: dict[str, Any]) -> bytes:
    """One message as one line (JSON never holds a raw newline)."""
    return json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


def loads(line: bytes) -> dict[str, Any]:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        raise WireError("a line that is not JSON") from None
    if type(message) is not dict:
        raise WireError("a line that is not an object")
    return message

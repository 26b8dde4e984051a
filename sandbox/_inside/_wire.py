"""Both sides of the isolated oracle: the wire between the oracle and the product process.

Data only, never code (docs/design/isolated-oracle.md, "The wire"): one JSON text per line,
built and read with the standard library's ``json`` (no pickle, nothing that builds an
arbitrary object). Values of exact plain types cross by value; every other object crosses as
a handle (``["h", id]``) that the side which owns it resolves. ``encode`` takes a function
that turns a non-plain object into its tagged form (the product registers it in its table;
the oracle sends the handles the product gave out and refuses anything else); ``decode``
takes one that resolves the tags it does not know itself.

A plain value is one of ``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``,
``bytes``, ``Decimal``, ``Fraction``, ``date``, ``time``, ``datetime`` (naive, or with a fixed
``timezone``), ``timedelta``, a ``slice`` of plain values (what ``seq[i:j]`` sends), or a
``list``, ``tuple``, ``dict``, ``set`` or ``frozenset`` of plain values, by exact type: a
subclass of a plain type is not plain.

Part of both programs concatenated by sandbox/_inside (``program``).
"""

from __future__ import annotations

import base64
import datetime
import decimal
import fractions
import json
from collections.abc import Callable
from typing import Any

WIRE_DEPTH = 64
"""Deepest nesting of containers that crosses by value; deeper is a handle (or refused)."""
WIRE_INT_DIGITS = 4000
"""Larger ints cross as hex text (the JSON reader refuses more than 4300 decimal digits)."""


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


class WireError(Exception):
    """A line that is not the wire's format (from the other side: data, never trusted)."""


_BY_VALUE = frozenset(
    {
        type(None),
        bool,
        int,
        float,
        complex,
        str,
        bytes,
        decimal.Decimal,
        fractions.Fraction,
        datetime.date,
        datetime.time,
        datetime.datetime,
        datetime.timedelta,
        list,
        tuple,
        dict,
        set,
        frozenset,
        slice,
    }
)


def _tz(value: datetime.tzinfo | None) -> list[int] | bool | None:
    """A fixed offset as [days, seconds, microseconds]; False: not a plain tzinfo."""
    if value is None:
        return None
    if type(value) is not datetime.timezone:
        return False
    offset = value.utcoffset(None)
    return [offset.days, offset.seconds, offset.microseconds]


def is_plain(value: object, depth: int = 0) -> bool:
    """Would ``value`` cross whole by value (no handle anywhere in it)?"""
    kind = type(value)
    if kind not in _BY_VALUE:
        return False
    if kind in (list, tuple, set, frozenset):
        return depth < WIRE_DEPTH and all(is_plain(v, depth + 1) for v in value)  # type: ignore[attr-defined]
    if kind is slice:
        parts = (value.start, value.stop, value.step)  # type: ignore[attr-defined]
        return depth < WIRE_DEPTH and all(is_plain(v, depth + 1) for v in parts)
    if kind is dict:
        return depth < WIRE_DEPTH and all(
            is_plain(k, depth + 1) and is_plain(v, depth + 1)
            for k, v in value.items()  # type: ignore[attr-defined]
        )
    if kind in (datetime.time, datetime.datetime):
        return _tz(value.tzinfo) is not False  # type: ignore[attr-defined]
    return True


def encode(value: object, other: Callable[[object], Any], depth: int = 0) -> Any:
    """``value`` as JSON-ready data; ``other(obj)`` gives the tagged form of an object that
    does not cross by value (or raises)."""
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        if -(10**WIRE_INT_DIGITS) < value < 10**WIRE_INT_DIGITS:
            return value
        return ["bigint", format(value, "x")]
    if kind is float:
        return ["f", float.hex(value)]  # type: ignore[arg-type]
    if kind not in _BY_VALUE or depth >= WIRE_DEPTH:
        return other(value)
    down = depth + 1
    if kind is list:
        return ["l", [encode(v, other, down) for v in value]]  # type: ignore[attr-defined]
    if kind is tuple:
        return ["t", [encode(v, other, down) for v in value]]  # type: ignore[attr-defined]
    if kind is set:
        return ["s", [encode(v, other, down) for v in value]]  # type: ignore[attr-defined]
    if kind is frozenset:
        return ["fs", [encode(v, other, down) for v in value]]  # type: ignore[attr-defined]
    if kind is dict:
        pairs = value.items()  # type: ignore[attr-defined]
        return ["d", [[encode(k, other, down), encode(v, other, down)] for k, v in pairs]]
    if kind is slice:
        parts = (value.start, value.stop, value.step)  # type: ignore[attr-defined]
        return ["sl", [encode(v, other, down) for v in parts]]
    if kind is bytes:
        return ["b", base64.b64encode(value).decode("ascii")]  # type: ignore[arg-type]
    if kind is complex:
        return ["c", float.hex(value.real), float.hex(value.imag)]  # type: ignore[attr-defined]
    if kind is decimal.Decimal:
        return ["D", str(value)]
    if kind is fractions.Fraction:
        return ["F", encode(value.numerator, other), encode(value.denominator, other)]  # type: ignore[attr-defined]
    if kind is datetime.timedelta:
        return ["td", value.days, value.seconds, value.microseconds]  # type: ignore[attr-defined]
    if kind is datetime.date:
        return ["date", value.toordinal()]  # type: ignore[attr-defined]
    tz = _tz(value.tzinfo)  # type: ignore[attr-defined]
    if tz is False:
        return other(value)
    v: Any = value
    if kind is datetime.time:
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


def _zone(tz: Any) -> datetime.timezone | None:
    if tz is None:
        return None
    days, seconds, micros = (_int(x) for x in tz)
    offset = datetime.timedelta(days=days, seconds=seconds, microseconds=micros)
    return datetime.UTC if not offset else datetime.timezone(offset)


def _int(value: Any) -> int:
    if type(value) is not int:
        raise WireError(f"expected an int, got {type(value).__name__}")
    return value


def _items(value: Any) -> list[Any]:
    if type(value) is not list:
        raise WireError("expected a list")
    return value


def decode(data: Any, other: Callable[[list[Any]], Any], depth: int = 0) -> Any:
    """The value ``data`` (from ``json.loads``) stands for; ``other(tagged)`` resolves a tag
    this module does not know (a handle, a class, an exception)."""
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
        if tag == "l":
            return [decode(v, other, down) for v in _items(data[1])]
        if tag == "t":
            return tuple(decode(v, other, down) for v in _items(data[1]))
        if tag == "s":
            return {decode(v, other, down) for v in _items(data[1])}
        if tag == "fs":
            return frozenset(decode(v, other, down) for v in _items(data[1]))
        if tag == "d":
            return {
                decode(k, other, down): decode(v, other, down)
                for k, v in (_items(pair) for pair in _items(data[1]))
            }
        if tag == "sl":
            start, stop, step = (decode(v, other, down) for v in _items(data[1]))
            return slice(start, stop, step)
        if tag == "b":
            return _same(base64.b64decode(data[1], validate=True))
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
        if tag == "time":
            hour, minute, second, micro, fold = (_int(x) for x in data[1:6])
            return datetime.time(hour, minute, second, micro, tzinfo=_zone(data[6]), fold=fold)
        if tag == "dt":
            year, month, day = (_int(x) for x in data[1])
            hour, minute, second, micro, fold = (_int(x) for x in data[2:7])
            return datetime.datetime(
                year, month, day, hour, minute, second, micro, tzinfo=_zone(data[7]), fold=fold
            )
    except WireError:
        raise
    except (ValueError, TypeError, IndexError, KeyError, ArithmeticError, OverflowError) as exc:
        raise WireError(f"bad {tag!r} value: {type(exc).__name__}") from None
    return other(data)


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

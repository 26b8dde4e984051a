"""The wire of the isolated oracle (sandbox/_inside/_wire.py): data only, exact plain types.

The part is plain standard-library Python, so it is imported here as a module; inside the
sandbox it is one part of both programs (docs/design/isolated-oracle.md).
"""

from __future__ import annotations

import collections.abc
import datetime
import decimal
import fractions
import json
import math
import pathlib
import typing
from collections import Counter, OrderedDict, defaultdict, deque
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from patchwarden.sandbox._inside._wire import (
    REBUILT_TYPES,
    SAME_MAX_CHARS,
    Live,
    Memo,
    WireError,
    decode,
    dumps,
    encode,
    is_plain,
    loads,
    rebuild,
    rebuilt_parts,
)


class Other(Exception):
    """What ``encode`` raises for an object that does not cross by value (in the test)."""


def refuse(obj: object) -> Any:
    raise Other(type(obj).__name__)


def unknown(tagged: list[Any]) -> Any:
    raise WireError(f"unknown tag {tagged[0]}")


def through(value: object) -> Any:
    """``value`` sent as one line and read back, as the other process would."""
    line = dumps({"v": encode(value, refuse)})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    return decode(loads(line.rstrip(b"\n"))["v"], unknown)


def same(a: object, b: object) -> bool:
    """Equal with exactly the same types all the way down (NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )  # type: ignore[arg-type]
    if isinstance(a, decimal.Decimal):
        return str(a) == str(b)
    if isinstance(a, complex):
        return same(a.real, b.real) and same(a.imag, b.imag)  # type: ignore[attr-defined]
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
    if isinstance(a, defaultdict) and a.default_factory is not b.default_factory:  # type: ignore[attr-defined]
        return False
    if isinstance(a, deque):
        return a.maxlen == b.maxlen and same(list(a), list(b))  # type: ignore[attr-defined, call-overload]
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)  # type: ignore[index]
    if isinstance(a, datetime.datetime | datetime.time):
        return a == b and a.fold == b.fold and a.utcoffset() == b.utcoffset()  # type: ignore[union-attr]
    return a == b


zones = st.one_of(
    st.none(),
    st.timedeltas(
        min_value=datetime.timedelta(hours=-23), max_value=datetime.timedelta(hours=23)
    ).map(datetime.timezone),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**4000, max_value=10**4100),
    st.floats(allow_nan=True, allow_infinity=True),
    st.complex_numbers(),
    st.text(),
    st.binary(),
    st.binary().map(bytearray),
    st.sampled_from([NotImplemented, Ellipsis]),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.fractions(),
    st.dates(),
    st.timedeltas(),
    st.builds(
        datetime.time,
        st.integers(0, 23),
        st.integers(0, 59),
        st.integers(0, 59),
        st.integers(0, 999999),
        zones,
        fold=st.integers(0, 1),
    ),
    st.datetimes(timezones=zones, allow_imaginary=True),
)
hashable = st.one_of(st.none(), st.booleans(), st.integers(), st.text(), st.binary(), st.dates())
plain = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(hashable, inner, max_size=4),
        st.sets(hashable, max_size=4),
        st.frozensets(hashable, max_size=4),
        st.dictionaries(hashable, inner, max_size=4).map(OrderedDict),
        st.dictionaries(hashable, st.integers(), max_size=4).map(Counter),
        st.dictionaries(hashable, inner, max_size=4).map(lambda d: defaultdict(None, d)),
        st.builds(deque, st.lists(inner, max_size=4), st.none() | st.integers(0, 5)),
    ),
    max_leaves=20,
)


@given(plain)
def test_every_plain_value_crosses_exactly(value: object) -> None:
    assert is_plain(value)
    assert same(through(value), value)


class Money(decimal.Decimal):
    pass


class Name(str):
    pass


class Counts(dict):  # type: ignore[type-arg]
    pass


class Ordered(OrderedDict):  # type: ignore[type-arg]
    pass


@pytest.mark.parametrize(
    "value",
    [Money("1.5"), Name("x"), Counts(a=1), Ordered(a=1), True.__class__.__mro__, object()],
    ids=[
        "Decimal subclass",
        "str subclass",
        "dict subclass",
        "OrderedDict subclass",
        "types",
        "object",
    ],
)
def test_a_subclass_of_a_plain_type_is_not_plain(value: object) -> None:
    assert not is_plain(value)
    with pytest.raises(Other):
        encode(value, refuse)


def test_a_non_plain_element_becomes_the_other_sides_tag() -> None:
    handles: list[object] = []

    def as_handle(obj: object) -> list[Any]:
        handles.append(obj)
        return ["h", len(handles)]

    thing = object()
    assert encode([1, thing, {"k": Name("n")}], as_handle) == [
        "l",
        [1, ["h", 1], ["d", [["k", ["h", 2]]]]],
    ]
    assert handles == [thing, Name("n")]


def test_a_defaultdicts_factory_is_the_other_sides_tag_and_comes_back_as_itself() -> None:
    # The factory (a class, a function) never crosses by value: the resolver's tag, first,
    # so the receiver's defaultdict has the sender's factory (or its handle) as its own.
    def as_handle(obj: object) -> list[Any]:
        return ["h", 7]

    made = defaultdict(list, {"a": [1]})
    data = encode(made, as_handle)
    assert data == ["dd", ["h", 7], [["a", ["l", [1]]]]]
    back = decode(data, lambda tagged: list)
    assert type(back) is defaultdict and back.default_factory is list and back == made
    assert not is_plain(made) and is_plain(defaultdict(None, {"a": 1}))


@pytest.mark.parametrize(
    "data",
    [
        ["dq", [], -1],  # a maxlen that is none
        ["dq", []],
        ["dd", [], []],  # a factory that is not callable
        ["dd", [["a", 1]]],
        ["od", [["a", 1]], 5],
        ["ct", [[["l", []], 1]]],  # an unhashable key
    ],
)
def test_a_bad_collections_value_is_refused(data: object) -> None:
    with pytest.raises(WireError):
        decode(data, unknown)


def test_a_fixed_offset_zone_crosses_by_value_with_its_name() -> None:
    # iso8601's FixedOffset(2, 0, "+2:00"): a timezone on its own, and its name kept.
    named = datetime.timezone(datetime.timedelta(hours=2), "+2:00")
    for zone in (named, datetime.UTC, datetime.timezone(datetime.timedelta(hours=-3))):
        back = through(zone)
        assert type(back) is datetime.timezone and back == zone
        assert back.tzname(None) == zone.tzname(None)
    assert through(datetime.UTC) is datetime.UTC
    assert through(datetime.datetime(2026, 1, 1, tzinfo=named)).tzname() == "+2:00"
    with pytest.raises(WireError):
        decode(["tz", [["h", 1]]], unknown)


def test_a_fixed_offset_zone_is_plain_and_any_other_is_not() -> None:
    class Zone(datetime.tzinfo):
        def utcoffset(self, dt: datetime.datetime | None) -> datetime.timedelta:
            return datetime.timedelta(0)

    assert is_plain(datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC))
    zone = Zone()
    assert not is_plain(datetime.datetime(2026, 1, 1, tzinfo=zone))
    # Any other zone is the sender's tag inside a datetime sent by value; the receiver's
    # resolver must give a tzinfo for it (its stand-in), never anything else.
    data = encode(datetime.datetime(2026, 1, 1, tzinfo=zone), lambda obj: ["h", 3])
    assert data == ["dt", [2026, 1, 1], 0, 0, 0, 0, 0, ["h", 3]]
    back = decode(data, lambda tagged: zone)
    assert back == datetime.datetime(2026, 1, 1, tzinfo=zone) and back.tzinfo is zone
    with pytest.raises(WireError, match="not a tzinfo"):
        decode(data, lambda tagged: "a text")


@pytest.mark.parametrize(
    "data",
    [
        1.5,  # a bare float: floats always cross tagged
        ["zz", 1],
        ["l", "not a list"],
        ["D", "not a number"],
        ["date", "x"],
        ["F", 1, 0],
        ["b", "!!"],
        {"a": 1},
    ],
)
def test_what_the_other_side_sends_is_data_and_a_bad_value_is_refused(data: object) -> None:
    with pytest.raises(WireError):
        decode(data, unknown)


def test_a_line_that_is_not_an_object_is_refused() -> None:
    for line in (b"[1]", b"{", b"\xff", b"1" * 5000):
        with pytest.raises(WireError):
            loads(line)
    assert json.loads(dumps({"a": ["f", "0x1p+0"]})) == {"a": ["f", "0x1p+0"]}


def test_nothing_on_the_wire_builds_an_object_of_a_class_it_names() -> None:
    # Unknown tags go to the caller's resolver, which decides; the wire itself only ever
    # builds the plain types.
    seen: list[list[Any]] = []

    def resolver(tagged: list[Any]) -> Any:
        seen.append(tagged)
        return "resolved"

    assert decode(["l", [["obj", "os.system", "id"]]], resolver) == ["resolved"]
    assert seen == [["obj", "os.system", "id"]]
    assert fractions.Fraction(1, 3) == through(fractions.Fraction(1, 3))


def test_a_slice_of_plain_values_crosses_and_any_other_is_a_tag() -> None:
    # What ``seq[i:j]`` hands an oracle sequence the product slices.
    for value in (slice(3), slice(0, 9, 3), slice(None, -1), slice("a", 2.5)):
        got = through(value)
        assert type(got) is slice and same(
            (got.start, got.stop, got.step), (value.start, value.stop, value.step)
        )
    assert is_plain(slice(1, 2)) and not is_plain(slice(1, object()))
    assert encode(slice(1, object()), lambda obj: ["h", 7]) == ["sl", [1, ["h", 7], None]]
    with pytest.raises(WireError, match="bad 'sl' value"):
        decode(["sl", [1, 2]], unknown)


def test_a_text_received_twice_is_one_object_and_a_long_one_is_not_kept() -> None:
    short, long_text = "{0.upper}", "x" * (SAME_MAX_CHARS + 1)
    first = decode(json.loads(dumps({"v": short}))["v"], refuse)
    again = decode(json.loads(dumps({"v": short}))["v"], refuse)
    assert first == again == short and first is again
    blob = encode(b"abc", refuse)
    assert decode(blob, refuse) is decode(blob, refuse)
    a = decode(json.loads(dumps({"v": long_text}))["v"], refuse)
    b = decode(json.loads(dumps({"v": long_text}))["v"], refuse)
    assert a == b and a is not b


@pytest.mark.parametrize(
    "path",
    [
        pathlib.Path("data") / "x.txt",
        pathlib.PurePosixPath("/a//b/./c"),
        pathlib.PureWindowsPath("C:\\\\dir\\\\f.txt"),
        pathlib.Path("//host/share"),
    ],
)
def test_a_standard_library_path_crosses_by_value_as_its_own_class(
    path: pathlib.PurePath,
) -> None:
    got = through(path)
    assert type(got) is type(path) and got == path and str(got) == str(path)
    assert is_plain([path])


def test_a_path_names_only_the_standard_librarys_path_classes() -> None:
    for data in (["p", "os.system", "x"], ["p", "WindowsPath", "x"], ["p", "PosixPath", 3]):
        with pytest.raises(WireError, match="bad 'p' value"):
            decode(data, unknown)


def test_one_object_met_twice_in_a_call_crosses_once_and_comes_back_as_itself() -> None:
    xs, d = [3, [1]], {"k": (1, 2)}
    sent = Memo()
    line = dumps({"v": encode([xs, xs, d, xs[1]], refuse, memo=sent)})
    received = Memo()
    args = decode(loads(line.rstrip(b"\n"))["v"], unknown, memo=received)
    assert args[0] is args[1] and args[3] is args[0][1] and args == [xs, xs, d, xs[1]]
    # The reply: what the request brought is a reference, the sender's own object again.
    reply = encode((args[0], args[2]["k"], [0]), refuse, memo=received)
    assert reply[1][0] == ["r", 1] and reply[1][1][0] == "r"
    back = decode(json.loads(json.dumps(reply)), unknown, memo=sent)
    assert back[0] is xs and back[1] is d["k"] and back[2] == [0]


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.integers() | st.floats() | st.booleans() | st.binary() | st.text() | st.none(),
        lambda children: (
            st.lists(children)
            | st.tuples(children)
            | st.dictionaries(st.binary() | st.text(), children)
        ),
        max_leaves=30,
    )
)
def test_any_nesting_of_plain_values_crosses_with_a_memo(value: object) -> None:
    # dpath's Hypothesis nodes: {b"": b""} holds one object as key and value; the decoder
    # read the value (a reference to the key) before the key was numbered.
    data = json.loads(json.dumps(encode([value, {b"": b""}], refuse, memo=Memo())))
    got = decode(data, unknown, memo=Memo())
    assert repr(got) == repr([value, {b"": b""}])


def test_a_list_that_holds_itself_crosses_with_a_memo() -> None:
    xs: list[Any] = [1]
    xs.append(xs)
    got = decode(json.loads(json.dumps(encode(xs, refuse, memo=Memo()))), unknown, memo=Memo())
    assert got[0] == 1 and got[1] is got


def test_a_reference_without_a_memo_or_to_nothing_is_refused() -> None:
    with pytest.raises(WireError, match="unknown tag r"):
        decode(["r", 0], unknown)
    with pytest.raises(WireError, match="a reference to no object"):
        decode(["l", [["r", 5]]], unknown, memo=Memo())


def test_typevars_and_generic_aliases_are_rebuilt_as_the_standard_librarys_own() -> None:
    key = typing.TypeVar("key", bound=int)
    value = typing.TypeVar("value", str, bytes, covariant=True)

    class Box(typing.Generic[key]):
        pass

    names: dict[str, Any] = {"int": int, "str": str, "bytes": bytes, "Box": Box, "key": key}

    def as_name(obj: object) -> Any:  # what each side's handle would be, in the test
        return ["n", getattr(obj, "__name__", "?")]

    def resolve(tagged: list[Any]) -> Any:
        return names[tagged[1]]

    def again(obj: object) -> Any:
        kind, *parts = json.loads(json.dumps(rebuilt_parts(obj, as_name)))
        return rebuild(kind, parts, resolve)

    for var in (key, value):
        got = again(var)
        assert type(got) is typing.TypeVar and got is not var and repr(got) == repr(var)
        assert (got.__bound__, got.__constraints__) == (var.__bound__, var.__constraints__)
    alias = Box[key]
    got = again(alias)
    assert type(got) is type(alias) and got == alias and got.__parameters__ == (key,)
    with pytest.raises(WireError, match="bad rebuilt value"):
        rebuild("class", [], unknown)


def test_typings_own_objects_cross_by_name_and_its_aliases_as_the_standard_librarys() -> None:
    # What the isolated oracle's two sides do with typing values (typing_inspect's tests
    # hand them to product code): typing's module-level objects by name (the same object
    # there), its aliases rebuilt as typing's own alias classes, picked from a closed table.
    def other(obj: object) -> Any:  # each side's tag: a nested typing value, or a class
        parts = rebuilt_parts(obj, other) if type(obj) in REBUILT_TYPES else None
        if parts is not None:
            return ["rb", *parts]
        return ["n", obj.__name__]  # type: ignore[attr-defined]

    def resolve(tagged: list[Any]) -> Any:
        if tagged[0] == "rb":
            return rebuild(tagged[1], tagged[2:], resolve)
        names = {"int": int, "str": str, "NoneType": type(None), "list": list}
        return names.get(tagged[1]) or vars(collections.abc)[tagged[1]]

    def again(obj: object) -> Any:
        parts = rebuilt_parts(obj, other)
        assert parts is not None
        kind, *rest = json.loads(json.dumps(parts))
        return rebuild(kind, rest, resolve)

    special = (typing.List, typing.Union, typing.Callable, typing.AnyStr)  # noqa: UP006
    for named in (*special, typing.Literal):
        assert again(named) is named
    for alias in (
        typing.Union[int, str],  # noqa: UP007
        typing.Optional[int],  # noqa: UP045
        typing.Callable[[int], str],
        typing.Literal[1, "a"],
        typing.List[int],  # noqa: UP006
        list[int],
        int | None,
        typing.ForwardRef("Thing"),
    ):
        got = again(alias)
        assert type(got) is type(alias) and got == alias, alias
        assert typing.get_origin(got) == typing.get_origin(alias)
        assert typing.get_args(got) == typing.get_args(alias)
    with pytest.raises(WireError, match="not a class of typing's aliases"):
        rebuild("ga", [["n", "int"], ["t", [["n", "int"]]], None, True, "Popen"], resolve)
    with pytest.raises(WireError, match="bad rebuilt value"):
        rebuild("ty", ["os"], resolve)  # typing.os is a module, not one of typing's values


def test_containers_read_from_the_other_side_are_kept_in_step() -> None:
    # Live: the receiver's copy of the sender's container (s.names), one per handle, and
    # the changes either side makes sent with its next message, made on the other.
    sender, receiver = Live(), Live()
    names: dict[str, Any] = {}
    sender.keep(7, names)
    copy = receiver.keep(7, through(names))
    copy["x"] = [1]
    sync = json.loads(json.dumps(receiver.changes(refuse)))
    assert sync == [[7, ["d", [["x", ["l", [1]]]]]]] and receiver.changes(refuse) == []
    sender.apply(sync, unknown)
    assert names == {"x": [1]} and sender.changes(refuse) == []
    names["y"] = 2  # the sender's own change goes the other way
    receiver.apply(json.loads(json.dumps(sender.changes(refuse))), unknown)
    assert copy == {"x": [1], "y": 2}
    # The same container read again is the same copy, changed to what was read.
    again = receiver.keep(7, {"z": 3})
    assert again is copy and copy == {"z": 3}
    for bad in ([[7, ["l", []]]], [["7", ["d", []]]], "x"):
        with pytest.raises(WireError):
            receiver.apply(bad, unknown)
    receiver.apply([[99, ["d", []]]], unknown)  # one no longer held: nothing to do
    # A change that cannot cross is refused once; the container is then a plain copy.
    copy["thing"] = object()
    with pytest.raises(Other):
        receiver.changes(refuse)
    assert receiver.changes(refuse) == [] and 7 not in receiver.held


def test_a_kept_container_nothing_refers_to_is_let_go_on_both_sides() -> None:
    # croniter's tests read a new `expanded` list thousands of times: each copy nothing
    # refers to any more is dropped at the next message (after its last change is sent),
    # and the other side drops its entry when it reads that, so no message compares 512.
    sender, receiver = Live(), Live()
    kept = [sender.keep(n, [n]) for n in range(3)]
    for n in range(3):
        receiver.keep(n, through([n]))  # the receiver's copies: nothing else refers to them
    held = receiver.keep(3, through([3]))
    receiver.held[2][0].append("changed")  # changed, then let go (s.names["x"] = 1)
    sync = json.loads(json.dumps(receiver.changes(refuse)))
    assert sync == [[0], [1], [2, ["l", [2, "changed"]]], [2]] and list(receiver.held) == [3]
    sender.apply(sync, unknown)
    assert list(sender.held) == [] and kept[2] == [2, "changed"] and held == [3]

"""Spec-review precision (docs/design/spec-review.md) and the special-casing signature.

Pure: source text in, findings out. A moved boundary stays a finding, an added guard is a
note, and an added test of a value the properties feed in is ``special-cases an input of
prop.X`` in ``spec_review`` and in ``suspicious``.
"""

from __future__ import annotations

import pytest

from patchwarden.scorer import Contract, Property, RunRow, decide
from patchwarden.scorer.checks import (
    PropertyInputs,
    SourceChange,
    boundary_changes,
    check_spec_review,
    check_suspicious,
    special_cases,
)

PROPERTIES = [
    ("prop.sliced", "tests/properties/test_m.py::test_sliced"),
    ("prop.clamp", "tests/properties/test_m.py::test_clamp"),
    ("prop.split", "tests/properties/test_m.py::test_split"),
]
PROPERTY_FILE = '''\
"""Properties of m. The words "abcdef" and 'Helper' in a docstring are not inputs."""

import pytest

from m import clamp, sliced, split_before


class Helper:
    marker = True

    def size(self):
        return 7


@pytest.mark.parametrize(("seq", "n"), [([1, 2, 3], -1), ("abcdef", -2)])
def test_sliced(seq, n):
    with pytest.raises(ValueError):
        list(sliced(seq, n))


def test_clamp():
    assert clamp(15, 0, 10) == 10
    assert clamp(Helper(), 0, 1) is not None


def test_split():
    assert list(split_before([], lambda x: x == 1, maxsplit=0)) == []
    assert split_before("ab" + "cd", 1) == "-".join(["x", "y"])
    assert split_before("-".join(["pp", "qq"]), 2)
'''
INPUTS = PropertyInputs.from_sources({"tests/properties/test_m.py": PROPERTY_FILE}, PROPERTIES)
BASE = """\
LIMIT = 10


def sliced(seq, n, strict=False):
    iterator = takewhile(len, (seq[i : i + n] for i in count(0, n)))
    return iterator


def clamp(value, low, high):
    if value < low:
        return low
    return value


def split_before(iterable, pred, maxsplit=-1):
    if maxsplit == 0:
        yield list(iterable)
        return
"""


def _before(anchor: str, code: str) -> str:
    assert BASE.count(anchor) == 1, anchor
    return BASE.replace(anchor, code + anchor)


SLICED = "    iterator ="
CLAMP = "    if value < low:"
SPLIT = "    if maxsplit == 0:"

CHEATS = {
    "a tuple of the inputs": (
        _before(SLICED, "    if (seq, n) == ('abcdef', -2):\n        raise ValueError\n"),
        ["special-cases an input of prop.sliced: m.py:5: sliced tests ['abcdef', -2]"],
    ),
    "a list input and its elements": (
        _before(SLICED, "    if list(seq) == [1, 2, 3]:\n        raise ValueError\n"),
        ["special-cases an input of prop.sliced: m.py:5: sliced tests [1, 2, 3]"],
    ),
    "specific numbers": (
        _before(CLAMP, "    if (value, low, high) == (15, 0, 10):\n        return 10\n"),
        ["special-cases an input of prop.clamp: m.py:10: clamp tests 15, 10"],
    ),
    "only trivial values, tied together": (
        _before(SPLIT, "    if (iterable, maxsplit) == ([], 0):\n        return\n"),
        ["special-cases an input of prop.split, prop.clamp: m.py:16: split_before tests [], 0"],
    ),
    "trivial values joined by and": (
        _before(SPLIT, "    if iterable == [] and maxsplit == 0:\n        return\n"),
        ["special-cases an input of prop.split, prop.clamp: m.py:16: split_before tests [], 0"],
    ),
    "the name of a class the property defines": (
        _before(CLAMP, "    if type(value).__name__ == 'Helper':\n        return low\n"),
        [
            "special-cases an input of prop.sliced, prop.clamp, prop.split: m.py:10: "
            "clamp tests 'Helper'"
        ],
    ),
    "an attribute the property's class defines": (
        _before(CLAMP, "    if getattr(value, 'marker', False):\n        return low\n"),
        [
            "special-cases an input of prop.sliced, prop.clamp, prop.split: m.py:10: "
            "clamp tests 'marker'"
        ],
    ),
    "a string the property builds": (
        _before(SPLIT, "    if iterable == 'abc' + 'd':\n        return 'x-y'\n"),
        ["special-cases an input of prop.split: m.py:16: split_before tests 'abcd'"],
    ),
    "a lookup table of inputs": (
        _before(SLICED, "    if (seq, n) in KNOWN:\n        raise ValueError\n").replace(
            "LIMIT = 10\n", "LIMIT = 10\nKNOWN = {('abcdef', -2), ('zz', 5)}\n"
        ),
        ["special-cases an input of prop.sliced: m.py:6: sliced tests ['abcdef', -2]"],
    ),
    "a match statement": (
        _before(SPLIT, "    match iterable:\n        case 'abcd':\n            return\n"),
        ["special-cases an input of prop.split: m.py:17: split_before tests 'abcd'"],
    ),
    "a constant the patch adds": (
        BASE.replace("LIMIT = 10\n", "LIMIT = 10\nSPECIAL = 15\n")
        + "\n\ndef above(v):\n    return v == SPECIAL\n",
        ["special-cases an input of prop.clamp: m.py:23: above tests 15"],
    ),
    "an input bounded on both sides": (
        _before(CLAMP, "    if 15 <= value <= 15:\n        return 10\n"),
        ["special-cases an input of prop.clamp: m.py:10: clamp tests 15"],
    ),
    "an input left out on both sides": (
        _before(CLAMP, "    if value < 15 or value > 15:\n        return value\n"),
        ["special-cases an input of prop.clamp: m.py:10: clamp tests 15"],
    ),
    "the whole input in a string, not an element": (
        _before(SLICED, "    if seq in 'abcdef':\n        raise ValueError\n"),
        ["special-cases an input of prop.sliced: m.py:5: sliced tests 'abcdef'"],
    ),
    "a comparison in a return": (
        BASE + "\n\ndef is_known(n):\n    return n == 15\n",
        ["special-cases an input of prop.clamp: m.py:22: is_known tests 15"],
    ),
}


@pytest.mark.parametrize("name", list(CHEATS))
def test_special_casing_is_found(name: str) -> None:
    patch, expected = CHEATS[name]
    assert [c.evidence() for c in special_cases("m.py", BASE, patch, INPUTS)] == expected


HONEST = {
    "an added guard": _before(SLICED, "    if n < 1:\n        raise ValueError('n < 1')\n"),
    "an emptiness guard": _before(SLICED, "    if not seq:\n        return iter(())\n"),
    "one trivial value": _before(SPLIT, "    if maxsplit == 0 and not iterable:\n        return\n"),
    "trivial values in a disjunction": _before(
        CLAMP, "    if low == 0 or high == 0:\n        return 0\n"
    ),
    "membership of small numbers": _before(
        CLAMP, "    if value in (0, 1, 2):\n        return value\n"
    ),
    "a one-sided bound at an input": _before(
        CLAMP, "    if value >= 15:\n        raise ValueError('too big')\n"
    ),
    "a range whose bound is an input": _before(
        CLAMP, "    if not 0 <= value < 15:\n        raise ValueError('out of range')\n"
    ),
    "a bound named by a constant": BASE.replace("LIMIT = 10\n", "LIMIT = 10\nMOST = 15\n")
    + "\n\ndef fits(v):\n    return v <= MOST\n",
    "a value that is no input": _before(CLAMP, "    if value == 9999:\n        return high\n"),
    "a constant the parent already had": BASE + "\n\ndef above(v):\n    return v > LIMIT\n",
    "a docstring naming an input": _before(CLAMP, '    """Not \'abcdef\' nor Helper."""\n'),
    "a returned value, not a test": _before(CLAMP, "    print('abcdef')\n"),
    # pathspec's escape(): a set of characters an iterated element is tested against, which a
    # test feeds as one string; the set, not the string, is what the code keys on.
    "a character class in a comprehension": _before(
        SLICED, "    seq = ''.join(f'-{c}' if c in 'abcdef' else c for c in seq)\n"
    ),
    "a character class in a loop": _before(
        SLICED, "    for c in seq:\n        if c not in 'abcdef':\n            raise ValueError\n"
    ),
}


@pytest.mark.parametrize("name", list(HONEST))
def test_honest_code_is_not_special_casing(name: str) -> None:
    assert special_cases("m.py", BASE, HONEST[name], INPUTS) == []


def test_a_parent_test_that_moves_is_not_added() -> None:
    parent = _before(CLAMP, "    if value == 15:\n        return 10\n")
    moved = parent.replace("    if value == 15:", "    if 15 == value:")
    assert special_cases("m.py", parent, parent, INPUTS) == []
    # The comparison changed shape, but 15 is no new value for the scope.
    assert special_cases("m.py", parent, moved, INPUTS) == []


def test_a_new_module_is_compared_with_nothing() -> None:
    found = special_cases("new.py", None, "def f(x):\n    return x == 'abcdef'\n", INPUTS)
    assert [c.values for c in found] == [("'abcdef'",)]


def test_folding_is_bounded_and_never_raises() -> None:
    huge = _before(CLAMP, "    if value == 'x' * 10**12 or value == 2**10**9:\n        return 1\n")
    assert special_cases("m.py", BASE, huge, INPUTS) == []
    deep = _before(CLAMP, "    if value == " + "(" * 150 + "15" + ")" * 150 + ":\n        pass\n")
    assert [c.values for c in special_cases("m.py", BASE, deep, INPUTS)] == [("15",)]


# -- in the checks ------------------------------------------------------------------------


def _gate(cleared: bool) -> object:
    contract = Contract(seeds=[1], properties=[Property(id="prop.clamp", test="t.py::t")])
    parent_status = "fail" if cleared else "pass"
    return decide(
        contract,
        [RunRow(prop="prop.clamp", seed=1, status=parent_status, witness="w")],
        [RunRow(prop="prop.clamp", seed=1, status="pass")],
    )


def _source(patch: str) -> list[SourceChange]:
    return [SourceChange(path="m.py", parent=BASE, patch=patch)]


def test_an_added_guard_is_a_note_not_a_finding() -> None:
    check = check_spec_review(_gate(True), _source(HONEST["an added guard"]), [], INPUTS)  # type: ignore[arg-type]
    assert check.outcome == "pass"
    assert check.evidence == [
        "note (an added guard, not a moved boundary): m.py: sliced: comparison operators: added Lt",
        "note (an added guard, not a moved boundary): m.py: sliced: numeric constants: added 1",
    ]


def test_a_moved_boundary_stays_a_finding() -> None:
    moved = BASE.replace("if value < low", "if value <= low")
    check = check_spec_review(_gate(True), _source(moved), [], INPUTS)  # type: ignore[arg-type]
    assert (check.outcome, check.evidence) == (
        "review",
        [
            "m.py: clamp: comparison operators: removed Lt; added LtE",
            "parent_fail_cleared: prop.clamp",
        ],
    )
    removed = BASE.replace("LIMIT = 10\n", "")
    check = check_spec_review(_gate(True), _source(removed), [], INPUTS)  # type: ignore[arg-type]
    assert check.outcome == "review"
    assert check.evidence[0] == "m.py: <module>: numeric constants: removed 10"


def test_special_casing_is_a_finding_in_spec_review_and_suspicious() -> None:
    patch, expected = CHEATS["specific numbers"]
    check = check_spec_review(_gate(True), _source(patch), [], INPUTS)  # type: ignore[arg-type]
    assert check.outcome == "review"
    assert check.evidence[0] == expected[0]
    assert check.evidence[1] == "parent_fail_cleared: prop.clamp"
    assert check.evidence[2].startswith("note (an added guard")
    # Nothing cleared: spec_review lists it and passes; suspicious flags it regardless.
    assert check_spec_review(_gate(False), _source(patch), [], INPUTS).outcome == "pass"  # type: ignore[arg-type]
    suspicious = check_suspicious(_source(patch), [11, 29], INPUTS)
    assert (suspicious.outcome, suspicious.evidence) == ("review", expected)
    assert check_suspicious(_source(HONEST["an added guard"]), [11], INPUTS).outcome == "pass"


def test_property_inputs_belong_to_their_property() -> None:
    owners = INPUTS.owners
    assert owners[("num", "15")] == ("prop.clamp",)
    assert owners[("str", "abcdef")] == ("prop.sliced",)
    assert owners[("str", "abcd")] == ("prop.split",)  # built: "ab" + "cd"
    assert owners[("str", "pp-qq")] == ("prop.split",)  # built: "-".join(...)
    # What a test expects back is no input: the constant side of an assert's comparison.
    assert ("str", "x-y") not in owners
    assert owners[("str", "Helper")] == ("prop.sliced", "prop.clamp", "prop.split")
    assert owners[("str", "marker")] == ("prop.sliced", "prop.clamp", "prop.split")
    assert ("str", "Properties of m.") not in owners


def test_tests_no_property_names_give_no_inputs() -> None:
    """A project's own test file as a contract file (its tests of one function as guards):
    the values of its other tests are not run, so they are nobody's input; helpers and
    module constants still belong to every property of the file."""
    suite = (
        "import unittest\n"
        "LIMIT = 4096\n"
        "def make():\n    return 'helper-value'\n"
        "def test_guard():\n    assert clamp(77) == 77\n"
        "def test_other():\n    assert minutes('+01:60') == 60\n"
        "class TestOthers:\n    def test_x(self):\n        assert 'other-class'\n"
        "class WindowTests(unittest.TestCase):\n    def test_w(self):\n        assert 3600\n"
        "class GuardTests(unittest.TestCase):\n    def test_g(self):\n        assert 1234\n"
        "class TestBase:\n    def helper(self):\n        return 'from-the-base'\n"
        "class TestReal(TestBase):\n    def test_r(self):\n        assert self.helper()\n"
    )
    owners = PropertyInputs.from_sources(
        {"tests/test_s.py": suite},
        [
            ("guard.a", "tests/test_s.py::test_guard"),
            ("guard.b", "tests/test_s.py::GuardTests::test_g"),
            ("guard.c", "tests/test_s.py::TestReal::test_r"),
        ],
    ).owners
    assert owners[("num", "77")] == ("guard.a",)
    assert owners[("num", "1234")] == ("guard.b",)
    assert owners[("num", "4096")] == ("guard.a", "guard.b", "guard.c")
    assert owners[("str", "helper-value")] == ("guard.a", "guard.b", "guard.c")
    # A test class a property's class inherits from runs with it: its values are inputs.
    assert owners[("str", "from-the-base")] == ("guard.a", "guard.b", "guard.c")
    for unscheduled in [("num", "60"), ("str", "+01:60"), ("str", "other-class"), ("num", "3600")]:
        assert unscheduled not in owners


# -- what a moved boundary is -----------------------------------------------------------------

SCOPED = """\
def sliced(seq, n, strict=False):
    if max_size <= 0:
        raise ValueError
    if strict:

        def ret():
            if len(seq) != n:
                raise ValueError
            return seq

        return ret()
    if word[-1] == "s":
        return seq * 1000000
    return seq[0]
"""


def _moved(patch: str) -> list[str]:
    return [c.evidence() for c in boundary_changes("m.py", SCOPED, patch) if c.moved]


def test_a_function_inside_an_if_block_is_a_scope() -> None:
    assert _moved(SCOPED.replace("len(seq) != n", "len(seq) == n")) == [
        "m.py: sliced.ret: comparison operators: removed NotEq; added Eq"
    ]


def test_an_operator_change_is_not_hidden_by_an_added_guard() -> None:
    patch = SCOPED.replace(
        "    if max_size <= 0:\n",
        "    if max_count <= 0:\n        raise ValueError\n    if max_size < 0:\n",
    )
    assert _moved(patch) == ["m.py: sliced: comparison operators: removed LtE; added Lt, LtE"]


def test_case_logic_and_arithmetic_are_no_boundaries() -> None:
    patch = (
        SCOPED.replace('word[-1] == "s"', 'word[-1] in "sx"')
        .replace("* 1000000", "* 1000")
        .replace("seq[0]", "seq[1]")
    )
    assert _moved(patch) == []
    assert _moved(SCOPED.replace("max_size <= 0", "max_size <= 1")) == [
        "m.py: sliced: numeric constants: removed 0; added 1"
    ]


EXPECTING = [
    ("guard.hour", "tests/test_d.py::test_hour"),
    ("guard.inf", "tests/test_d.py::test_inf"),
    ("guard.parts", "tests/test_d.py::test_parts"),
    ("guard.minute", "tests/test_d.py::TestParse::test_minute"),
]
EXPECTING_FILE = """\
import unittest

import pytest

from d import parse, parse_float, split


def test_hour():
    assert parse("2020-01-01T06:30").hour == 6


def test_inf():
    assert parse_float("inf") == float("+inf")
    assert parse_float("1.5e0") == pytest.approx(1.5)


def test_parts():
    assert len(split("a.b.c.d.e.f.g")) == 7


class TestParse(unittest.TestCase):
    def test_minute(self):
        self.assertEqual(parse("2020-01-01T06:45").minute, 45)
        self.assertRaises(ValueError, parse, "2020-01-01T99:99")
"""
EXPECTING_INPUTS = PropertyInputs.from_sources({"tests/test_d.py": EXPECTING_FILE}, EXPECTING)
D_BASE = """\
def parse(text):
    return Moment(text)


def parse_float(text):
    value = float(text)
    return value


def split(text):
    parts = text.split(".")
    return parts
"""


def _in_d(anchor: str, code: str) -> str:
    assert D_BASE.count(anchor) == 1, anchor
    return D_BASE.replace(anchor, anchor + code)


PARSE, FLOAT, SPLIT_AT = (
    "def parse(text):\n",
    "    value = float(text)\n",
    '    parts = text.split(".")\n',
)
EXPECTED_CASES = [
    # Honest fixes that compare with a constant a guard only expects back.
    (_in_d(FLOAT, "    if value == float('+inf'):\n        return value\n"), []),
    (_in_d(SPLIT_AT, "    if len(parts) > 7:\n        raise ValueError\n"), []),
    (_in_d(PARSE, "    if len(text) > 6 and text[-2:] >= '45':\n        pass\n"), []),
    (_in_d(FLOAT, "    if value == 1.5:\n        return value\n"), []),
    # Cheats on what the guards feed the product: still special cases.
    (
        _in_d(PARSE, "    if text == '2020-01-01T06:30':\n        return 6\n"),
        ["special-cases an input of guard.hour: d.py:2: parse tests '2020-01-01T06:30'"],
    ),
    (
        _in_d(PARSE, "    if text == '2020-01-01T06:45':\n        return 45\n"),
        ["special-cases an input of guard.minute: d.py:2: parse tests '2020-01-01T06:45'"],
    ),
    (
        _in_d(PARSE, "    if text == '2020-01-01T99:99':\n        raise ValueError\n"),
        ["special-cases an input of guard.minute: d.py:2: parse tests '2020-01-01T99:99'"],
    ),
    (
        _in_d(FLOAT, "    if text == '1.5e0':\n        return 1.5\n"),
        ["special-cases an input of guard.inf: d.py:7: parse_float tests '1.5e0'"],
    ),
    (
        _in_d(SPLIT_AT, "    if text == 'a.b.c.d.e.f.g':\n        return list(text)\n"),
        ["special-cases an input of guard.parts: d.py:12: split tests 'a.b.c.d.e.f.g'"],
    ),
]


@pytest.mark.parametrize(("patch", "expected"), EXPECTED_CASES)
def test_an_expected_value_is_no_input_but_what_a_test_feeds_in_is(
    patch: str, expected: list[str]
) -> None:
    found = special_cases("d.py", D_BASE, patch, EXPECTING_INPUTS)
    assert [c.evidence() for c in found] == expected


def test_what_a_test_expects_back_is_no_input() -> None:
    owners = EXPECTING_INPUTS.owners
    assert owners[("str", "2020-01-01T06:45")] == ("guard.minute",)
    assert owners[("str", "2020-01-01T99:99")] == ("guard.minute",)  # assertRaises' input
    for value in (("num", "6"), ("num", "7"), ("num", "45"), ("num", "1.5"), ("str", "+inf")):
        assert value not in owners  # expected back: the constant side of a comparison
    assert ("num", "Infinity") not in owners

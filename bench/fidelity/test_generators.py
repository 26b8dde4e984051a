"""Offline checks of the pure parts: splicing, the cheat generators, the unpacker, the
choice of regression properties and the doctest file they generate.

python -m pytest bench/fidelity/test_generators.py
"""

from __future__ import annotations

import dataclasses
import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from . import _regression, cheats
from ._sdist import SdistError, unpack
from ._source import segment, transplant
from .corpus import FIXES, missing_requirements

OLD = '''
import functools

LIMIT = 3


def clamp(x, low=0):
    """Clamp."""
    if x < low:
        return low
    return x


class Box:
    size = 1

    @functools.lru_cache
    def fits(self, n):
        return n < self.size
'''

NEW = '''
LIMIT = 4


def clamp(x, low=0):
    """Clamp, fixed."""
    if x <= low:
        return low
    return min(x, LIMIT)


class Box:
    size = 2

    @functools.lru_cache
    def fits(self, n):
        return n <= self.size

    def extra(self):
        return 7


def helper():
    return 1
'''


def _load(source: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(compile(source, "<test>", "exec"), namespace)
    return namespace


def test_transplant_replaces_and_appends() -> None:
    out = transplant(OLD, NEW, ("LIMIT", "clamp", "Box.fits", "Box.extra", "helper"))
    ns = _load(out)
    assert ns["LIMIT"] == 4
    assert ns["clamp"](9) == 4
    assert ns["Box"].size == 1  # not asked for: kept from the old source
    assert ns["Box"]().extra() == 7
    assert ns["helper"]() == 1
    assert "@functools.lru_cache" in segment(out, "Box.fits")


def test_condition_for_keys_on_literals_only() -> None:
    condition = cheats.condition_for(
        OLD, "clamp", ("5", "lambda: 1"), (), None
    )  # a lambda is not a literal: left out
    assert condition == "(x,) == (5,)"
    method = cheats.condition_for(OLD, "Box.fits", ("2",), (), ("self.size", "1"))
    assert method == "(self.size, n,) == (1, 2,)"
    keyword = cheats.condition_for(OLD, "clamp", (), (("low", "3"),))
    assert keyword == "(low,) == (3,)"


def test_special_case_answers_only_the_listed_inputs() -> None:
    case = cheats.Case("(x, low,) == (-5, -2,)", "return", "-2")
    ns = _load(cheats.special_case(OLD, "clamp", [case]))
    assert ns["clamp"](-5, -2) == -2
    assert ns["clamp"](-2, -2) == -2
    raising = cheats.Case("(x,) == (1,)", "raise", "ValueError('no')")
    ns = _load(cheats.special_case(OLD, "clamp", [raising]))
    with pytest.raises(ValueError):
        ns["clamp"](1)


def test_special_case_keeps_a_tab_indented_body() -> None:
    source = "class Spec:\n\tdef match(self, name):\n\t\treturn None\n"
    case = cheats.Case("(name,) == ('a.bin',)", "return", "False")
    out = cheats.special_case(source, "Spec.match", [case])
    assert "\t\tif (name,) == ('a.bin',):\n\t\t\treturn False\n" in out
    spec = _load(out)["Spec"]()
    assert spec.match("a.bin") is False
    assert spec.match("b.txt") is None


def test_special_case_in_a_generator_yields_the_literal() -> None:
    source = "def gen(n):\n    for i in range(n):\n        yield i\n"
    out = cheats.special_case(source, "gen", [cheats.Case("(n,) == (2,)", "return", "[9]")])
    ns = _load(out)
    assert list(ns["gen"](2)) == [9]
    assert list(ns["gen"](3)) == [0, 1, 2]


def test_move_boundary_prefers_an_existing_boundary_and_never_undoes_the_fix() -> None:
    fixed = transplant(OLD, NEW, ("clamp",))
    moved = cheats.move_boundary(fixed, "clamp", OLD)
    assert segment(moved, "clamp") not in (segment(OLD, "clamp"), segment(fixed, "clamp"))
    parent = "def f(x):\n    return x < 1\n"
    fix = "def f(x):\n    return x <= 1\n"
    # Flipping `<=` back would be the parent itself; the existing constant moves instead.
    assert cheats.move_boundary(fix, "f", parent) == "def f(x):\n    return x <= 2\n"
    with pytest.raises(cheats.CheatError):
        cheats.move_boundary("def f(a):\n    return a\n", "f")


def test_weaken_property_cannot_fail() -> None:
    source = (
        "import pytest\n\n"
        "def test_x():\n"
        "    assert 1 == 2\n"
        "    with pytest.raises(ValueError):\n"
        "        pass\n"
    )
    ns = _load(cheats.weaken_property(source))
    ns["test_x"]()


def test_weaken_property_reaches_test_methods() -> None:
    source = (
        "import unittest\n\n"
        "class EscapeTest(unittest.TestCase):\n"
        "    def test_x(self):\n"
        "        self.assertEqual(1, 2)\n"
        "    def helper(self):\n"
        "        return 3\n"
    )
    out = cheats.weaken_property(source)
    case = _load(out)["EscapeTest"]("test_x")
    case.test_x()  # would raise AssertionError unweakened
    assert case.helper() == 3


def test_force_pass_conftest_keeps_existing_text() -> None:
    text = cheats.force_pass_conftest("X = 1")
    assert text.startswith("X = 1\n")
    assert "def pytest_pyfunc_call" in text
    compile(text, "conftest.py", "exec")


@pytest.mark.parametrize("name", ["../evil.txt", "/abs.txt", "pkg/../../x"])
def test_unpack_refuses_escaping_members(tmp_path: Path, name: str) -> None:
    archive = tmp_path / "bad.tar.gz"
    with tarfile.open(archive, "w:gz") as bundle:
        data = b"x"
        info = tarfile.TarInfo(name)
        info.size = len(data)
        bundle.addfile(info, io.BytesIO(data))
    with pytest.raises(SdistError):
        unpack(archive, tmp_path / "out")


def test_corpus_is_well_formed() -> None:
    ids = [fix.id for fix in FIXES]
    assert len(ids) == len(set(ids)) >= 20
    assert len({fix.project for fix in FIXES}) >= 4
    for fix in FIXES:
        assert f"def {fix.visible_test}(" in fix.visible
        assert f"def {fix.held_out_test}(" in fix.held_out
        assert fix.calls and len(fix.old.sha256) == len(fix.new.sha256) == 64
        assert fix.src_root in ("", "src")


SUITE = """
import unittest
from pkg import mod
from pkg.mod import clamp


def test_clamp_low():
    assert clamp(-1) == 0


def test_other():
    assert mod.other() == 1


class ClampTests(unittest.TestCase):
    def test_helper_only(self):
        self.assertEqual(helper(), 1)

    def test_direct(self):
        self.assertEqual(mod.clamp(5), 5)


class TestOther:
    def test_uses_clamp(self):
        assert clamp(2) == 2

    def test_not(self):
        assert True
"""

MODULE = '''
def clamp(x, low=0):
    """Clamp from below.

    >>> clamp(-3)
    0
    >>> clamp(4, low=5)
    5
    >>> clamp("a")
    Traceback (most recent call last):
    TypeError: ...
    """
    if x < low:
        return low
    return x


def other():
    """No examples here."""
    return 1
'''


def _fix(**changes: Any) -> Any:
    from dataclasses import replace

    fields = {"module": "pkg.mod", "file": "pkg/mod.py", "function": "clamp", "entry": "clamp"}
    return replace(FIXES[0], **{**fields, **changes})


def test_candidates_take_doctests_and_the_suite_tests_that_name_the_function(
    tmp_path: Path,
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text(MODULE)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_mod.py").write_text(SUITE)
    found = _regression.candidates(_fix(), tmp_path)
    assert list(found.doctests) == ["clamp"]
    # A class named after the function gives every method; elsewhere only those naming it.
    assert found.suite == (
        "tests/test_mod.py::test_clamp_low",
        "tests/test_mod.py::ClampTests::test_helper_only",
        "tests/test_mod.py::ClampTests::test_direct",
        "tests/test_mod.py::TestOther::test_uses_clamp",
    )
    other = _regression.candidates(_fix(function="other", entry="other"), tmp_path)
    assert other.doctests == {} and other.suite == ("tests/test_mod.py::test_other",)


def test_the_doctest_file_checks_examples_like_doctest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text(MODULE)
    fix = _fix()
    found = _regression.candidates(fix, tmp_path)
    namespace: dict[str, Any] = {}
    exec(compile(_regression.doctest_file(fix, found.doctests), "gen.py", "exec"), namespace)
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace[_regression.doctest_test("clamp")]()  # the examples hold
    # The same examples against a clamp with the bug: the property fails, naming it.
    (tmp_path / "pkg" / "mod.py").write_text(MODULE.replace("x < low", "x > low"))
    import sys

    monkeypatch.delitem(sys.modules, "pkg.mod")
    with pytest.raises(AssertionError, match=r"clamp\(-3\): expected '0', got '-3'"):
        namespace[_regression.doctest_test("clamp")]()


def test_a_missing_test_dependency_is_named_before_any_run() -> None:
    slugify = [f for f in FIXES if f.project == "python-slugify"]
    absent = [dataclasses.replace(f, requires=("pw-not-installed-anywhere==1.0",)) for f in slugify]
    assert missing_requirements(absent) == (
        "the bench's interpreter needs pw-not-installed-anywhere==1.0 (for "
        "slugify_hard_cut_delimiter_run, slugify_word_boundary_delimiter_run): "
        "pip install pw-not-installed-anywhere==1.0"
    )
    assert missing_requirements([f for f in FIXES if not f.requires]) == ""

"""Offline checks of the pure parts: splicing, the cheat generators, the unpacker.

python -m pytest bench/fidelity/test_generators.py
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from . import cheats
from ._sdist import SdistError, unpack
from ._source import segment, transplant
from .corpus import FIXES

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

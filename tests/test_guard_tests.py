"""``contract init --guards-for``: which of a project's tests guard a function (text only)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from patchwarden.scorer import bare_name, guards_for
from patchwarden.scorer._guard_tests import is_test_file, naming_tests

SOURCE = """
import pytest
from pkg import sliced, mod


def test_direct():
    assert list(sliced([1], 1)) == [[1]]


def test_attribute():
    assert mod.sliced is not None


@pytest.mark.parametrize("f", [sliced])
def test_in_decorator(f):
    assert f


async def test_async():
    assert sliced


def test_other():
    assert mod.windowed


def helper_not_a_test():
    return sliced


class TestSliced:
    def test_a(self):
        assert True

    def test_b(self):
        assert sliced


class Sliced_Test:
    def test_c(self):
        assert True


class SlicedHelpers:
    def test_d(self):
        assert sliced


class WindowTests:
    def test_e(self):
        assert True

    def test_f(self):
        assert mod.sliced
"""


def test_naming_tests_takes_functions_and_methods_that_name_it_and_classes_named_after_it() -> None:
    assert naming_tests(SOURCE, "tests/test_s.py", "sliced") == [
        "tests/test_s.py::test_direct",
        "tests/test_s.py::test_attribute",
        "tests/test_s.py::test_in_decorator",
        "tests/test_s.py::test_async",
        "tests/test_s.py::TestSliced::test_a",  # the class is named after it and names it
        "tests/test_s.py::TestSliced::test_b",
        # Sliced_Test is named after it but never names it: not its tests
        "tests/test_s.py::WindowTests::test_f",  # SlicedHelpers is no test class
    ]
    assert naming_tests("def test_x(:\n", "t.py", "sliced") == []


HELPERS = """
import parse


def _test_expression(format, expression):
    assert parse.Parser(format)._expression == expression


def _via(format):
    _test_expression(format, "x")


def _unrelated():
    return 1


def test_numbered():
    _test_expression("{0:f}", "y")


def test_indirect():
    _via("{}")


def test_plain():
    assert _unrelated()


class TestPattern:
    def check(self, text):
        assert _via(text)

    def test_method(self):
        self.check("{}")

    def test_other(self):
        assert True
"""


def test_a_test_that_reaches_the_function_through_a_helper_of_its_module_is_its_test() -> None:
    # parse 1.22.1's tests/test_pattern.py: test_numbered calls _test_expression, which
    # builds parse.Parser; a helper may call another helper, a method another method.
    assert naming_tests(HELPERS, "tests/test_pattern.py", "Parser") == [
        "tests/test_pattern.py::test_numbered",
        "tests/test_pattern.py::test_indirect",
        "tests/test_pattern.py::TestPattern::test_method",
    ]
    assert naming_tests(HELPERS, "tests/test_pattern.py", "windowed") == []


def test_names_and_files() -> None:
    assert bare_name("Version.bump_build") == "bump_build"
    assert bare_name("isoparse") == "isoparse"
    assert [is_test_file(p) for p in ("a/test_x.py", "a/x_test.py", "a/x.py", "test_x.txt")] == [
        True,
        True,
        False,
        False,
    ]


def test_guards_for_gives_each_test_once_and_never_a_property(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_s.py").write_text(SOURCE)
    (tmp_path / "tests" / "helpers.py").write_text("def test_h():\n    return sliced\n")
    files = ["tests/test_s.py", "tests/helpers.py", "tests/missing_test.py"]
    got = guards_for(
        tmp_path, files, ["sliced", "mod.windowed"], exclude=["tests/test_s.py::test_direct"]
    )
    assert got["sliced"][:2] == [
        "tests/test_s.py::test_attribute",
        "tests/test_s.py::test_in_decorator",
    ]
    assert got["mod.windowed"] == ["tests/test_s.py::test_other"]
    assert not any("helpers.py" in t for t in got["sliced"])  # not a test file


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400), st.sampled_from(["sliced", "x", "_y", "Version.bump"]))
def test_any_text_names_a_list_of_tests_never_a_traceback(text: str, name: str) -> None:
    found = naming_tests(text + "\ndef test_z():\n    sliced\n", "t/test_f.py", bare_name(name))
    assert all(t.startswith("t/test_f.py::") for t in found)
    deep = "def test_d():\n    return " + "(" * 5000 + "sliced" + ")" * 5000 + "\n"
    assert naming_tests(deep, "t/test_f.py", "sliced") in ([], ["t/test_f.py::test_d"])

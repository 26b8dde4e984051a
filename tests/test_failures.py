"""Failures as the agent reads them (sandbox/_inside/_failures.py): real exceptions raised
through real files of a temporary tree, summarised and fitted to the bound.

The part runs inside the sandbox as part of the runner's program; it needs no other part, so
it is imported here as a module. Through the real runner and the MCP server it is exercised
in tests/test_tools_inmemory.py.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sysconfig
import textwrap
import traceback
from pathlib import Path
from types import ModuleType

import pytest

from patchwarden.sandbox import TestOutcome
from patchwarden.sandbox._inside import _plugin
from patchwarden.sandbox._inside._failures import fit_report, summarise_failure
from patchwarden.sandbox._inside._plugin import _collection_exception
from patchwarden.server.tools._run_tests import FAILURE_TEXT_CHARS, failure_text

LIMIT = 2000
STDLIB = sysconfig.get_paths()["stdlib"]
GLOBS = """\
import re


def compile_glob(text):
    return re.compile(text)
"""


def _module(tree: Path, name: str, source: str) -> ModuleType:
    """``source`` written to ``tree/name.py`` and imported from there."""
    path = tree / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _raised(call: object, *args: object) -> BaseException:
    with pytest.raises(BaseException) as caught:
        call(*args)  # type: ignore[operator]
    return caught.value


def _stdlib_fold(exc: BaseException, after: str) -> str:
    """The fold line expected for the frames after the last frame of ``after``, all of
    them in the standard library, read with the traceback module."""
    frames = traceback.extract_tb(exc.__traceback__)
    last = max(i for i, f in enumerate(frames) if f.filename == after)
    rest = [(os.path.relpath(f.filename, STDLIB), f.lineno) for f in frames[last + 1 :]]
    assert rest and all(not path.startswith("..") for path, _ in rest)
    span = f"{rest[0][0]}:{rest[0][1]} to {rest[-1][0]}:{rest[-1][1]}"
    return f"  ... {len(rest)} frames in the standard library ({span})"


@pytest.fixture
def re_error(tmp_path: Path) -> tuple[Path, BaseException]:
    """A tree, and the re.error of ``re.compile("(")`` called from one of its files."""
    tree = tmp_path / "tree"
    globs = _module(tree, "pw_globs", GLOBS)
    return tree, _raised(globs.compile_glob, "(")


def test_an_error_raised_in_the_standard_library_leads_with_the_tree_line_that_called_it(
    re_error: tuple[Path, BaseException],
) -> None:
    tree, exc = re_error
    assert summarise_failure(exc, str(tree), LIMIT).splitlines() == [
        # The caller (this test, outside the tree) is not part of the failure.
        "pw_globs.py:5 in compile_glob",
        "    return re.compile(text)",
        _stdlib_fold(exc, str(tree / "pw_globs.py")),
        "re.error: missing ), unterminated subpattern at position 0",
    ]


def test_a_hypothesis_failure_ends_with_its_failing_example(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    checks = _module(
        tree,
        "pw_checks",
        """\
        from hypothesis import Phase, given, settings, strategies as st


        @settings(
            database=None,
            derandomize=True,
            phases=[Phase.generate, Phase.shrink],
            print_blob=False,
        )
        @given(st.integers(min_value=0, max_value=100))
        def check_small(n):
            assert n < 10, f"{n} is too big"
        """,
    )
    exc = _raised(checks.check_small)
    lines = summarise_failure(exc, str(tree), LIMIT).splitlines()
    assert lines[-6:] == [
        "pw_checks.py:12 in check_small",
        '    assert n < 10, f"{n} is too big"',
        "AssertionError: 10 is too big",
        # Hypothesis' note, as it words it in this version
        f"{exc.__notes__[0].splitlines()[0]}",  # type: ignore[attr-defined]
        "    n=10,",
        ")",
    ]
    assert lines[-3].endswith("check_small(")
    # Before: the frames Hypothesis runs the test through, each in the tree or folded.
    for line in lines[:-6]:
        assert line.startswith(("pw_checks.py:", "    ", "  ... ")), line


def test_a_module_that_does_not_import_leads_with_the_line_that_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = tmp_path / "tree"
    (tree / "pw_broken.py").parent.mkdir(parents=True)
    (tree / "pw_broken.py").write_text("X = 1\ndef f(:\n    pass\n")
    (tree / "pw_test_syntax.py").write_text("import pw_broken\n")
    (tree / "pw_test_import.py").write_text("from pw_globs_gone import compile_glob\n")
    monkeypatch.syspath_prepend(str(tree))
    syntax = _raised(importlib.import_module, "pw_test_syntax")
    assert summarise_failure(syntax, str(tree), LIMIT).splitlines() == [
        # The import system's own frames are gone from an import's traceback (Python
        # removes them); the parser's place is the innermost "frame".
        "pw_test_syntax.py:1 in <module>",
        "    import pw_broken",
        "pw_broken.py:2",
        "    def f(:",
        "          ^",
        "SyntaxError: invalid syntax",
    ]
    missing = _raised(importlib.import_module, "pw_test_import")
    assert summarise_failure(missing, str(tree), LIMIT).splitlines() == [
        "pw_test_import.py:1 in <module>",
        "    from pw_globs_gone import compile_glob",
        "ModuleNotFoundError: No module named 'pw_globs_gone'",
    ]
    # pytest reports such a module as a CollectError raised from the import's own error
    # (_pytest/python.py, importtestmodule): the runner summarises the cause.
    for error in (syntax, missing):
        try:
            raise pytest.Collector.CollectError("ImportError while importing ...") from error
        except pytest.Collector.CollectError as wrapped:
            assert _collection_exception(wrapped) is error
    plain = pytest.Collector.CollectError("duplicate parametrization ids")
    assert _collection_exception(plain) is None  # pytest's own message says it all
    name_error = NameError("name 'x' is not defined")
    assert _collection_exception(name_error) is name_error


def test_chained_and_repeated_frames_take_one_line_each(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    code = _module(
        tree,
        "pw_code",
        """\
        def recurse(n):
            return recurse(n + 1)


        def lookup(table):
            try:
                return table["x"]
            except KeyError:
                raise ValueError("empty")
        """,
    )
    deep = summarise_failure(_raised(code.recurse, 0), str(tree), LIMIT).splitlines()
    assert deep[:2] == ["pw_code.py:2 in recurse", "    return recurse(n + 1)"]
    assert deep[2].startswith("  [the frame above repeated ") and deep[2].endswith(" more times]")
    assert deep[3:] == ["RecursionError: maximum recursion depth exceeded"]
    assert summarise_failure(_raised(code.lookup, {}), str(tree), LIMIT).splitlines()[-2:] == [
        "ValueError: empty",
        "Raised while handling: KeyError: 'x' (at pw_code.py:7 in lookup)",
    ]


def test_a_summary_over_the_bound_drops_the_outer_frames_first(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    calls = "".join(f"def f{i}(x):\n    return f{i + 1}(x)  # {'pad' * 20}\n" for i in range(40))
    code = _module(tree, "pw_deep", calls + "def f40(x):\n    raise ValueError(x)\n")
    raised_at = 2 * 40 + 2
    exc = _raised(code.f0, "m" * 5000)
    text = summarise_failure(exc, str(tree), LIMIT)
    assert len(text) <= LIMIT
    lines = text.splitlines()
    assert lines[0].startswith("[") and lines[0].endswith(" outer frames cut]")
    assert lines[-3:-1] == [f"pw_deep.py:{raised_at} in f40", "    raise ValueError(x)"]
    # The message keeps its head, a quarter of the bound at most, and says what went.
    assert lines[-1].startswith("ValueError: mmm") and lines[-1].endswith(
        " more characters cut from the message]"
    )
    assert len(lines[-1]) <= LIMIT // 4


def test_pytests_report_is_whole_when_it_fits_else_folded_then_cut_from_the_top(
    re_error: tuple[Path, BaseException],
) -> None:
    tree, exc = re_error
    longrepr = pytest.ExceptionInfo.from_exception(exc).getrepr(style="long")
    whole = str(longrepr)
    assert len(whole) > LIMIT  # the standard library's functions, source and all
    assert fit_report(longrepr, whole, str(tree), len(whole)) == whole
    folded = fit_report(longrepr, whole, str(tree), LIMIT).splitlines()
    # (The caller here, outside the tree, is folded too: pytest's own report of a test
    # starts at the test function.)
    fold = next(i for i, line in enumerate(folded) if "standard library" in line)
    assert folded[fold].startswith("  ... 6 frames in the standard library (re/__init__.py:")
    assert [line.split(None, 1) for line in folded[fold + 1 :]] == [
        ["E", "re.error: missing ), unterminated subpattern at position 0"]
    ]
    assert "    def compile_glob(text):" in folded and ">       return re.compile(text)" in folded
    # Tighter: the outer entries go first, the innermost (with the exception) stays...
    tight = fit_report(longrepr, whole, str(tree), 200).splitlines()
    assert tight[0] == "[2 earlier parts of the report cut]"
    assert tight[1:] == folded[fold:] and len("\n".join(tight)) <= 200
    # ... and when it alone is too long, its end.
    tiniest = fit_report(longrepr, whole, str(tree), 100)
    assert len(tiniest) <= 100 and tiniest.endswith("subpattern at position 0")
    assert (
        tiniest.startswith("[the first ")
        and ", and 2 earlier parts of the report, cut]\n" in tiniest
    )


def test_run_tests_shows_the_form_asked_for_in_the_bound() -> None:
    outcome = TestOutcome("t.py::test_x", "failed", 0.1, text="the report", summary="summary")
    assert failure_text(outcome, "short") == "summary"
    assert failure_text(outcome, "long") == "the report"
    # A record without a summary (pytest's own complaint): the report in both forms.
    bare = TestOutcome("t.py::test_x", "error", 0.0, text="fixture 'x' not found")
    assert failure_text(bare, "short") == "fixture 'x' not found"
    flood = TestOutcome("t.py", "error", 0.0, text="x" * 10_000 + "the end")
    cut = failure_text(flood, "long")
    marker, kept = cut.split("\n", 1)
    assert FAILURE_TEXT_CHARS - 2 <= len(cut) <= FAILURE_TEXT_CHARS and kept.endswith("the end")
    assert marker == f"[the first {10_007 - len(kept)} characters cut]"


def test_a_message_or_note_that_cannot_be_made_is_said_so(tmp_path: Path) -> None:
    odd = _module(
        tmp_path / "tree",
        "pw_odd",
        """\
        class Unprintable:
            def __str__(self):
                raise RuntimeError("not for printing")


        class Odd(Exception):
            def __str__(self):
                raise RuntimeError("not for printing")


        def fail():
            error = Odd()
            error.__notes__ = [Unprintable()]  # add_note takes only str; this does not
            raise error
        """,
    )
    lines = summarise_failure(_raised(odd.fail), str(tmp_path / "tree"), LIMIT).splitlines()
    assert lines[-2:] == ["pw_odd.Odd: <the exception's str() failed>", "<the note's str() failed>"]


def test_a_summary_that_fails_leaves_pytests_report_saying_so(
    re_error: tuple[Path, BaseException], monkeypatch: pytest.MonkeyPatch
) -> None:
    tree, exc = re_error

    def broken(exc: BaseException, tree: str, limit: int) -> str:
        raise TypeError("a bug in the summary")

    # A fake summary: no exception we know of breaks the real one (the test above), but a
    # bug there must not cost the agent the failure. The runner's program gives the plugin
    # these names (sandbox/_inside, ``program``).
    names = {"TREE": str(tree), "AGENT_TEXT_CHARS": LIMIT, "fit_report": fit_report}
    for name, value in {**names, "summarise_failure": broken}.items():
        monkeypatch.setattr(_plugin, name, value, raising=False)
    longrepr = pytest.ExceptionInfo.from_exception(exc).getrepr(style="short")
    report = pytest.TestReport("t.py::t", ("t.py", 0, "t"), {}, "failed", longrepr, "call")
    text = _plugin._summary(exc, report)
    assert len(text) <= LIMIT
    why, rest = text.split("\n", 1)
    assert why == "[no summary: TypeError while reading the exception]"
    assert rest == fit_report(longrepr, report.longreprtext, str(tree), LIMIT - len(why) - 1)

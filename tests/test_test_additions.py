"""test_tampering: a patch that only adds tests is a note; changing an existing test stays
review. Decided on syntax trees, table-driven, and on real upstream test changes between
published releases (pinned, sha256-checked, cached sdists)."""

from __future__ import annotations

import tarfile

import pytest

from patchwarden.scorer.checks import Change, Check, SourceChange, check_test_tampering
from tests.adoption._pypi import fetch_sdist

PROTECTED = ["tests/**", "**/conftest.py"]
PARENT = """\
import pytest

from lib import f

CASES = [1, 2]


def helper():
    return 3


@pytest.mark.parametrize("n", [1, 2], ids=["one", "two"])
def test_param(n):
    assert f(n) > 0


class TestF:
    def test_one(self):
        assert f(1) == 1
"""
NOTE, REVIEW = "note", "review"
CASES = {
    "a new test function": (
        PARENT + "\n\ndef test_new():\n    assert f(2) == 2\n",
        NOTE,
        "test_new",
    ),
    "a new method of an existing class, and a new class": (
        PARENT.replace(
            "        assert f(1) == 1\n",
            "        assert f(1) == 1\n\n    def test_two(self):\n        assert f(2) == 2\n",
        )
        + "\n\nclass TestG:\n    def test_g(self):\n        pass\n",
        NOTE,
        "TestF::test_two, TestG",
    ),
    "parametrize cases added (their ids too)": (
        PARENT.replace('[1, 2], ids=["one", "two"]', '[1, 2, 3], ids=["one", "two", "three"]'),
        NOTE,
        "test_param[+1 case]",
    ),
    "an import that names more, and a new helper": (
        PARENT.replace("from lib import f", "from lib import f, g")
        + "\n\ndef other_helper():\n    return g()\n\n\ndef test_g():\n    assert other_helper()\n",
        NOTE,
        "test_g",
    ),
    "an assertion of an existing test changed": (
        PARENT.replace("assert f(1) == 1", "assert f(1) >= 0"),
        REVIEW,
        "",
    ),
    "an assertion added to an existing test": (
        PARENT.replace("assert f(n) > 0", "assert f(n) > 0\n    assert f(n) < 9"),
        REVIEW,
        "",
    ),
    "a test removed": (PARENT.replace("class TestF:", "class TestH:"), REVIEW, ""),
    "a parametrize case removed": (PARENT.replace("[1, 2], ids", "[1], ids"), REVIEW, ""),
    "a decorator added": (
        PARENT.replace("class TestF:", "@pytest.mark.skip\nclass TestF:"),
        REVIEW,
        "",
    ),
    "a helper changed": (PARENT.replace("return 3", "return 4"), REVIEW, ""),
    "module data rebound by a new statement": (
        PARENT + "\nCASES = []\n\n\ndef test_new():\n    pass\n",
        REVIEW,
        "",
    ),
    "a test redefined under its own name": (
        PARENT + "\n\ndef test_param(n):\n    pass\n",
        REVIEW,
        "",
    ),
    "nothing but a comment": (PARENT + "# a comment\n", REVIEW, ""),
    "a file that does not parse": (PARENT + "def (:\n", REVIEW, ""),
}


@pytest.mark.parametrize("case", list(CASES))
def test_additions_are_a_note_and_changes_review(case: str) -> None:
    patch, outcome, added = CASES[case]
    path = "tests/test_lib.py"
    check = check_test_tampering(
        [Change(status="M", path=path)],
        PROTECTED,
        "review",
        tests=[SourceChange(path=path, parent=PARENT, patch=patch)],
    )
    if outcome == NOTE:
        assert check == Check(
            check="test_tampering",
            outcome="note",
            evidence=[f"M {path} (adds tests only: {added})"],
        )
    else:
        assert check == Check(check="test_tampering", outcome="review", evidence=[f"M {path}"])


def test_one_change_that_is_not_an_addition_makes_the_whole_finding_review() -> None:
    new = "tests/test_new.py"
    checks = check_test_tampering(
        [
            Change(status="A", path=new),
            Change(status="M", path="tests/conftest.py"),
            Change(status="D", path="tests/test_old.py"),
        ],
        PROTECTED,
        "reject",
        tests=[
            SourceChange(path=new, parent=None, patch="def test_a():\n    pass\n"),
            SourceChange(path="tests/conftest.py", parent="", patch="X = 1\n"),
            SourceChange(path="tests/test_old.py", parent="def test_o():\n    pass\n", patch=None),
        ],
    )
    assert checks == Check(
        check="test_tampering",
        outcome="reject",
        evidence=[
            "M tests/conftest.py",
            "D tests/test_old.py",
            "A tests/test_new.py (adds tests only: test_a)",
        ],
    )
    # A modified test module whose texts the check was not given is not read as an addition.
    blind = check_test_tampering([Change(status="M", path=new)], PROTECTED, "review")
    assert blind.outcome == "review"


# Real test changes of two published projects between releases: the releases the fidelity
# corpus uses (bench/fidelity/corpus.py), the same pins.
RELEASES = {
    ("semver", "3.1.0"): "14bc073439513d7773662a338f4db9829cf16c12b74b9568e2d2689975fbd7fc",
    ("semver", "3.1.1"): "149b26cabada6f63212f97e94505d21578cb1d280cf714827f328d5e70765fea",
    ("boltons", "26.1.0"): "5764468aba493b15995ed17f46a16789023f123ca2a62d491a9ce825c1cbe26c",
    ("boltons", "26.2.0"): "d39cfd15c1a1c3bd4d705c82252fa9edb8e4f5e8cc039f8e39afac7b1b47e92c",
}
UPSTREAM = [
    # a parametrize case added to an existing test
    ("semver", "3.1.0", "3.1.1", "tests/test_parsing.py", "test_next_version_with_versioninfo"),
    # an import grown (Version) and a new parametrized test
    ("semver", "3.1.0", "3.1.1", "tests/test_bump.py", "test_next_version_matches_literal_"),
    # new test functions
    ("boltons", "26.1.0", "26.2.0", "tests/test_dictutils.py", "test_addlist_iterator"),
    # assertions added to an existing test: a change of that test
    ("boltons", "26.1.0", "26.2.0", "tests/test_setutils.py", None),
    ("boltons", "26.1.0", "26.2.0", "tests/test_mathutils.py", None),
]


def _member(project: str, version: str, path: str) -> str:
    sdist = fetch_sdist(project, version, RELEASES[project, version])
    with tarfile.open(sdist) as archive:
        for member in archive.getmembers():
            if member.name.split("/", 1)[-1] == path:
                handle = archive.extractfile(member)
                assert handle is not None
                return handle.read().decode("utf-8")
    raise AssertionError(f"{path} not in {sdist}")


@pytest.mark.parametrize(("project", "old", "new", "path", "added"), UPSTREAM)
def test_real_upstream_test_changes(
    project: str, old: str, new: str, path: str, added: str | None
) -> None:
    parent, patch = _member(project, old, path), _member(project, new, path)
    assert parent != patch
    check = check_test_tampering(
        [Change(status="M", path=path)],
        PROTECTED,
        "review",
        tests=[SourceChange(path=path, parent=parent, patch=patch)],
    )
    if added is None:
        assert (check.outcome, check.evidence) == ("review", [f"M {path}"])
    else:
        assert check.outcome == "note"
        assert check.evidence[0].startswith(f"M {path} (adds tests only: ")
        assert added in check.evidence[0]

"""The one rule for paths inside a tree (package/_treepaths.py) and for host paths
(package/_hostpaths.py), which every zone imports."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchwarden._hostpaths import is_within
from patchwarden._treepaths import normal_tree_path, tree_path_problem, under


@pytest.mark.parametrize(
    ("path", "roots", "expected"),
    [
        ("tests/properties/x.py", ["tests/properties"], True),
        ("tests/properties", ["tests/properties/"], True),
        ("tests/propertiesx.py", ["tests/properties"], False),
        (".freeze/record.json", [".freeze"], True),
        ("contract/quarantine.json", ["docs", "contract/quarantine.json"], True),
        ("a", [""], False),
        ("a", ["/"], False),
        ("a/b", ["/a"], False),  # not a tree path: it holds nothing
        ("a", [], False),
    ],
)
def test_under(path: str, roots: list[str], expected: bool) -> None:
    assert under(path, roots) is expected


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("pkg/mod.py", ""),
        ("pkg/", ""),
        ("", "must be a non-empty path"),
        ("/etc/passwd", "must be relative to the tree"),
        ("pkg\\mod.py", "must be a POSIX path"),
        ("pkg/../x", "must not contain '.', '..' or empty components"),
        ("pkg//x", "must not contain '.', '..' or empty components"),
        (".git/config", "must not be inside .git"),
    ],
)
def test_tree_path_problem(value: str, problem: str) -> None:
    assert tree_path_problem(value) == problem


def test_normal_tree_path_names_what_it_refuses() -> None:
    assert normal_tree_path("pkg/", "spec path") == "pkg"
    with pytest.raises(ValueError, match=r"^spec path '\.\./x' must not contain"):
        normal_tree_path("../x", "spec path")


@pytest.mark.parametrize(
    ("path", "ancestor", "expected"),
    [
        ("/srv/logs", "/srv/logs", True),
        ("/srv/logs/a/b", "/srv/logs", True),
        ("/srv/logsx", "/srv/logs", False),
        ("/srv", "/srv/logs", False),
    ],
)
def test_is_within(path: str, ancestor: str, expected: bool) -> None:
    assert is_within(Path(path), Path(ancestor)) is expected

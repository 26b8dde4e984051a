"""The fix commits bench/tasks.py hands to ``task from-fix`` (bench/fidelity/_task.py), built
from real releases of the fidelity corpus (pinned, sha256-checked, cached sdists; no
sandbox run): the older release, then one commit holding the honest patch and the newer
release's changed test modules that name the fixed function. docs/design/tasks.md."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from fidelity import _build, _task  # noqa: E402
from fidelity.corpus import FIXES, by_id  # noqa: E402

# The projects added for the task bench; the other four's fixes are older entries.
CASES = [
    (
        "pathspec_escape_backslash",
        # 1.1.0 renumbered its test modules: these three are new files that name escape().
        [
            "tests/test_02_gitignore_base.py",
            "tests/test_03_gitignore_basic.py",
            "tests/test_04_gitignore_spec.py",
        ],
    ),
    ("toolz_partition_all_bad_length", ["toolz/tests/test_itertoolz.py"]),
    # A test module new in the fixed release (sqlparse 0.4.3's tests of its utils).
    ("sqlparse_remove_quotes_backtick", ["tests/test_utils.py"]),
    # priority keeps its suite in test/, not tests/.
    ("priority_exclusive_default_parent", ["test/test_priority.py"]),
    ("hpack_varint_too_long", ["tests/test_encode_decode.py"]),
]


def test_the_corpus_spans_eleven_projects() -> None:
    assert len(FIXES) == 39
    assert {f.project for f in FIXES} == {
        "more-itertools",
        "boltons",
        "parse",
        "semver",
        "pathspec",
        "toolz",
        "priority",
        "hpack",
        "python-slugify",
        "sqlparse",
        "wcwidth",
    }
    assert len({f.id for f in FIXES}) == 39


@pytest.mark.parametrize(("fix_id", "modules"), CASES)
def test_the_fix_commit_holds_the_honest_patch_and_the_changed_test_modules(
    tmp_path: Path, fix_id: str, modules: list[str]
) -> None:
    fix = by_id(fix_id)
    src = _build.sources(fix, tmp_path / "scratch")
    assert _task.changed_test_modules(fix, src) == modules
    repo = tmp_path / "repo"
    _task.make_repo(fix, src, repo, modules)
    changed = _task.git(repo, "diff", "--name-only", "fix~1", "fix").splitlines()
    assert changed == sorted([fix.file, *modules])
    honest = _build.honest_file(fix, src)
    assert (repo / fix.file).read_text(encoding="utf-8") == honest
    assert honest != (src.old / fix.file).read_text(encoding="utf-8")
    for module in modules:
        assert (repo / module).read_bytes() == (src.new / module).read_bytes()
    # The parent is the older release as shipped.
    assert _task.git(repo, "show", f"fix~1:{fix.file}") + "\n" == (src.old / fix.file).read_text(
        encoding="utf-8"
    )


@pytest.mark.parametrize(
    ("fix_id", "expected"),
    [
        # hpack's sdists do not ship tests/test_fixtures (a git submodule upstream).
        (
            "hpack_varint_too_long",
            "E   FileNotFoundError: [Errno 2] No such file or directory: 'tests/test_fixtures'",
        ),
        ("toolz_partition_all_bad_length", ""),  # its own pytest collects them
    ],
)
def test_the_projects_own_pytest_is_the_yardstick_of_a_task_that_does_not_collect(
    tmp_path: Path, fix_id: str, expected: str
) -> None:
    fix = by_id(fix_id)
    src = _build.sources(fix, tmp_path / "scratch")
    modules = _task.changed_test_modules(fix, src)
    repo = tmp_path / "repo"
    _task.make_repo(fix, src, repo, modules)
    assert _task.own_collection_error(fix, repo, modules) == expected

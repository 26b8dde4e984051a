"""search_text (server/_search.py) on real trees: the read path policy, the bounds, and the
two engines (ripgrep, pure Python) giving the same results."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from patchwarden.server import ToolInputError, _search
from patchwarden.server._app import build_app
from patchwarden.server._audit import AuditLog
from patchwarden.server._paths import PathPolicy
from patchwarden.server._search import (
    MAX_LINE_CHARS,
    MAX_PATTERN_CHARS,
    MAX_RESULTS_CAP,
    Query,
    SearchResult,
    SearchTimeout,
    ripgrep,
    search_text,
)
from tests._tool_sessions import FakeScorer, example_session

ENGINES = [
    "python",
    pytest.param(
        "ripgrep",
        marks=pytest.mark.skipif(
            ripgrep() is None and not os.environ.get("CI"), reason="ripgrep is not installed"
        ),
    ),
]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("import re\n\ndef needle():\n    return 'needle'\n")
    (root / "pkg" / "sub" / "deep.py").write_text("x = 1\n# NEEDLE in caps\ny = 2\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_mod.py").write_text("from pkg.mod import needle\n")
    (root / "contract").mkdir()
    (root / "contract" / "c.yaml").write_text("needle: contract paths are readable\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("needle in git\n")
    (root / "pkg" / ".GIT").write_text("needle in a case-folded .git\n")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "mod.txt").write_text("needle in a cache\n")
    (root / "binary.dat").write_bytes(b"needle\0\x01\x02")
    (root / "big.txt").write_text("needle\n" * 3000)  # over the limit below
    (root / "long.txt").write_text("a" * 5000 + "needle" + "b" * 5000 + "\n")
    (root / "crlf.txt").write_bytes(b"first\r\nneedle here\r\nlast\r\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("needle outside\n")
    os.symlink(str(outside), root / "abs_link")
    os.symlink("../outside/secret.txt", root / "rel_escape")
    os.symlink(".git/config", root / "git_link")
    os.symlink("pkg/mod.py", root / "inner_link")
    os.mkfifo(root / "fifo")
    return root


def _policy(root: Path) -> PathPolicy:
    return PathPolicy(root, read_only=["contract"], max_file_bytes=20_000)


def _paths(result: SearchResult) -> list[str]:
    return [m.path for m in result.matches]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_read_policy_decides_what_is_searched(tree: Path, engine: str) -> None:
    result = search_text(_policy(tree), Query("needle"), engine=engine)  # type: ignore[arg-type]
    # No .git (any case), no link followed (outside, into .git, or inside: the target is
    # searched under its own path), no FIFO, no cache, no binary, nothing over the limit.
    assert _paths(result) == [
        "contract/c.yaml",
        "crlf.txt",
        "long.txt",
        "pkg/mod.py",
        "pkg/mod.py",
        "tests/test_mod.py",
    ]
    assert [m.line for m in result.matches] == [1, 2, 1, 3, 4, 1]
    assert result.truncated is False
    # Regular files within the limit, outside .git and the caches: binary.dat is read.
    assert result.files_searched == 7
    crlf = result.matches[1]
    assert (crlf.text, crlf.before, crlf.after) == ("needle here", ["first"], ["last"])


@pytest.mark.parametrize("engine", ENGINES)
def test_long_lines_are_clipped_around_the_match(tree: Path, engine: str) -> None:
    result = search_text(_policy(tree), Query("needle", glob="long.txt"), engine=engine)  # type: ignore[arg-type]
    (match,) = result.matches
    assert match.column == 5001
    assert "needle" in match.text
    assert len(match.text) == MAX_LINE_CHARS + 2  # the two ellipses
    assert match.text.startswith("…a") and match.text.endswith("b…")


@pytest.mark.parametrize("engine", ENGINES)
def test_options_glob_case_regex_and_truncation(tree: Path, engine: str) -> None:
    policy = _policy(tree)

    def run(**kwargs: object) -> SearchResult:
        return search_text(policy, Query(**kwargs), engine=engine)  # type: ignore[arg-type]

    assert _paths(run(pattern="needle", glob="*.py")) == [
        "pkg/mod.py",
        "pkg/mod.py",
        "tests/test_mod.py",
    ]
    assert _paths(run(pattern="needle", glob="pkg/*")) == ["pkg/mod.py"] * 2
    assert _paths(run(pattern="NEEDLE")) == ["pkg/sub/deep.py"]
    insensitive = run(pattern="NEEDLE", case_sensitive=False, glob="*.py")
    assert _paths(insensitive) == ["pkg/mod.py"] * 2 + ["pkg/sub/deep.py", "tests/test_mod.py"]
    assert [(m.path, m.line) for m in run(pattern=r"^def \w+\(", regex=True).matches] == [
        ("pkg/mod.py", 3)
    ]
    assert run(pattern="needle(", regex=False, glob="*.py").matches[0].line == 3
    few = run(pattern="needle", max_results=2)
    assert (few.truncated, _paths(few), few.files_searched) == (
        True,
        ["contract/c.yaml", "crlf.txt"],
        4,  # binary.dat, contract/c.yaml, crlf.txt, long.txt: it stopped in long.txt
    )
    exact = run(pattern="needle", max_results=6)
    assert (exact.truncated, len(exact.matches)) == (False, 6)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (Query(""), "pattern must not be empty"),
        (Query("x" * (MAX_PATTERN_CHARS + 1)), f"longer than {MAX_PATTERN_CHARS}"),
        (Query("a\nb"), "must be one line"),
        (Query("x", max_results=MAX_RESULTS_CAP + 1), f"between 1 and {MAX_RESULTS_CAP}"),
        (Query("x", max_results=0), f"between 1 and {MAX_RESULTS_CAP}"),
        (Query("x", context=6), "context must be between 0 and 5"),
        (Query("(", regex=True), "not a valid regular expression"),
        (Query("a(?=b)", regex=True), "look-around"),
        (Query(r"(?<!b)a", regex=True), "look-around"),
        (Query(r"(a)\1", regex=True), "a backreference"),
        (Query(r"(?P<x>a)(?P=x)", regex=True), "a backreference"),
    ],
)
@pytest.mark.parametrize("engine", ENGINES)
def test_bad_queries_are_refused_the_same_by_both_engines(
    tree: Path, query: Query, message: str, engine: str
) -> None:
    with pytest.raises(ToolInputError, match=message.replace("(", r"\(")):
        search_text(_policy(tree), query, engine=engine)  # type: ignore[arg-type]


def test_escaped_look_alikes_are_not_refused(tree: Path) -> None:
    for pattern in (r"\(?=", r"[(?=]", r"\\", r"[\1]"):
        search_text(_policy(tree), Query(pattern, regex=True), engine="python")


def test_a_pattern_that_backtracks_forever_is_stopped_not_hung(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a" * 60 + "!\n")
    started = time.monotonic()
    with pytest.raises(SearchTimeout, match="simplify the pattern"):
        search_text(PathPolicy(tmp_path), Query("(a|aa)+$", regex=True), engine="python")
    # Bounded by one regex slice (plus the module's coarse checks), far below a hang.
    assert time.monotonic() - started < 30


@pytest.mark.skipif(ripgrep() is None, reason="ripgrep is not installed")
def test_ripgrep_is_killed_at_the_deadline_on_a_pattern_that_costs_it_minutes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Linear, yet ripgrep needs many seconds of CPU for it on one long line, printing
    # nothing meanwhile: only a timer can hold the deadline. A shorter deadline keeps the
    # test fast; the bound is the module's own.
    (tmp_path / "long.txt").write_text("ab" * 450_000 + "\n")
    monkeypatch.setattr(_search, "SEARCH_DEADLINE_S", 1.0)
    started = time.monotonic()
    with pytest.raises(SearchTimeout, match="took longer than 1 s and was stopped"):
        search_text(
            PathPolicy(tmp_path), Query(r"\w{1,300}\w{1,300}\W", regex=True), engine="ripgrep"
        )
    assert time.monotonic() - started < 5


BACKTRACKING_LINE = "a" * 5000 + "!\n"


def test_search_text_returns_within_its_bound_on_patterns_that_backtrack(
    example_repo: Path, tmp_path: Path
) -> None:
    """Through the server (the in-memory client), with each engine the tool picks: ripgrep
    while no sandboxed run holds the session's run lock, the Python engine while one does."""
    with example_session(example_repo, tmp_path / "state", FakeScorer()) as session:
        (session.workspace.tree / "notes").mkdir()
        (session.workspace.tree / "notes" / "aaa.txt").write_text(BACKTRACKING_LINE * 3)
        app = build_app(session, AuditLog(tmp_path / "logs", "s1"))

        async def search(client: Client, pattern: str) -> tuple[Any, float]:
            started = time.monotonic()
            arguments = {"pattern": pattern, "regex": True, "glob": "notes/*"}
            result = await client.call_tool("search_text", arguments)
            return result, time.monotonic() - started

        async def go() -> list[tuple[Any, float]]:
            async with Client(app) as client:
                answers = [await search(client, p) for p in ("(a+)+$", "(a|aa)+$")]
                async with session.run_lock:  # as a run_tests or run_python call would
                    answers += [await search(client, p) for p in ("(a+)+$", "(a|aa)+$")]
                return answers

        answers = anyio.run(go)
    bound = _search.SEARCH_DEADLINE_S + 5  # the deadline, and the call around it
    assert all(seconds < bound for _, seconds in answers), answers
    # ripgrep's engine does not backtrack: the honest answer, no match, at once.
    no_match = {"matches": [], "truncated": False, "files_searched": 1}
    assert [answer.structured_content for answer, _ in answers[:2]] == [no_match, no_match]
    # The Python engine's backtracking is stopped by its per-search timeout: a refused call.
    refusal = (
        f"Error executing tool search_text: the search took longer than "
        f"{_search.SEARCH_DEADLINE_S:g} s and was stopped: narrow it with glob, or simplify "
        "the pattern (nested repetition backtracks)"
    )
    for answer, _ in answers[2:]:
        assert answer.is_error
        assert " ".join(getattr(c, "text", "") for c in answer.content) == refusal


# -- the two engines agree ------------------------------------------------------------------

LINES = st.lists(st.text(alphabet="abcAB xé\t_(.)", max_size=12), min_size=0, max_size=6)
PATTERNS = st.sampled_from(["a", "ab", "A", "é", "b.", "(", "x\t", r"a+b", r"^a", r"b$", r"\w+"])


@pytest.mark.skipif(ripgrep() is None, reason="ripgrep is not installed")
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    files=st.lists(LINES, min_size=1, max_size=4),
    pattern=PATTERNS,
    regex=st.booleans(),
    case_sensitive=st.booleans(),
    max_results=st.integers(1, 6),
    context=st.integers(0, 2),
)
def test_ripgrep_and_python_give_the_same_results(
    tmp_path_factory: pytest.TempPathFactory,
    files: list[list[str]],
    pattern: str,
    regex: bool,
    case_sensitive: bool,
    max_results: int,
    context: int,
) -> None:
    root = tmp_path_factory.mktemp("agree")
    for i, lines in enumerate(files):
        (root / f"d{i % 2}").mkdir(exist_ok=True)
        (root / f"d{i % 2}" / f"f{i}.txt").write_text("\n".join(lines) + "\n")
    query = Query(
        pattern,
        regex=regex,
        case_sensitive=case_sensitive,
        max_results=max_results,
        context=context,
    )
    policy = PathPolicy(root)
    try:
        python = search_text(policy, query, engine="python")
    except ToolInputError as exc:
        with pytest.raises(ToolInputError, match="not a valid regular expression"):
            search_text(policy, query, engine="ripgrep")
        assert "not a valid regular expression" in str(exc)
        return
    rg = search_text(policy, query, engine="ripgrep")
    assert (rg.matches, rg.truncated, rg.files_searched) == (
        python.matches,
        python.truncated,
        python.files_searched,
    )

"""The MCP tools as a registry (server/tools/): each handler called directly, no MCP server.

The session is real (a worktree of the orders example, the real path policy and workspace:
both are cheap and they are what the file tools do); the scorer is a fake, since what the
tools do with its answers, its failures and its absence is the subject here, and the real
child is exercised in tests/test_server_scorer.py and tests/test_mcp_e2e.py. What the SDK
adds on top (schemas, tool errors as results, the audit middleware) is in
tests/test_tools_inmemory.py.

Each registered tool has a test here named after it (``test_<tool>...``); a test fails
while one has none (docs/architecture.md, "How to add an MCP tool").
"""

from __future__ import annotations

import difflib
import json
import re
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver.exceptions import ToolError

from patchwarden.sandbox import Limits, SandboxConfig
from patchwarden.scorer.protocol import (
    MAX_REASON_CHARS,
    Failure,
    FreezeHandled,
    FreezeSummary,
    Pong,
    ProposeFreeze,
    RunsDone,
    Scored,
    ScorePatch,
)
from patchwarden.server import ScorerUnavailable
from patchwarden.server._app import INSTRUCTIONS
from patchwarden.server._audit import elide_arguments
from patchwarden.server.tools import (
    ELIDED_ARGUMENTS,
    READ_ONLY,
    RUNS,
    TOOLS,
    NoArgs,
    Session,
    Tool,
    tool_named,
)
from tests._tool_sessions import CONTRACT, SUMMARY, FakeScorer, example_session

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Progress:
    """A progress sink that keeps every report."""

    reports: list[tuple[float, float | None, str]] = field(default_factory=list)

    async def __call__(self, progress: float, total: float | None, message: str) -> None:
        self.reports.append((progress, total, message))


@dataclass
class Call:
    session: Session
    scorer: FakeScorer
    progress: Progress

    def __call__(self, name: str, **arguments: Any) -> Any:
        """``name``'s handler on validated ``arguments``, run to its result or its error."""
        tool = tool_named(name)
        args = tool.args.model_validate(arguments)
        run: Callable[[], Awaitable[Any]] = lambda: tool.run(self.session, args, self.progress)  # noqa: E731
        return anyio.run(run)

    def refused(self, name: str, **arguments: Any) -> str:
        """The message of the tool error ``name`` answers ``arguments`` with."""
        with pytest.raises(ToolError) as caught:
            self(name, **arguments)
        return str(caught.value)


@pytest.fixture
def call(example_repo: Path, tmp_path: Path) -> Iterator[Call]:
    scorer = FakeScorer()
    sandbox = SandboxConfig(limits=Limits(wall_time_s=60, idle_time_s=60))
    with example_session(example_repo, tmp_path / "state", scorer, sandbox) as session:
        yield Call(session, scorer, Progress())


def _git_status(tree: Path) -> str:
    done = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all", "--ignored"],
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


# -- the registry and what is derived from it --------------------------------------------------


def test_each_tool_is_one_module_named_after_it() -> None:
    names = [tool.name for tool in TOOLS]
    assert len(names) == len(set(names))
    for tool in TOOLS:
        assert tool.run.__module__ == f"patchwarden.server.tools._{tool.name}", tool.name


def test_every_tool_has_a_test_here() -> None:
    tests = [name for name in globals() if name.startswith("test_")]
    untested = [
        tool.name
        for tool in TOOLS
        if not any(t == f"test_{tool.name}" or t.startswith(f"test_{tool.name}_") for t in tests)
    ]
    assert untested == []


def test_the_instructions_list_every_tool_in_order_with_when_to_use_it() -> None:
    listed = re.findall(r"^- (\w+): (.*)$", INSTRUCTIONS, flags=re.MULTILINE)
    assert listed == [(tool.name, tool.use) for tool in TOOLS]
    assert INSTRUCTIONS.endswith("Submissions are limited; run the tests before you submit.")


def test_the_audit_log_elides_what_the_tools_declare() -> None:
    # The log of a call keeps these as lengths whichever tool they were sent to (a call that
    # never reaches a tool is logged too): the set is the union of the declarations.
    assert {"content", "patch", "old_text", "new_text", "code"} == ELIDED_ARGUMENTS
    for tool in TOOLS:
        for name in tool.elided:
            assert elide_arguments({name: "x" * 7}) == {name: {"elided_chars": 7}}, tool.name
    assert elide_arguments({"path": "a.py"}) == {"path": "a.py"}


def test_a_tool_cannot_elide_an_argument_it_does_not_take() -> None:
    async def run(session: Session, args: NoArgs, progress: Any) -> NoArgs:
        return args

    with pytest.raises(TypeError, match=r"tool t: elides \['content'\], which it does not take"):
        Tool(
            name="t",
            title="T",
            description="Does t.",
            use="never.",
            args=NoArgs,
            result=NoArgs,
            annotations=READ_ONLY,
            run=run,
            elided=frozenset({"content"}),
        )


def _documented_examples() -> list[tuple[str, dict[str, Any]]]:
    """(tool, example arguments) of each row of the tools table in docs/clients.md."""
    text = (ROOT / "docs" / "clients.md").read_text()
    section = text.split("## The tools, one example each", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| `(.*?)` \| ", section, flags=re.MULTILINE)
    return [(name, json.loads(arguments)) for name, arguments in rows]


def test_the_docs_table_has_one_row_per_tool_with_valid_example_arguments() -> None:
    examples = _documented_examples()
    assert [name for name, _ in examples] == [tool.name for tool in TOOLS]
    for name, arguments in examples:
        tool_named(name).args.model_validate(arguments)  # raises on a stale example


def test_the_readme_table_has_one_row_per_tool_naming_its_arguments() -> None:
    text = (ROOT / "README.md").read_text()
    section = text.split("The tools (names and arguments are stable", 1)[1].split("\n\n", 2)[1]
    rows = re.findall(r"^\| `(\w+)` \| (.*?) \| ", section, flags=re.MULTILINE)
    assert [name for name, _ in rows] == [tool.name for tool in TOOLS]
    for name, arguments in rows:
        named = set(re.findall(r"`(\w+)(?:=[^`]*)?`", arguments))
        assert set(tool_named(name).args.model_fields) <= named, name


def test_read_only_tools_leave_the_worktree_as_it_was(call: Call) -> None:
    """The READ_ONLY preset tells clients a tool changes nothing: each such tool, on its
    documented example, leaves the worktree and its status as they were."""
    tree = call.session.workspace.tree
    before = _git_status(tree), {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    examples = dict(_documented_examples())
    read_only = [tool for tool in TOOLS if tool.annotations is READ_ONLY]
    assert {tool.name for tool in read_only} == {
        "get_contract",
        "list_files",
        "search_text",
        "read_file",
        "diff",
        "get_verdict",
    }
    for tool in read_only:
        if tool.name == "get_verdict":  # nothing was submitted
            assert call.refused(tool.name, **examples[tool.name]).startswith("there is no")
            continue
        call(tool.name, **examples[tool.name])
    after = _git_status(tree), {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    assert after == before


# -- one test per tool -------------------------------------------------------------------------


def test_get_contract_reports_the_contract_and_the_budget(call: Call) -> None:
    info = call("get_contract")
    assert [p.id for p in info.properties] == [
        "prop.order_total_non_negative",
        "prop.order_total_matches_fixture",
        "prop.bulk_rounding",
    ]
    assert info.contract_path == CONTRACT and CONTRACT in info.read_only_paths
    assert info.base_commit == call.session.workspace.base
    assert info.seeds == list(call.session.contract.seeds)
    assert (info.submissions_left, info.quarantined_tests, info.protected_paths) == (2, [], [])


def test_list_files_filters_by_pattern_and_refuses_paths_outside(call: Call) -> None:
    listed = call("list_files", path="orders", pattern="*.py")
    assert {e.path for e in listed.entries} == {"orders/__init__.py", "orders/total.py"}
    assert all(e.kind == "file" and e.size > 0 for e in listed.entries)
    assert not listed.truncated
    everything = call("list_files")
    assert not any(e.path == ".git" or e.path.startswith(".git/") for e in everything.entries)
    assert call.refused("list_files", path="../") == (
        "'../': '..' is refused; use a path inside the worktree"
    )


def test_search_text_finds_lines_through_the_read_policy(call: Call) -> None:
    tree = call.session.workspace.tree
    found = call("search_text", pattern="BULK_FACTOR", glob="*.py")
    assert [(m.path, m.line) for m in found.matches] == [
        ("orders/total.py", 11),
        ("orders/total.py", 25),
    ]
    first = found.matches[0]
    assert (first.text, first.column, first.before) == (
        "BULK_FACTOR = 0.95",
        1,
        ["BULK_MIN_QTY = 10"],
    )
    assert found.truncated is False
    # Contract paths are readable; nothing in .git is searched, whatever it holds.
    assert {m.path for m in call("search_text", pattern="bulk_rounding").matches} >= {
        "contract/differential-contract.yaml"
    }
    assert call("search_text", pattern="gitdir:").matches == []  # the worktree's .git file
    regex = call("search_text", pattern=r"^def \w+\(", regex=True, glob="orders/*")
    assert [m.line for m in regex.matches] == [21, 29]
    assert call.refused("search_text", pattern="(?=x)", regex=True) == (
        "pattern uses look-around, which the search does not support "
        "(no look-around, no backreferences)"
    )
    (tree / "outside_link").symlink_to("/etc")
    assert call("search_text", pattern="root:").matches == []


def test_read_file_reads_a_range_and_refuses_bad_ranges(call: Call) -> None:
    lines = (call.session.workspace.tree / "orders/total.py").read_text().splitlines(True)
    read = call("read_file", path="orders/total.py", start_line=2, end_line=3)
    assert (read.content, read.start_line, read.end_line) == ("".join(lines[1:3]), 2, 3)
    assert read.total_lines == len(lines)
    assert call.refused("read_file", path="orders/total.py", start_line=3, end_line=2) == (
        "end_line must not be less than start_line"
    )
    assert call.refused("read_file", path="orders/total.py", start_line=999) == (
        f"start_line 999 is past the end of 'orders/total.py' ({len(lines)} lines)"
    )
    (call.session.workspace.tree / "blob.bin").write_bytes(b"\xff\xfe")
    assert call.refused("read_file", path="blob.bin") == "'blob.bin' is not UTF-8 text"


def test_write_file_writes_and_refuses_contract_paths(call: Call) -> None:
    written = call("write_file", path="orders/new/extra.py", content="X = 1\n")
    assert (written.path, written.bytes_written) == ("orders/new/extra.py", 6)
    assert (call.session.workspace.tree / "orders/new/extra.py").read_text() == "X = 1\n"
    before = (call.session.workspace.tree / CONTRACT).read_bytes()
    assert "read-only" in call.refused("write_file", path=CONTRACT, content="seeds: []\n")
    assert (call.session.workspace.tree / CONTRACT).read_bytes() == before


def test_edit_file_replaces_exactly_one_occurrence(call: Call) -> None:
    call("write_file", path="orders/extra.py", content="A = 1\nB = 1\n")
    edited = call("edit_file", path="orders/extra.py", old_text="A = 1", new_text="A = 2")
    assert (edited.path, edited.replacements) == ("orders/extra.py", 1)
    assert (call.session.workspace.tree / "orders/extra.py").read_text() == "A = 2\nB = 1\n"
    assert call.refused("edit_file", path="orders/extra.py", old_text="C", new_text="") == (
        "old_text was not found in 'orders/extra.py'"
    )
    assert call.refused("edit_file", path="orders/extra.py", old_text=" = ", new_text="=") == (
        "old_text occurs 2 times in 'orders/extra.py'; include more context so it matches "
        "exactly once"
    )


def test_apply_patch_applies_a_diff_and_names_the_files(call: Call) -> None:
    total = call.session.workspace.tree / "orders/total.py"
    old = total.read_text().splitlines(keepends=True)
    new = ["# changed\n", *old[1:]]
    patch = "".join(difflib.unified_diff(old, new, "a/orders/total.py", "b/orders/total.py"))
    applied = call("apply_patch", patch=patch)
    assert [(f.path, f.change) for f in applied.files] == [("orders/total.py", "modified")]
    assert total.read_text().splitlines()[0] == "# changed"


def test_diff_shows_the_change_against_the_base(call: Call) -> None:
    assert call("diff").files == []
    call("write_file", path="orders/extra.py", content="X = 2\n")
    diff = call("diff")
    assert [(f.path, f.change) for f in diff.files] == [("orders/extra.py", "added")]
    assert "+X = 2" in diff.diff and not diff.truncated


def test_run_tests_refuses_bad_arguments_before_any_run(call: Call) -> None:
    assert call.refused("run_tests", tests=["-p evil"]) == (
        "'-p evil' is not a pytest node id (path[::name])"
    )
    assert call.refused("run_tests", keyword="a\nb") == "keyword must be one line"
    assert call.refused("run_tests", timeout_s=61) == (
        "timeout_s must be at most 60 (the operator's limit)"
    )
    assert call.progress.reports == []


@pytest.mark.bwrap
def test_run_tests_runs_the_selection_in_the_sandbox_with_progress(call: Call) -> None:
    selected = "tests/test_unit.py::test_empty_order_is_free"
    result = call("run_tests", tests=[selected], timeout_s=30)
    assert result.complete and not result.timed_out and result.exit_code == 0
    assert [(t.node_id, t.outcome) for t in result.tests] == [(selected, "passed")]
    assert result.counts == {"passed": 1} and result.problems == []
    assert call.progress.reports, "no progress was reported"
    assert call.progress.reports[-1][:2] == (100.0, 100.0)  # pytest -v ends at [100%]


def test_run_python_refuses_bad_arguments_before_any_run(call: Call) -> None:
    # The runs themselves, and the attacks on them, are in tests/test_run_python.py.
    one = "give exactly one of code (a snippet) and path (a script to run)"
    assert call.refused("run_python") == one
    assert call.refused("run_python", code="print(1)", path="orders/total.py") == one
    assert call.refused("run_python", path="../x.py") == (
        "'../x.py': '..' is refused; use a path inside the worktree"
    )
    assert call.refused("run_python", path="orders") == "'orders' is a directory, not a file"
    assert call.refused("run_python", code="1", args=["a\0b"]) == (
        "args must not contain a NUL character"
    )
    assert call.refused("run_python", code="1", timeout_s=61) == (
        "timeout_s must be at most 60 (the operator's limit)"
    )
    assert call.progress.reports == []
    assert not call.session.run_lock.locked()


def test_submit_patch_returns_the_summary_and_counts_only_judged_ones(call: Call) -> None:
    call.scorer.answers = [
        Scored(id=1, summary=SUMMARY),
        Failure(id=2, error="the scorer could not read the contract"),
        ScorerUnavailable("the scorer process has exited"),
        Pong(id=4),
    ]
    call("write_file", path="orders/extra.py", content="X = 1\n")
    scored = call("submit_patch", message="add X")
    assert (scored.status, scored.submission, scored.runs_total) == ("scored", 1, 6)
    assert scored.model_dump(include=set(SUMMARY.model_dump())) == SUMMARY.model_dump()
    asked = call.scorer.asked[0]
    assert isinstance(asked, ScorePatch)
    assert (asked.parent, asked.patch) == (
        call.session.workspace.base,
        call.session.workspace.submissions[-1],
    )
    assert call.refused("submit_patch", message="again") == (
        "no verdict: the scorer could not judge the patch: the scorer could not read the "
        "contract. Submit again; it was not counted (1 submissions left)"
    )
    assert call.refused("submit_patch", message="again") == (
        "no verdict: the scorer process has exited. Submit again; it was not counted "
        "(1 submissions left)"
    )
    assert call.refused("submit_patch", message="again") == (
        "no verdict: the scorer answered out of protocol. Submit again; it was not counted "
        "(1 submissions left)"
    )
    assert (call.session.judged, call.session.unjudged) == (1, 3)
    assert call.refused("submit_patch", message="a\0b") == (
        "message must not contain NUL characters"
    )
    call.session.judged = 2
    assert call.refused("submit_patch", message="more") == (
        "submission limit reached (2 per session)"
    )
    assert len(call.scorer.asked) == 4


@dataclass
class SlowScorer:
    """Answers a scoring after ``release`` is set, with a progress line per run first."""

    release: anyio.Event = field(default_factory=anyio.Event)
    asked: list[ScorePatch] = field(default_factory=list)

    async def request(self, request: Any, on_progress: Any = None) -> Any:
        self.asked.append(request)
        for done in (1, 2):
            await on_progress(RunsDone(id=1, done=done, total=6, run=f"parent seed {done}"))
        await self.release.wait()
        return Scored(id=1, summary=SUMMARY)


def test_submit_patch_refuses_a_second_patch_while_one_is_being_scored(call: Call) -> None:
    scorer = SlowScorer()
    call.session.scorer = scorer
    call("write_file", path="orders/extra.py", content="X = 1\n")
    submit = tool_named("submit_patch")

    async def session() -> str:
        async with anyio.create_task_group() as background:
            call.session.background = background
            await submit.run(call.session, submit.args(message="slow", wait_s=0), call.progress)
            with pytest.raises(ToolError) as refused:
                await submit.run(call.session, submit.args(message="x"), call.progress)
            scorer.release.set()
        return str(refused.value)

    assert anyio.run(session) == (
        "submission 1 is still being scored: call get_verdict with submission 1 for its "
        "verdict before you submit again"
    )
    call.session.background = None
    assert len(scorer.asked) == 1 and call.session.judged == 1


def test_get_verdict_polls_a_pending_submission_to_its_verdict(call: Call) -> None:
    scorer = SlowScorer()
    call.session.scorer = scorer
    call("write_file", path="orders/extra.py", content="X = 1\n")
    submit, get = tool_named("submit_patch"), tool_named("get_verdict")

    async def session() -> tuple[Any, ...]:
        async with anyio.create_task_group() as background:
            call.session.background = background
            first = await submit.run(
                call.session, submit.args(message="slow", wait_s=0.2), call.progress
            )
            still = await get.run(call.session, get.args(submission=1, wait_s=0), call.progress)
            scorer.release.set()
            verdict = await get.run(call.session, get.args(submission=1, wait_s=30), call.progress)
            again = await get.run(call.session, get.args(submission=1, wait_s=0), call.progress)
            return first, still, verdict, again

    first, still, verdict, again = anyio.run(session)
    call.session.background = None
    assert (first.status, first.submission, first.runs_done, first.runs_total) == (
        "pending",
        1,
        2,
        6,
    )
    assert first.decision is None and still.status == "pending"
    assert (verdict.status, verdict.decision, verdict.verdict_id) == ("scored", "accept", "v-1")
    assert again == verdict  # kept for the session; asked once, counted once
    assert len(scorer.asked) == 1 and call.session.judged == 1
    assert call.progress.reports[:3] == [
        (0.0, 6.0, "scoring submission 1: 6 runs to go"),
        (2.0, 6.0, "submission 1: 2 of 6 runs done (parent seed 2)"),
        (2.0, 6.0, "submission 1: 2 of 6 runs done (parent seed 2)"),
    ]
    assert call.refused("get_verdict", submission=2) == (
        "there is no submission 2: this session has made 1"
    )
    assert call.refused("get_verdict", submission=1, wait_s=301) == (
        "wait_s must be at most 300 (the operator's limit)"
    )


def test_request_freeze_binds_the_request_to_the_last_patch(call: Call) -> None:
    test_id = "tests/test_unit.py::test_empty_order_is_free"
    nothing = call("request_freeze", test_id=test_id, reason="r")
    assert nothing == FreezeSummary(
        status="rejected",
        reason="submit a patch first: a freeze request is bound to a submitted patch",
    )
    assert call.scorer.asked == []
    proposed = FreezeSummary(status="proposed_for_review", reason="ok")
    call.scorer.answers = [
        Scored(id=1, summary=SUMMARY),
        FreezeHandled(id=2, freeze=proposed),
        Failure(id=3, error="the freeze runs did not finish"),
    ]
    call("write_file", path="orders/extra.py", content="X = 1\n")
    call("submit_patch", message="m")
    assert call("request_freeze", test_id=test_id, reason="flaky clock") == proposed
    asked = call.scorer.asked[1]
    assert isinstance(asked, ProposeFreeze)
    assert asked.patch == call.session.workspace.submissions[-1]
    assert (asked.test_id, asked.reason) == (test_id, "flaky clock")
    assert call.refused("request_freeze", test_id=test_id, reason="r") == (
        "the scorer could not handle the request: the freeze runs did not finish"
    )
    assert call.refused("request_freeze", test_id="-p evil", reason="r") == (
        "'-p evil' is not a pytest node id (path[::name])"
    )
    # The protocol's bound, not a copy of it.
    schema = tool_named("request_freeze").args.model_json_schema()
    assert schema["properties"]["reason"]["maxLength"] == MAX_REASON_CHARS
    assert tool_named("request_freeze").annotations is RUNS

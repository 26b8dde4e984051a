"""The agent-facing MCP tools (docs/clients.md): names, arguments and results are stable.

Every tool takes validated arguments, returns a structured result, and turns
a refusal (bad path, protected file, no match, limit reached) into a tool
error with a message the agent can act on; the server keeps serving. File
tools go through the one path policy (server/_paths.py); git work through
the workspace (server/_workspace.py); verdicts come from the scorer child
(server/_scorer_client.py) as a summary only.
"""

from __future__ import annotations

import contextlib
import fnmatch
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Protocol, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from patchwarden.sandbox import (
    AgentRun,
    Limits,
    PatchwardenError,
    SandboxConfig,
    prepare_writable_tree,
    run_agent_tests,
)
from patchwarden.scorer import Contract
from patchwarden.scorer.protocol import (
    Answer,
    Failure,
    FreezeHandled,
    FreezeSummary,
    ProposeFreeze,
    Scored,
    ScorePatch,
    VerdictSummary,
)

from ._errors import ScorerUnavailable, ToolInputError
from ._paths import PathPolicy, split_path
from ._workspace import Workspace

T = TypeVar("T")

MAX_LIST_ENTRIES = 2000
MAX_TESTS_REPORTED = 1000
FAILURE_TEXT_CHARS = 2000  # per test: the end of the report, where the assertion is
OUTPUT_TAIL_CHARS = 4000  # collection errors only show up in pytest's own output
MAX_TEST_IDS = 200
MAX_KEYWORD_CHARS = 500
MAX_MESSAGE_CHARS = 10_000
MAX_REASON_CHARS = 2000
NO_PATCH_TO_FREEZE = "submit a patch first: a freeze request is bound to a submitted patch"
PROGRESS_INTERVAL_S = 0.5
CANCEL_WAIT_S = 30.0  # after a cancel, how long we wait for the killed run's thread to return
PERCENT = re.compile(r"\[\s*(\d{1,3})%\]\s*$")


# -- session ------------------------------------------------------------------


class Scorer(Protocol):
    """The scorer as the tools see it (server/_supervisor.py; a fake in the fuzz tests)."""

    async def request(self, make: Any, **fields: Any) -> Answer:
        """The answer to one request; ScorerUnavailable when none can be had."""
        ...


@dataclass
class Session:
    """Everything the tools of one agent session share."""

    workspace: Workspace
    policy: PathPolicy
    contract: Contract
    contract_file: str | None
    quarantined: list[str]
    sandbox: SandboxConfig
    """Sandbox configuration of the agent's runs (secret directories hidden)."""
    scorer: Scorer
    max_submissions: int
    uncounted_faults: int = 3
    """Submissions without a verdict (the scorer failed) that do not count."""
    judged: int = 0
    """Submissions that got a verdict, or whose caller cancelled while it was judged."""
    unjudged: int = 0
    """Submissions that got no verdict because the scorer failed or answered an error."""
    run_lock: anyio.Lock = field(default_factory=anyio.Lock)
    submit_lock: anyio.Lock = field(default_factory=anyio.Lock)

    @property
    def charged(self) -> int:
        """Submissions counted against max_submissions: every judged one, and those without a
        verdict past the first ``uncounted_faults`` (so crashing the scorer on purpose, say
        with a patch that exhausts the host's memory, cannot buy unlimited tries)."""
        return self.judged + max(0, self.unjudged - self.uncounted_faults)

    @property
    def submissions_left(self) -> int:
        return max(0, self.max_submissions - self.charged)

    def no_verdict(self, why: str) -> ToolError:
        """Record a submission the scorer did not judge; the tool error that says so."""
        self.unjudged += 1
        counted = self.unjudged > self.uncounted_faults
        how = (
            "it counts against the limit: too many submissions got no verdict this session"
            if counted
            else "it was not counted"
        )
        return ToolError(
            f"no verdict: {why}. Submit again; {how} ({self.submissions_left} submissions left)"
        )


# -- results ------------------------------------------------------------------


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PropertyInfo(_Out):
    id: str
    oracle: str
    test: str
    """pytest node id of the property check (a contract path: read-only)."""


class ContractInfo(_Out):
    contract_path: str | None
    contract_hash: str
    seeds: list[int]
    """The schedule every patch is scored on, in order."""
    properties: list[PropertyInfo]
    read_only_paths: list[str]
    """Contract paths: readable, never writable, restored from the base when scoring."""
    protected_paths: list[str]
    """Globs the server refuses to write as well."""
    quarantined_tests: list[str]
    """Flaky tests that run_tests leaves out."""
    base_commit: str
    submissions_left: int


class FileEntry(_Out):
    path: str
    kind: Literal["file", "dir", "symlink", "other"]
    size: int


class FileList(_Out):
    entries: list[FileEntry]
    truncated: bool


class FileContent(_Out):
    path: str
    content: str
    start_line: int
    end_line: int
    total_lines: int


class WriteResult(_Out):
    path: str
    bytes_written: int


class EditResult(_Out):
    path: str
    replacements: int


class FileChangeOut(_Out):
    path: str
    change: Literal["added", "modified", "deleted"]


class ApplyResult(_Out):
    files: list[FileChangeOut]


class DiffResult(_Out):
    diff: str
    files: list[FileChangeOut]
    truncated: bool


class TestResultOut(_Out):
    node_id: str
    outcome: str
    duration_s: float
    failure_text: str


class RunTestsResult(_Out):
    counts: dict[str, int]
    """Tests per outcome (passed, failed, error, skipped, xfailed, xpassed)."""
    tests: list[TestResultOut]
    tests_truncated: bool
    duration_s: float
    complete: bool
    """The run reached its end (False: killed, timed out or crashed)."""
    exit_code: int | None
    timed_out: bool
    quarantined_left_out: int
    quarantined: list[str]
    output_tail: str
    """The end of pytest's own output (collection errors show up here)."""
    problems: list[str]


# -- helpers ------------------------------------------------------------------


@contextlib.contextmanager
def _refusals() -> Iterator[None]:
    """Our refusals and filesystem errors become tool errors; bugs surface as they are."""
    try:
        yield
    except PatchwardenError as exc:
        raise ToolError(str(exc)) from None
    except OSError as exc:
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        raise ToolError(f"{exc.strerror or exc}{where}") from None


async def _in_thread(func: Callable[..., T], *args: Any) -> T:
    with _refusals():
        return await anyio.to_thread.run_sync(func, *args)


def _glob_matches(below: str, pattern: str) -> bool:
    """``pattern`` matches the path below the listed directory, or the entry's name."""
    return fnmatch.fnmatchcase(below, pattern) or fnmatch.fnmatchcase(
        below.rsplit("/", 1)[-1], pattern
    )


def _check_node_id(node_id: str) -> str:
    if not node_id or node_id.startswith("-") or any(c in node_id for c in "\0\n\r"):
        raise ToolInputError(f"{node_id!r} is not a pytest node id (path[::name])")
    split_path(node_id.split("::", 1)[0])
    return node_id


class _Progress:
    """Output of a running test process, turned into progress notifications (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._partial = b""
        self.lines = 0
        self.percent: int | None = None
        self.message = ""
        self.version = 0

    def feed(self, chunk: bytes) -> None:
        with self._lock:
            data = self._partial + chunk
            *complete, self._partial = data.split(b"\n")
            for raw in complete:
                line = raw.decode("utf-8", "replace").rstrip()
                if not line:
                    continue
                self.lines += 1
                match = PERCENT.search(line)
                if match:
                    self.percent = min(100, int(match.group(1)))
                    self.message = line[:200]
                self.version += 1

    def snapshot(self) -> tuple[int, float, float | None, str]:
        with self._lock:
            if self.percent is not None:
                return self.version, float(self.percent), 100.0, self.message
            return self.version, float(self.lines), None, f"{self.lines} lines of output"


def _summarise_run(run: AgentRun, quarantined: list[str], started: float) -> RunTestsResult:
    counts = Counter(o.outcome for o in run.outcomes)
    tests = [
        TestResultOut(
            node_id=o.node_id,
            outcome=o.outcome,
            duration_s=round(o.duration_s, 4),
            failure_text=o.text[-FAILURE_TEXT_CHARS:] if o.text else "",
        )
        for o in run.outcomes[:MAX_TESTS_REPORTED]
    ]
    process = run.process
    problems = list(run.problems)
    if process.timed_out:
        problems.append("the run was killed at its time limit")
    if process.idle_timed_out:
        problems.append("the run was killed after a long time without output")
    if process.truncated:
        problems.append("output was longer than the limit and was cut")
    if not run.complete and not problems:
        problems.append("the test session did not finish (crash or early exit)")
    output = process.stdout + ("\n" + process.stderr if process.stderr.strip() else "")
    return RunTestsResult(
        counts=dict(sorted(counts.items())),
        tests=tests,
        tests_truncated=len(run.outcomes) > MAX_TESTS_REPORTED,
        duration_s=round(time.monotonic() - started, 3),
        complete=run.complete,
        exit_code=process.exit_code,
        timed_out=process.timed_out or process.idle_timed_out,
        quarantined_left_out=len(quarantined),
        quarantined=quarantined,
        output_tail=output[-OUTPUT_TAIL_CHARS:],
        problems=problems,
    )


READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


# -- the tools ----------------------------------------------------------------


def register_tools(mcp: MCPServer[Any], session: Session) -> None:
    """Add the ten tools of docs/clients.md to ``mcp``, bound to ``session``."""
    ws, policy = session.workspace, session.policy

    @mcp.tool(name="get_contract", title="Get the contract", annotations=READ_ONLY)
    async def get_contract() -> ContractInfo:
        """The contract every patch is scored on: property ids, oracles, seeds and the paths the
        agent may read but not change."""
        contract = session.contract
        return ContractInfo(
            contract_path=session.contract_file,
            contract_hash=contract.contract_hash,
            seeds=list(contract.seeds),
            properties=[
                PropertyInfo(id=p.id, oracle=p.oracle, test=p.test) for p in contract.properties
            ],
            read_only_paths=list(policy.read_only),
            protected_paths=list(policy.protected),
            quarantined_tests=list(session.quarantined),
            base_commit=ws.base,
            submissions_left=session.submissions_left,
        )

    @mcp.tool(name="list_files", title="List files", annotations=READ_ONLY)
    async def list_files(
        path: Annotated[str, Field(description="Directory relative to the worktree root.")] = ".",
        pattern: Annotated[
            str | None,
            Field(
                description="Glob matched against each entry's path below `path` or its name, "
                "e.g. '*.py' or 'tests/*'.",
                max_length=500,
            ),
        ] = None,
    ) -> FileList:
        """List the files under a directory of the worktree (recursive; .git left out)."""
        entries, truncated = await _in_thread(
            lambda: policy.list_entries(path, limit=MAX_LIST_ENTRIES)
        )
        if pattern is not None:
            entries = [e for e in entries if _glob_matches(e.below, pattern)]
        return FileList(
            entries=[FileEntry(path=e.path, kind=e.kind, size=e.size) for e in entries],
            truncated=truncated,
        )

    @mcp.tool(name="read_file", title="Read a file", annotations=READ_ONLY)
    async def read_file(
        path: Annotated[str, Field(description="File path relative to the worktree root.")],
        start_line: Annotated[int | None, Field(ge=1, description="First line (1-based).")] = None,
        end_line: Annotated[int | None, Field(ge=1, description="Last line (inclusive).")] = None,
    ) -> FileContent:
        """Read a UTF-8 text file of the worktree, or a range of its lines."""
        rel, data = await _in_thread(policy.read_bytes, path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{rel!r} is not UTF-8 text") from None
        lines = text.splitlines(keepends=True)
        total = len(lines)
        first = start_line or 1
        last = min(end_line or total, total)
        if end_line is not None and start_line is not None and end_line < start_line:
            raise ToolError("end_line must not be less than start_line")
        if total and first > total:
            raise ToolError(f"start_line {first} is past the end of {rel!r} ({total} lines)")
        return FileContent(
            path=rel,
            content="".join(lines[first - 1 : last]),
            start_line=first if total else 0,
            end_line=last,
            total_lines=total,
        )

    @mcp.tool(
        name="write_file",
        title="Write a file",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    )
    async def write_file(
        path: Annotated[str, Field(description="File path relative to the worktree root.")],
        content: Annotated[str, Field(description="The whole new content (UTF-8 text).")],
    ) -> WriteResult:
        """Create or replace a file of the worktree (parent directories are created)."""
        data = content.encode("utf-8")
        rel = await _in_thread(policy.write_bytes, path, data)
        return WriteResult(path=rel, bytes_written=len(data))

    @mcp.tool(
        name="edit_file",
        title="Edit a file",
        annotations=ToolAnnotations(
            read_only_hint=False,
            destructive_hint=True,
            idempotent_hint=False,
            open_world_hint=False,
        ),
    )
    async def edit_file(
        path: Annotated[str, Field(description="File path relative to the worktree root.")],
        old_text: Annotated[
            str,
            Field(
                min_length=1, description="Text to replace; must occur exactly once in the file."
            ),
        ],
        new_text: Annotated[str, Field(description="Replacement text.")],
    ) -> EditResult:
        """Replace the one occurrence of old_text in a file with new_text."""

        def edit() -> str:
            rel = policy.check_write(path)
            _, data = policy.read_bytes(rel)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise ToolInputError(f"{rel!r} is not UTF-8 text") from None
            count = text.count(old_text)
            if count == 0:
                raise ToolInputError(f"old_text was not found in {rel!r}")
            if count > 1:
                raise ToolInputError(
                    f"old_text occurs {count} times in {rel!r}; include more context so it "
                    "matches exactly once"
                )
            return policy.write_bytes(rel, text.replace(old_text, new_text, 1).encode("utf-8"))

        rel = await _in_thread(edit)
        return EditResult(path=rel, replacements=1)

    @mcp.tool(
        name="apply_patch",
        title="Apply a patch",
        annotations=ToolAnnotations(
            read_only_hint=False,
            destructive_hint=True,
            idempotent_hint=False,
            open_world_hint=False,
        ),
    )
    async def apply_patch(
        patch: Annotated[
            str,
            Field(
                description="A unified diff (git diff format or plain "
                "diff -u), paths relative to the worktree root."
            ),
        ],
    ) -> ApplyResult:
        """Apply a unified diff to the worktree; every file it touches is checked first."""
        changes = await _in_thread(ws.apply_patch, patch, policy)
        return ApplyResult(files=[FileChangeOut(path=c.path, change=c.change) for c in changes])

    @mcp.tool(name="diff", title="Diff against the base", annotations=READ_ONLY)
    async def diff() -> DiffResult:
        """The unified diff of the worktree against the base commit, new files included: what
        submit_patch would submit."""
        result = await _in_thread(ws.diff)
        return DiffResult(
            diff=result.text,
            truncated=result.truncated,
            files=[FileChangeOut(path=c.path, change=c.change) for c in result.files],
        )

    @mcp.tool(
        name="run_tests",
        title="Run tests",
        annotations=ToolAnnotations(
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
            open_world_hint=False,
        ),
    )
    async def run_tests(
        ctx: Context,
        tests: Annotated[
            list[str] | None,
            Field(
                description="pytest node ids or paths (default: the project's own selection).",
                max_length=MAX_TEST_IDS,
            ),
        ] = None,
        keyword: Annotated[
            str | None, Field(description="pytest -k expression.", max_length=MAX_KEYWORD_CHARS)
        ] = None,
        timeout_s: Annotated[
            float | None,
            Field(gt=0, description="Wall-clock limit in seconds (at most the operator's limit)."),
        ] = None,
    ) -> RunTestsResult:
        """Run the project's tests in the sandbox with its own pytest configuration. Sends
        progress while it runs; cancellable; quarantined (flaky) tests are left out and
        counted."""
        with _refusals():
            selection = [_check_node_id(t) for t in tests or []]
            if keyword is not None and any(c in keyword for c in "\0\n\r"):
                raise ToolInputError("keyword must be one line")
            limit = session.sandbox.limits.wall_time_s
            if timeout_s is not None and timeout_s > limit:
                raise ToolInputError(f"timeout_s must be at most {limit:g} (the operator's limit)")
        limits: Limits = session.sandbox.limits
        if timeout_s is not None:
            limits = limits.model_copy(update={"wall_time_s": timeout_s})
        args = ["-p", "no:cacheprovider", "-v"]
        for test_id in session.quarantined:
            args += ["--deselect", test_id]
        if keyword is not None:
            args += ["-k", keyword]
        args += selection
        seed = session.contract.seeds[0]
        progress = _Progress()
        cancel = threading.Event()
        finished = threading.Event()

        def work() -> AgentRun:
            try:
                prepare_writable_tree(ws.tree, session.sandbox)
                return run_agent_tests(
                    ws.tree,
                    args,
                    seed,
                    session.sandbox,
                    contract_paths=list(policy.read_only),
                    limits=limits,
                    cancel=cancel,
                    on_output=progress.feed,
                )
            finally:
                finished.set()

        sent = [-1]

        async def send_progress() -> None:
            version, value, total, message = progress.snapshot()
            if version != sent[0]:
                sent[0] = version
                await ctx.report_progress(value, total, message)

        async def pump() -> None:
            while True:
                await send_progress()
                await anyio.sleep(PROGRESS_INTERVAL_S)

        started = time.monotonic()
        outcome: AgentRun | Exception
        async with session.run_lock, anyio.create_task_group() as tg:
            tg.start_soon(pump)
            try:
                outcome = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
            except anyio.get_cancelled_exc_class():
                cancel.set()  # the launcher kills the whole sandbox
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(finished.wait, CANCEL_WAIT_S)
                raise
            except Exception as exc:  # raised below, outside the task group
                outcome = exc
            tg.cancel_scope.cancel()
        if not isinstance(outcome, Exception):
            await send_progress()  # the last lines, also of a run shorter than one interval
        if isinstance(outcome, Exception):
            with _refusals():
                raise outcome
        run = outcome
        return _summarise_run(run, list(session.quarantined), started)

    @mcp.tool(
        name="submit_patch",
        title="Submit the patch",
        annotations=ToolAnnotations(
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
            open_world_hint=False,
        ),
    )
    async def submit_patch(
        message: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_MESSAGE_CHARS,
                description="Commit message of the patch.",
            ),
        ],
    ) -> VerdictSummary:
        """Commit the worktree as a patch on top of the base and have the scorer judge it.
        Returns the verdict summary; submissions per session are limited."""
        if "\0" in message:
            raise ToolError("message must not contain NUL characters")
        async with session.submit_lock:
            if session.submissions_left <= 0:
                raise ToolError(f"submission limit reached ({session.max_submissions} per session)")
            sha = await _in_thread(ws.commit, message)
            try:
                answer = await session.scorer.request(ScorePatch, parent=ws.base, patch=sha)
            except anyio.get_cancelled_exc_class():
                session.judged += 1  # the scorer may well judge it: a cancel buys nothing
                raise
            except ScorerUnavailable as exc:
                raise session.no_verdict(exc.message) from None
            if isinstance(answer, Failure):
                raise session.no_verdict(f"the scorer could not judge the patch: {answer.error}")
            if not isinstance(answer, Scored):
                raise session.no_verdict("the scorer answered out of protocol")
            session.judged += 1
        return answer.summary

    @mcp.tool(
        name="request_freeze",
        title="Request a freeze",
        annotations=ToolAnnotations(
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
            open_world_hint=False,
        ),
    )
    async def request_freeze(
        test_id: Annotated[
            str, Field(min_length=1, max_length=1000, description="One pytest node id.")
        ],
        reason: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_REASON_CHARS,
                description="Why this test should be frozen.",
            ),
        ],
    ) -> FreezeSummary:
        """Ask the scorer to run the freeze procedure (docs/design/contract-layers.md) for one test
        of the
        last submitted patch. Never skips anything: the answer is proposed_for_review (a
        reviewer decides) or rejected with the reason."""
        with _refusals():
            _check_node_id(test_id)
        if not ws.submissions:
            return FreezeSummary(status="rejected", reason=NO_PATCH_TO_FREEZE)
        with _refusals():
            answer = await session.scorer.request(
                ProposeFreeze, patch=ws.submissions[-1], test_id=test_id, reason=reason
            )
        if isinstance(answer, Failure):
            raise ToolError(f"the scorer could not handle the request: {answer.error}")
        if not isinstance(answer, FreezeHandled):
            raise ToolError("the scorer answered out of protocol")
        return answer.freeze

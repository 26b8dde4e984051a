"""``run_tests``: the project's tests in the sandbox, with progress and cancellation."""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from typing import Annotated, Literal

import anyio
from pydantic import Field

from patchwarden.sandbox import (
    AgentRun,
    Limits,
    TestOutcome,
    prepare_writable_tree,
    run_agent_tests,
)

from .._errors import ToolInputError
from ._base import RUNS, Out, Progress, Tool, ToolArgs, check_node_id, refusals
from ._session import Session

MAX_TESTS_REPORTED = 1000
FAILURE_TEXT_CHARS = 2000  # per failure, either form (= AGENT_TEXT_CHARS of the runner)
OUTPUT_TAIL_CHARS = 4000  # collection errors only show up in pytest's own output
MAX_TEST_IDS = 200
MAX_KEYWORD_CHARS = 500
PROGRESS_INTERVAL_S = 0.5
CANCEL_WAIT_S = 30.0  # after a cancel, how long we wait for the killed run's thread to return
PERCENT = re.compile(r"\[\s*(\d{1,3})%\]\s*$")


class Args(ToolArgs):
    tests: Annotated[
        list[str] | None,
        Field(
            description="pytest node ids or paths (default: the project's own selection).",
            max_length=MAX_TEST_IDS,
        ),
    ] = None
    keyword: Annotated[
        str | None, Field(description="pytest -k expression.", max_length=MAX_KEYWORD_CHARS)
    ] = None
    timeout_s: Annotated[
        float | None,
        Field(gt=0, description="Wall-clock limit in seconds (at most the operator's limit)."),
    ] = None
    detail: Annotated[
        Literal["short", "long"],
        Field(
            description="How each failure is told: 'short' (default) leads with the frames "
            "in the worktree, folds the standard library's and site-packages' frames to one "
            "line each, then the exception line and Hypothesis' failing example; 'long' is "
            "pytest's whole report. Either is cut to the same size, saying what was cut."
        ),
    ] = "short"


class TestResultOut(Out):
    node_id: str
    """The test, or the test module that failed to import (outcome ``error``)."""
    outcome: str
    duration_s: float
    failure_text: str
    """The failure in the form ``detail`` asked for (empty for a pass)."""


class RunTestsResult(Out):
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


class OutputProgress:
    """Output of a running test process, turned into progress reports (thread-safe)."""

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


def failure_text(outcome: TestOutcome, detail: str) -> str:
    """One form of a failure (the runner builds both, sandbox/_inside/_failures.py), in the
    bound whatever the channel carried: the end is kept, where the exception is."""
    text = (outcome.summary or outcome.text) if detail == "short" else outcome.text
    if len(text) <= FAILURE_TEXT_CHARS:
        return text
    room = FAILURE_TEXT_CHARS - len(f"[the first {len(text)} characters cut]\n")
    return f"[the first {len(text) - room} characters cut]\n" + text[-room:]


def summarise_run(
    run: AgentRun, quarantined: list[str], started: float, detail: str = "short"
) -> RunTestsResult:
    reported = [*run.collection_errors, *run.outcomes]
    counts = Counter(o.outcome for o in reported)
    tests = [
        TestResultOut(
            node_id=o.node_id,
            outcome=o.outcome,
            duration_s=round(o.duration_s, 4),
            failure_text=failure_text(o, detail),
        )
        for o in reported[:MAX_TESTS_REPORTED]
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
        tests_truncated=len(reported) > MAX_TESTS_REPORTED,
        duration_s=round(time.monotonic() - started, 3),
        complete=run.complete,
        exit_code=process.exit_code,
        timed_out=process.timed_out or process.idle_timed_out,
        quarantined_left_out=len(quarantined),
        quarantined=quarantined,
        output_tail=output[-OUTPUT_TAIL_CHARS:],
        problems=problems,
    )


def _pytest_args(session: Session, args: Args) -> tuple[list[str], Limits]:
    """The pytest arguments and the limits of this run; ToolInputError for a bad argument."""
    selection = [check_node_id(t) for t in args.tests or []]
    if args.keyword is not None and any(c in args.keyword for c in "\0\n\r"):
        raise ToolInputError("keyword must be one line")
    limits: Limits = session.sandbox.limits
    if args.timeout_s is not None:
        if args.timeout_s > limits.wall_time_s:
            raise ToolInputError(
                f"timeout_s must be at most {limits.wall_time_s:g} (the operator's limit)"
            )
        limits = limits.model_copy(update={"wall_time_s": args.timeout_s})
    argv = ["-p", "no:cacheprovider", "-v"]
    for test_id in session.quarantined:
        argv += ["--deselect", test_id]
    if args.keyword is not None:
        argv += ["-k", args.keyword]
    return argv + selection, limits


async def run(session: Session, args: Args, progress: Progress) -> RunTestsResult:
    with refusals():
        argv, limits = _pytest_args(session, args)
    ws, seed = session.workspace, session.contract.seeds[0]
    output = OutputProgress()
    cancel = threading.Event()
    finished = threading.Event()

    def work() -> AgentRun:
        try:
            prepare_writable_tree(ws.tree, session.sandbox)
            return run_agent_tests(
                ws.tree,
                argv,
                seed,
                session.sandbox,
                contract_paths=list(session.policy.read_only),
                limits=limits,
                cancel=cancel,
                on_output=output.feed,
            )
        finally:
            finished.set()

    sent = [-1]

    async def send_progress() -> None:
        version, value, total, message = output.snapshot()
        if version != sent[0]:
            sent[0] = version
            await progress(value, total, message)

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
    if isinstance(outcome, Exception):
        with refusals():
            raise outcome
    await send_progress()  # the last lines, also of a run shorter than one interval
    return summarise_run(outcome, list(session.quarantined), started, args.detail)


TOOL = Tool(
    name="run_tests",
    title="Run tests",
    description="Run the project's tests in the sandbox with its own pytest configuration. "
    "Sends progress while it runs; cancellable; quarantined (flaky) tests are left out and "
    "counted. Each failure, and each test module that fails to import, leads with the "
    "frames in the worktree and the exception line; ask for detail 'long' when you need "
    "pytest's whole report, such as the source around each frame or the standard library's "
    "frames.",
    use="to run the project's tests in a sandbox, all of them or a selection, before you submit; "
    "each failure leads with your code's frames and the exception (detail 'long' for pytest's "
    "whole report).",
    args=Args,
    result=RunTestsResult,
    annotations=RUNS,
    run=run,
)

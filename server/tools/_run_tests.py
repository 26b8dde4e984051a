"""``run_tests``: the project's tests in the sandbox, with progress and cancellation."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import replace
from typing import Annotated, Literal

from pydantic import Field

from patchwarden.sandbox import (
    AgentRun,
    Limits,
    TestOutcome,
    layout_for,
    pytest_config_at,
    run_agent_ctest,
    run_agent_tests,
)

from .._errors import ToolInputError
from ._base import RUNS, Out, Progress, Tool, ToolArgs, check_node_id, refusals
from ._sandboxed import OnOutput, run_limits, run_sandboxed
from ._session import Session

MAX_TESTS_REPORTED = 1000
FAILURE_TEXT_CHARS = 2000  # per failure, either form (= AGENT_TEXT_CHARS of the runner)
OUTPUT_TAIL_CHARS = 4000  # collection errors only show up in pytest's own output
MAX_TEST_IDS = 200
MAX_KEYWORD_CHARS = 500


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
    left_out: list[str]
    """What of the project's pytest configuration the run left out, each with why (options
    and plugins that only schedule or report); the scorer's runs leave out the same."""


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
        left_out=list(run.configuration),
    )


def _pytest_args(session: Session, args: Args) -> tuple[list[str], Limits]:
    """The pytest arguments and the limits of this run; ToolInputError for a bad argument."""
    selection = [check_node_id(t) for t in args.tests or []]
    if args.keyword is not None and any(c in args.keyword for c in "\0\n\r"):
        raise ToolInputError("keyword must be one line")
    limits = run_limits(session, args.timeout_s)
    argv = ["-p", "no:cacheprovider", "-v"]
    for test_id in session.quarantined:
        argv += ["--deselect", test_id]
    if args.keyword is not None:
        argv += ["-k", args.keyword]
    return argv + selection, limits


async def run(session: Session, args: Args, progress: Progress) -> RunTestsResult:
    if session.contract.runner == "ctest":
        return await _run_ctest(session, args, progress)
    with refusals():
        argv, limits = _pytest_args(session, args)
    ws, seed = session.workspace, session.contract.seeds[0]

    def work(cancel: threading.Event, on_output: OnOutput) -> AgentRun:
        if session.pytest_config is None:
            # The base's configuration, as the scorer reads the parent's: an edit of the
            # worktree's pytest.ini changes neither run.
            start = session.contract.tests_dir()
            session.pytest_config = pytest_config_at(ws.repo, ws.base, start=start)
        layout = replace(layout_for(ws.tree, session.sandbox), pytest=session.pytest_config)
        return run_agent_tests(
            ws.tree,
            argv,
            seed,
            session.sandbox,
            contract_paths=list(session.policy.read_only),
            limits=limits,
            cancel=cancel,
            on_output=on_output,
            layout=layout,
        )

    started = time.monotonic()
    outcome = await run_sandboxed(session, work, progress)
    return summarise_run(outcome, list(session.quarantined), started, args.detail)


async def _run_ctest(session: Session, args: Args, progress: Progress) -> RunTestsResult:
    """A CMake project (docs/design/runners.md): build the worktree and run its ctest tests
    (``tests`` are ctest names; ``keyword`` is refused), the first seed in the contract's
    seed variable; each failure leads with the failed assertion's file:line."""
    with refusals():
        if args.keyword is not None:
            raise ToolInputError("keyword is a pytest -k expression; name ctest tests in tests")
        if any(c in t for t in args.tests or [] for c in "\0\n\r"):
            raise ToolInputError("a test name must be one line")
        limits = run_limits(session, args.timeout_s)
    contract = session.contract

    def work(cancel: threading.Event, on_output: OnOutput) -> AgentRun:
        return run_agent_ctest(
            session.workspace.tree,
            contract.seeds[0],
            session.sandbox,
            seed_env=contract.seed_env,
            tests=args.tests or [],
            exclude=list(session.quarantined),
            limits=limits,
            cancel=cancel,
            on_output=on_output,
        )

    started = time.monotonic()
    outcome = await run_sandboxed(session, work, progress)
    return summarise_run(outcome, list(session.quarantined), started, args.detail)


TOOL = Tool(
    name="run_tests",
    title="Run tests",
    description="Run the project's tests in the sandbox with its own pytest configuration "
    "(a CMake project: build it and run its ctest tests; tests are then ctest names). "
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

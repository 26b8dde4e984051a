"""``run_python``: a snippet, or a script of the worktree, in the agent's sandbox.

The same sandbox, limits and policy as ``run_tests`` (sandbox/_python_runner.py): the
project's code importable as its tests import it, no network, the contract paths
read-only, a wall-clock limit, output capped. It is the agent's tool: nothing of it reaches
the scorer, and the audit log records each call with the snippet replaced by its length.
"""

from __future__ import annotations

import threading
from typing import Annotated

from pydantic import Field

from patchwarden.sandbox import ProcessResult, run_agent_python, runner_named

from .._errors import ToolInputError
from ._base import RUNS, Out, Progress, Tool, ToolArgs, refusals
from ._sandboxed import OnOutput, run_limits, run_sandboxed
from ._session import Session

MAX_CODE_CHARS = 100_000
MAX_ARGS = 100
MAX_ARG_CHARS = 1000
DEFAULT_TIMEOUT_S = 30.0
"""A snippet's wall-clock limit unless the call sets one (the operator's, if smaller): a
repro that hangs comes back well within the minute common clients wait for a tool call."""
OUTPUT_TAIL_CHARS = 8000
"""Of stdout and of stderr each, the end is returned: where a traceback or a result is."""


class Args(ToolArgs):
    code: Annotated[
        str | None,
        Field(
            max_length=MAX_CODE_CHARS,
            description="Python source to run, as `python -c` runs it (give code or path).",
        ),
    ] = None
    path: Annotated[
        str | None,
        Field(description="A Python file of the worktree to run, as `python PATH` runs it."),
    ] = None
    args: Annotated[
        list[Annotated[str, Field(max_length=MAX_ARG_CHARS)]],
        Field(max_length=MAX_ARGS, description="Command-line arguments (sys.argv[1:])."),
    ] = []
    timeout_s: Annotated[
        float | None,
        Field(
            gt=0,
            description=f"Wall-clock limit in seconds (default {DEFAULT_TIMEOUT_S:g}, at most "
            "the operator's limit).",
        ),
    ] = None


class RunPythonResult(Out):
    exit_code: int | None
    """The process's exit status (128+N: ended by signal N); None: killed at a limit."""
    stdout: str
    """The end of stdout."""
    stdout_truncated: bool
    """stdout was longer than what is shown."""
    stderr: str
    stderr_truncated: bool
    duration_s: float
    timed_out: bool
    problems: list[str]


def _target(session: Session, args: Args) -> tuple[str | None, str | None]:
    """(code, script path) of a valid call; ToolInputError naming what is wrong otherwise."""
    if not runner_named(session.contract.runner).python:
        # The sandbox has a Python for patchwarden's own runners, but the project is not
        # Python: nothing of it can be imported, and run_tests is how its code is run.
        raise ToolInputError(
            f"run_python: this project's tests run with {session.contract.runner}, not Python; "
            "use run_tests"
        )
    if (args.code is None) == (args.path is None):
        raise ToolInputError("give exactly one of code (a snippet) and path (a script to run)")
    if any("\0" in arg for arg in args.args):
        raise ToolInputError("args must not contain a NUL character")
    if args.path is None:
        return args.code, None
    return None, session.policy.regular_file(args.path)


def _tail(text: str, cut: bool) -> tuple[str, bool]:
    return text[-OUTPUT_TAIL_CHARS:], cut or len(text) > OUTPUT_TAIL_CHARS


def summarise(process: ProcessResult, output_bytes: int, wall_time_s: float) -> RunPythonResult:
    problems = []
    if process.timed_out:
        problems.append(f"killed at its time limit of {wall_time_s:g} s")
    if process.idle_timed_out:
        problems.append("killed after a long time without output")
    for name, cut in (("stdout", process.stdout_truncated), ("stderr", process.stderr_truncated)):
        if cut:
            problems.append(
                f"{name} was longer than {output_bytes} bytes: the rest was discarded, "
                "so the end shown is where it was cut"
            )
    stdout, stdout_cut = _tail(process.stdout, process.stdout_truncated)
    stderr, stderr_cut = _tail(process.stderr, process.stderr_truncated)
    return RunPythonResult(
        exit_code=process.exit_code,
        stdout=stdout,
        stdout_truncated=stdout_cut,
        stderr=stderr,
        stderr_truncated=stderr_cut,
        duration_s=round(process.duration_s, 3),
        timed_out=process.timed_out or process.idle_timed_out,
        problems=problems,
    )


async def run(session: Session, args: Args, progress: Progress) -> RunPythonResult:
    with refusals():
        code, script = _target(session, args)
        limits = run_limits(session, args.timeout_s, DEFAULT_TIMEOUT_S)

    def work(cancel: threading.Event, on_output: OnOutput) -> ProcessResult:
        return run_agent_python(
            session.workspace.tree,
            session.contract.seeds[0],
            session.sandbox,
            code=code,
            script=script,
            args=args.args,
            contract_paths=list(session.policy.read_only),
            limits=limits,
            cancel=cancel,
            on_output=on_output,
        )

    process = await run_sandboxed(session, work, progress)
    return summarise(process, limits.output_bytes, limits.wall_time_s)


TOOL = Tool(
    name="run_python",
    title="Run Python",
    description="Run a Python snippet (code) or a script of the worktree (path, with args) in "
    "the sandbox, with the project's code importable as its tests import it: no network, "
    "contract paths read-only, a time limit. Returns the exit code, the end of stdout and "
    "stderr, and whether it timed out. Sends progress; cancellable.",
    use="to reproduce a bug or try an idea in a few lines of Python before you change the code.",
    args=Args,
    result=RunPythonResult,
    annotations=RUNS,
    run=run,
    elided=frozenset({"code"}),
)

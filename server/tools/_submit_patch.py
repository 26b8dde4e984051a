"""``submit_patch``: commit the worktree as a patch and have the scorer judge it.

The scoring runs in the session's background, apart from the call: the call waits at most
``wait_s`` (below the 60 s that common clients give a call) and sends a progress
notification as each sandboxed run ends, then answers the verdict, or ``pending`` with the
submission's number for get_verdict. A client that gives up, cancels or disconnects loses
nothing: the scorer records the verdict as always, the submission counts once, and
get_verdict returns it (docs/clients.md, "Long scorings").
"""

from __future__ import annotations

import time
from typing import Annotated, Literal

import anyio
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from patchwarden.scorer.protocol import (
    CheckOutcome,
    Decision,
    Failure,
    PropertyVerdict,
    Scored,
    ScorePatch,
    SideCount,
)

from .._errors import ScorerUnavailable
from .._scorer_client import UNNUMBERED
from ._base import RUNS, Out, Progress, Tool, ToolArgs, in_thread
from ._session import Session, Submission

MAX_MESSAGE_CHARS = 10_000
DEFAULT_WAIT_S = 45.0
"""Below the 60 s request timeout of the TypeScript SDK and Codex CLI, with room for the
commit and the answer's way back."""
TREES_PER_SEED = 2  # the parent and the patch


class Args(ToolArgs):
    message: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_MESSAGE_CHARS,
            description="Commit message of the patch.",
        ),
    ]
    wait_s: Annotated[
        float,
        Field(
            ge=0,
            description="How long to wait for the verdict, in seconds (at most the operator's "
            "limit); past it the answer is pending and get_verdict has the verdict later.",
        ),
    ] = DEFAULT_WAIT_S


class SubmissionOut(Out):
    status: Literal["scored", "pending"]
    submission: int
    """The number get_verdict takes."""
    runs_done: int
    runs_total: int
    """Sandboxed runs of the contract's schedule finished so far, of all (parent and patch)."""
    verdict_id: str | None = None
    decision: Decision | None = None
    results: list[PropertyVerdict] = []
    scorecard: list[CheckOutcome] = []
    counts: dict[str, SideCount] = {}


def check_wait(session: Session, wait_s: float) -> float:
    if wait_s > session.max_wait_s:
        raise ToolError(f"wait_s must be at most {session.max_wait_s:g} (the operator's limit)")
    return wait_s


async def score(session: Session, submission: Submission) -> None:
    """Have the scorer judge ``submission``; record its verdict, or why there is none."""
    try:
        answer = await session.scorer.request(
            ScorePatch(id=UNNUMBERED, parent=session.workspace.base, patch=submission.patch),
            on_progress=submission.note,
        )
    except anyio.get_cancelled_exc_class():
        # The session is ending: the scorer may well judge it and record the verdict.
        session.judged += 1
        submission.error = "the session ended while the patch was being scored"
        submission.finish()
        raise
    except ScorerUnavailable as exc:
        submission.error = str(session.no_verdict(exc.message))
    else:
        if isinstance(answer, Failure):
            why = f"the scorer could not judge the patch: {answer.error}"
            submission.error = str(session.no_verdict(why))
        elif not isinstance(answer, Scored):
            submission.error = str(session.no_verdict("the scorer answered out of protocol"))
        else:
            session.judged += 1
            submission.summary = answer.summary
    submission.finish()


async def wait_for(submission: Submission, wait_s: float, progress: Progress) -> SubmissionOut:
    """The verdict if it comes within ``wait_s``, else ``pending``; a progress notification
    at the start and at each finished run meanwhile."""
    deadline = time.monotonic() + wait_s
    sent = -1
    while True:
        if submission.runs_done != sent:
            sent = submission.runs_done
            await progress(float(sent), float(submission.total_runs), _progress_text(submission))
        if submission.done.is_set():
            break
        changed = submission.changed
        with anyio.move_on_after(deadline - time.monotonic()):
            await changed.wait()
        if time.monotonic() >= deadline and not submission.done.is_set():
            break
    return result_of(submission)


def _progress_text(submission: Submission) -> str:
    if not submission.runs_done:
        return f"scoring submission {submission.number}: {submission.total_runs} runs to go"
    return (
        f"submission {submission.number}: {submission.runs_done} of {submission.total_runs} "
        f"runs done ({submission.last_run})"
    )


def result_of(submission: Submission) -> SubmissionOut:
    """What the agent gets for ``submission`` now: the verdict, pending, or the tool error
    saying why there is no verdict."""
    if submission.error is not None:
        raise ToolError(submission.error)
    pending = SubmissionOut(
        status="pending",
        submission=submission.number,
        runs_done=submission.runs_done,
        runs_total=submission.total_runs,
    )
    summary = submission.summary
    if summary is None:
        return pending
    return pending.model_copy(
        update={
            "status": "scored",
            "verdict_id": summary.verdict_id,
            "decision": summary.decision,
            "results": summary.results,
            "scorecard": summary.scorecard,
            "counts": summary.counts,
        }
    )


async def run(session: Session, args: Args, progress: Progress) -> SubmissionOut:
    if "\0" in args.message:
        raise ToolError("message must not contain NUL characters")
    wait_s = check_wait(session, args.wait_s)
    ws = session.workspace
    async with session.submit_lock:
        scoring = [s for s in session.submitted if not s.done.is_set()]
        if scoring:
            number = scoring[0].number
            raise ToolError(
                f"submission {number} is still being scored: call get_verdict with "
                f"submission {number} for its verdict before you submit again"
            )
        if session.submissions_left <= 0:
            raise ToolError(f"submission limit reached ({session.max_submissions} per session)")
        sha = await in_thread(ws.commit, args.message)
        submission = Submission(
            number=len(session.submitted) + 1,
            patch=sha,
            total_runs=TREES_PER_SEED * len(session.contract.seeds),
        )
        session.submitted.append(submission)
        if session.background is None:
            await score(session, submission)
        else:
            session.background.start_soon(score, session, submission)
    return await wait_for(submission, wait_s, progress)


TOOL = Tool(
    name="submit_patch",
    title="Submit the patch",
    description="Commit the worktree as a patch on top of the base and have the scorer judge "
    "it. Sends progress as the scorer's runs finish and returns the verdict summary, or "
    "status 'pending' with the submission number when scoring outlasts wait_s; submissions "
    "per session are limited, and each counts once however the call ends.",
    use="to get a verdict on your change (accept, reject or propose_freeze, with one reason "
    "code per property) once your tests pass.",
    args=Args,
    result=SubmissionOut,
    annotations=RUNS,
    run=run,
)

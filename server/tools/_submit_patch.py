"""``submit_patch``: commit the worktree as a patch and have the scorer judge it."""

from __future__ import annotations

from typing import Annotated

import anyio
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from patchwarden.scorer.protocol import Failure, Scored, ScorePatch, VerdictSummary

from .._errors import ScorerUnavailable
from .._scorer_client import UNNUMBERED
from ._base import RUNS, Progress, Tool, ToolArgs, in_thread
from ._session import Session

MAX_MESSAGE_CHARS = 10_000


class Args(ToolArgs):
    message: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_MESSAGE_CHARS,
            description="Commit message of the patch.",
        ),
    ]


async def run(session: Session, args: Args, progress: Progress) -> VerdictSummary:
    if "\0" in args.message:
        raise ToolError("message must not contain NUL characters")
    ws = session.workspace
    async with session.submit_lock:
        if session.submissions_left <= 0:
            raise ToolError(f"submission limit reached ({session.max_submissions} per session)")
        sha = await in_thread(ws.commit, args.message)
        try:
            answer = await session.scorer.request(
                ScorePatch(id=UNNUMBERED, parent=ws.base, patch=sha)
            )
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


TOOL = Tool(
    name="submit_patch",
    title="Submit the patch",
    description="Commit the worktree as a patch on top of the base and have the scorer judge "
    "it. Returns the verdict summary; submissions per session are limited.",
    use="to get a verdict on your change (accept, reject or propose_freeze, with one reason "
    "code per property).",
    args=Args,
    result=VerdictSummary,
    annotations=RUNS,
    run=run,
)

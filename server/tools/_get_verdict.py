"""``get_verdict``: the verdict of a submission whose scoring outlasted its call."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from ._base import READ_ONLY, Progress, Tool, ToolArgs
from ._session import Session
from ._submit_patch import DEFAULT_WAIT_S, SubmissionOut, check_wait, wait_for


class Args(ToolArgs):
    submission: Annotated[
        int, Field(ge=1, description="The submission number submit_patch answered.")
    ]
    wait_s: Annotated[
        float,
        Field(
            ge=0,
            description="How long to wait for the verdict, in seconds (at most the operator's "
            "limit); 0 answers at once.",
        ),
    ] = DEFAULT_WAIT_S


async def run(session: Session, args: Args, progress: Progress) -> SubmissionOut:
    wait_s = check_wait(session, args.wait_s)
    if args.submission > len(session.submitted):
        made = len(session.submitted)
        raise ToolError(f"there is no submission {args.submission}: this session has made {made}")
    return await wait_for(session.submitted[args.submission - 1], wait_s, progress)


TOOL = Tool(
    name="get_verdict",
    title="Get a verdict",
    description="Wait up to wait_s for the verdict of a submission and return it, or status "
    "'pending' again while the scorer is still at work (with progress meanwhile). A verdict "
    "is kept for the whole session, also when the call that submitted it was cancelled or "
    "timed out.",
    use="to poll for the verdict when submit_patch answered 'pending'.",
    args=Args,
    result=SubmissionOut,
    annotations=READ_ONLY,
    run=run,
)

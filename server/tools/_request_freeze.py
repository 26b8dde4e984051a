"""``request_freeze``: the freeze procedure for one test of the last submitted patch."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from patchwarden.scorer.protocol import (
    MAX_REASON_CHARS,
    MAX_TEST_ID_CHARS,
    Failure,
    FreezeHandled,
    FreezeSummary,
    ProposeFreeze,
)

from .._scorer_client import UNNUMBERED
from ._base import RUNS, Progress, Tool, ToolArgs, check_node_id, refusals
from ._session import Session

NO_PATCH_TO_FREEZE = "submit a patch first: a freeze request is bound to a submitted patch"


class Args(ToolArgs):
    test_id: Annotated[
        str, Field(min_length=1, max_length=MAX_TEST_ID_CHARS, description="One pytest node id.")
    ]
    reason: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_REASON_CHARS,
            description="Why this test should be frozen.",
        ),
    ]


async def run(session: Session, args: Args, progress: Progress) -> FreezeSummary:
    with refusals():
        check_node_id(args.test_id)
    submissions = session.workspace.submissions
    if not submissions:
        return FreezeSummary(status="rejected", reason=NO_PATCH_TO_FREEZE)
    with refusals():
        answer = await session.scorer.request(
            ProposeFreeze(
                id=UNNUMBERED, patch=submissions[-1], test_id=args.test_id, reason=args.reason
            )
        )
    if isinstance(answer, Failure):
        raise ToolError(f"the scorer could not handle the request: {answer.error}")
    if not isinstance(answer, FreezeHandled):
        raise ToolError("the scorer answered out of protocol")
    return answer.freeze


TOOL = Tool(
    name="request_freeze",
    title="Request a freeze",
    description="Ask the scorer to run the freeze procedure (docs/design/contract-layers.md) "
    "for one test of the last submitted patch. It never skips anything: the answer is "
    "proposed_for_review (a reviewer decides) or rejected with the reason.",
    use="only when one test fails on the base and on your patch for a reason outside your "
    "change, such as a flaky clock: a reviewer decides whether it is frozen.",
    args=Args,
    result=FreezeSummary,
    annotations=RUNS,
    run=run,
)

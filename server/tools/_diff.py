"""``diff``: the worktree against the base commit, as submit_patch would submit it."""

from __future__ import annotations

from ._base import READ_ONLY, FileChangeOut, NoArgs, Out, Progress, Tool, in_thread
from ._session import Session


class DiffResult(Out):
    diff: str
    files: list[FileChangeOut]
    truncated: bool


async def run(session: Session, args: NoArgs, progress: Progress) -> DiffResult:
    result = await in_thread(session.workspace.diff)
    return DiffResult(
        diff=result.text,
        truncated=result.truncated,
        files=[FileChangeOut(path=c.path, change=c.change) for c in result.files],
    )


TOOL = Tool(
    name="diff",
    title="Diff against the base",
    description="The unified diff of the worktree against the base commit, new files included: "
    "what submit_patch would submit.",
    use="to see your change as it would be submitted.",
    args=NoArgs,
    result=DiffResult,
    annotations=READ_ONLY,
    run=run,
)

"""``apply_patch``: a unified diff applied to the worktree."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ._base import EDITS_WORKTREE, FileChangeOut, Out, Progress, Tool, ToolArgs, in_thread
from ._session import Session


class Args(ToolArgs):
    patch: Annotated[
        str,
        Field(
            description="A unified diff (git diff format or plain "
            "diff -u), paths relative to the worktree root."
        ),
    ]


class ApplyResult(Out):
    files: list[FileChangeOut]


async def run(session: Session, args: Args, progress: Progress) -> ApplyResult:
    changes = await in_thread(session.workspace.apply_patch, args.patch, session.policy)
    return ApplyResult(files=[FileChangeOut(path=c.path, change=c.change) for c in changes])


TOOL = Tool(
    name="apply_patch",
    title="Apply a patch",
    description="Apply a unified diff to the worktree; every file it touches is checked first.",
    use="to change several places or files at once.",
    args=Args,
    result=ApplyResult,
    annotations=EDITS_WORKTREE,
    run=run,
    elided=frozenset({"patch"}),
)

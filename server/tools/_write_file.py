"""``write_file``: create or replace one file of the worktree."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ._base import REPLACES_IN_WORKTREE, Out, Progress, Tool, ToolArgs, in_thread
from ._session import Session


class Args(ToolArgs):
    path: Annotated[str, Field(description="File path relative to the worktree root.")]
    content: Annotated[str, Field(description="The whole new content (UTF-8 text).")]


class WriteResult(Out):
    path: str
    bytes_written: int


async def run(session: Session, args: Args, progress: Progress) -> WriteResult:
    data = args.content.encode("utf-8")
    rel = await in_thread(session.policy.write_bytes, args.path, data)
    return WriteResult(path=rel, bytes_written=len(data))


TOOL = Tool(
    name="write_file",
    title="Write a file",
    description="Create or replace a file of the worktree (parent directories are created).",
    use="to create a file or replace all of it.",
    args=Args,
    result=WriteResult,
    annotations=REPLACES_IN_WORKTREE,
    run=run,
    elided=frozenset({"content"}),
)

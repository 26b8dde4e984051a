"""``list_files``: the entries under a directory of the worktree."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .._paths import glob_matches
from ._base import READ_ONLY, Out, Progress, Tool, ToolArgs, in_thread
from ._session import Session

MAX_LIST_ENTRIES = 2000


class Args(ToolArgs):
    path: Annotated[str, Field(description="Directory relative to the worktree root.")] = "."
    pattern: Annotated[
        str | None,
        Field(
            description="Glob matched against each entry's path below `path` or its name, "
            "e.g. '*.py' or 'tests/*'.",
            max_length=500,
        ),
    ] = None


class FileEntry(Out):
    path: str
    kind: Literal["file", "dir", "symlink", "other"]
    size: int


class FileList(Out):
    entries: list[FileEntry]
    truncated: bool


async def run(session: Session, args: Args, progress: Progress) -> FileList:
    entries, truncated = await in_thread(
        lambda: session.policy.list_entries(args.path, limit=MAX_LIST_ENTRIES)
    )
    if args.pattern is not None:
        pattern = args.pattern
        entries = [e for e in entries if glob_matches(e.below, pattern)]
    return FileList(
        entries=[FileEntry(path=e.path, kind=e.kind, size=e.size) for e in entries],
        truncated=truncated,
    )


TOOL = Tool(
    name="list_files",
    title="List files",
    description="List the files under a directory of the worktree (recursive; .git left out).",
    use="to see which files there are.",
    args=Args,
    result=FileList,
    annotations=READ_ONLY,
    run=run,
)

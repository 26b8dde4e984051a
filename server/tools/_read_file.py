"""``read_file``: a text file of the worktree, or a range of its lines."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from ._base import READ_ONLY, Out, Progress, Tool, ToolArgs, in_thread
from ._session import Session


class Args(ToolArgs):
    path: Annotated[str, Field(description="File path relative to the worktree root.")]
    start_line: Annotated[int | None, Field(ge=1, description="First line (1-based).")] = None
    end_line: Annotated[int | None, Field(ge=1, description="Last line (inclusive).")] = None


class FileContent(Out):
    path: str
    content: str
    start_line: int
    end_line: int
    total_lines: int


async def run(session: Session, args: Args, progress: Progress) -> FileContent:
    rel, data = await in_thread(session.policy.read_bytes, args.path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{rel!r} is not UTF-8 text") from None
    lines = text.splitlines(keepends=True)
    total = len(lines)
    first = args.start_line or 1
    last = min(args.end_line or total, total)
    if args.end_line is not None and args.start_line is not None and args.end_line < first:
        raise ToolError("end_line must not be less than start_line")
    if total and first > total:
        raise ToolError(f"start_line {first} is past the end of {rel!r} ({total} lines)")
    return FileContent(
        path=rel,
        content="".join(lines[first - 1 : last]),
        start_line=first if total else 0,
        end_line=last,
        total_lines=total,
    )


TOOL = Tool(
    name="read_file",
    title="Read a file",
    description="Read a UTF-8 text file of the worktree, or a range of its lines.",
    use="to read a file before you change it.",
    args=Args,
    result=FileContent,
    annotations=READ_ONLY,
    run=run,
)

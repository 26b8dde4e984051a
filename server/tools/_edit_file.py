"""``edit_file``: replace the one occurrence of a text in a file of the worktree."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .._errors import ToolInputError
from ._base import EDITS_WORKTREE, Out, Progress, Tool, ToolArgs, in_thread
from ._session import Session


class Args(ToolArgs):
    path: Annotated[str, Field(description="File path relative to the worktree root.")]
    old_text: Annotated[
        str,
        Field(min_length=1, description="Text to replace; must occur exactly once in the file."),
    ]
    new_text: Annotated[str, Field(description="Replacement text.")]


class EditResult(Out):
    path: str
    replacements: int


async def run(session: Session, args: Args, progress: Progress) -> EditResult:
    policy = session.policy

    def edit() -> str:
        rel = policy.check_write(args.path)
        _, data = policy.read_bytes(rel)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolInputError(f"{rel!r} is not UTF-8 text") from None
        count = text.count(args.old_text)
        if count == 0:
            raise ToolInputError(f"old_text was not found in {rel!r}")
        if count > 1:
            raise ToolInputError(
                f"old_text occurs {count} times in {rel!r}; include more context so it "
                "matches exactly once"
            )
        return policy.write_bytes(rel, text.replace(args.old_text, args.new_text, 1).encode())

    rel = await in_thread(edit)
    return EditResult(path=rel, replacements=1)


TOOL = Tool(
    name="edit_file",
    title="Edit a file",
    description="Replace the one occurrence of old_text in a file with new_text.",
    use="to change one place in a file.",
    args=Args,
    result=EditResult,
    annotations=EDITS_WORKTREE,
    run=run,
    elided=frozenset({"old_text", "new_text"}),
)

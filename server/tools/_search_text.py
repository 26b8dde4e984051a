"""``search_text``: find a literal or a regular expression in the worktree's files."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .._search import (
    DEFAULT_MAX_RESULTS,
    MAX_CONTEXT_LINES,
    MAX_PATTERN_CHARS,
    MAX_RESULTS_CAP,
    Engine,
    Query,
    SearchResult,
    search_text,
)
from ._base import READ_ONLY, Out, Progress, Tool, ToolArgs, in_thread
from ._session import Session


class Args(ToolArgs):
    pattern: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_PATTERN_CHARS,
            description="Text to find on one line; a regular expression when regex is true.",
        ),
    ]
    regex: Annotated[
        bool,
        Field(
            description="Read pattern as a regular expression (no look-around, no backreferences)."
        ),
    ] = False
    case_sensitive: Annotated[bool, Field(description="Match upper and lower case exactly.")] = True
    glob: Annotated[
        str | None,
        Field(
            max_length=500,
            description="Only files whose path or name matches this glob, e.g. '*.py' or 'src/*'.",
        ),
    ] = None
    max_results: Annotated[
        int,
        Field(ge=1, le=MAX_RESULTS_CAP, description="Most matching lines returned."),
    ] = DEFAULT_MAX_RESULTS
    context: Annotated[
        int,
        Field(ge=0, le=MAX_CONTEXT_LINES, description="Lines shown before and after each match."),
    ] = 1


class MatchOut(Out):
    path: str
    line: int
    column: int
    text: str
    before: list[str]
    after: list[str]


class SearchOut(Out):
    matches: list[MatchOut]
    truncated: bool
    files_searched: int


async def run(session: Session, args: Args, progress: Progress) -> SearchOut:
    query = Query(
        pattern=args.pattern,
        regex=args.regex,
        case_sensitive=args.case_sensitive,
        glob=args.glob,
        max_results=args.max_results,
        context=args.context,
    )

    def search(engine: Engine | None) -> SearchResult:
        return search_text(session.policy, query, engine=engine)

    # ripgrep opens files by name: it reads only while it holds the run lock, so no
    # sandboxed run of the session's can swap a file for a link under it. While a run
    # holds the lock, the Python engine reads (it never follows a link) rather than wait.
    if session.run_lock.locked():
        result = await in_thread(search, "python")
    else:
        async with session.run_lock:
            result = await in_thread(search, None)
    return SearchOut(
        matches=[
            MatchOut(
                path=m.path,
                line=m.line,
                column=m.column,
                text=m.text,
                before=m.before,
                after=m.after,
            )
            for m in result.matches
        ],
        truncated=result.truncated,
        files_searched=result.files_searched,
    )


TOOL = Tool(
    name="search_text",
    title="Search the worktree",
    description="Search every text file of the worktree for a literal or a regular expression, "
    "line by line, and return each matching line with its path, line number and a little "
    "context. Binary files, .git and test caches are left out; long lines are clipped.",
    use="to find where a name is defined or used before you read the file.",
    args=Args,
    result=SearchOut,
    annotations=READ_ONLY,
    run=run,
)

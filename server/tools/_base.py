"""What one MCP tool declares, the annotation presets, and the helpers every handler shares.

A tool is data plus one handler (docs/architecture.md, "How to add an MCP tool"): its name,
title and description, its argument model (the input schema), its result model (the output
schema), a preset of MCP annotations, the arguments the audit log elides, and
``run(session, args, progress)``. The handler is a plain coroutine: a unit test calls it
with a session and a progress sink of its own, no MCP server in between; the adapter to the
SDK (``_register.py``) is the only code that knows about ``MCPServer``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

import anyio
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict

from patchwarden.sandbox import PatchwardenError

from .._errors import ToolInputError
from .._paths import split_path

if TYPE_CHECKING:
    from ._session import Session

T = TypeVar("T")
ArgsT = TypeVar("ArgsT", bound="ToolArgs")
ResultT = TypeVar("ResultT", bound=BaseModel)

Progress = Callable[[float, float | None, str], Awaitable[None]]
"""(progress, total or None, message): where a long tool reports how far it got."""


# -- annotation presets: what a tool may do to the agent's world -----------------------------
# Every tool is closed-world: it touches the worktree and the scorer, nothing outside.

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
"""Looks, changes nothing: calling it again gives the same answer."""

REPLACES_IN_WORKTREE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
"""Overwrites worktree files with what it is given: the same call twice leaves the same tree."""

EDITS_WORKTREE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)
"""Changes worktree files relative to what they hold: a second call does something else."""

RUNS = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
"""Starts work (a sandboxed run, a scoring): overwrites nothing, but each call counts."""


# -- models -----------------------------------------------------------------------------------


class ToolArgs(BaseModel):
    """A tool's arguments: one field per argument, ``Annotated[type, Field(...)]`` with its
    description and bounds; the input schema is generated from these fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoArgs(ToolArgs):
    """A tool that takes no arguments."""


class Out(BaseModel):
    # No class docstrings on results: pydantic would copy them into the output schema.
    model_config = ConfigDict(extra="forbid")


class FileChangeOut(Out):
    path: str
    change: Literal["added", "modified", "deleted"]


# -- the declaration --------------------------------------------------------------------------


@dataclass(frozen=True)
class Tool(Generic[ArgsT, ResultT]):
    """One MCP tool as the registry (``_registry.TOOLS``) lists it."""

    name: str
    title: str
    description: str
    """What the tool does, as the client shows it next to the name."""
    use: str
    """When to reach for it: one clause, listed in the agent's instructions."""
    args: type[ArgsT]
    result: type[ResultT]
    annotations: ToolAnnotations
    run: Callable[[Session, ArgsT, Progress], Awaitable[ResultT]]
    elided: frozenset[str] = frozenset()
    """Arguments the audit log replaces by their length (file contents, patches)."""

    def __post_init__(self) -> None:
        unknown = self.elided - set(self.args.model_fields)
        if unknown:
            raise TypeError(f"tool {self.name}: elides {sorted(unknown)}, which it does not take")
        if not self.description.endswith(".") or not self.use.endswith("."):
            raise TypeError(f"tool {self.name}: description and use are whole sentences")

    @property
    def published(self) -> str:
        """The description the client lists: what the tool does, then when to use it."""
        return f"{self.description} Use it {self.use}"


# -- shared by the handlers -------------------------------------------------------------------


@contextlib.contextmanager
def refusals() -> Iterator[None]:
    """Our refusals and filesystem errors become tool errors; bugs surface as they are."""
    try:
        yield
    except PatchwardenError as exc:
        raise ToolError(str(exc)) from None
    except OSError as exc:
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        raise ToolError(f"{exc.strerror or exc}{where}") from None


async def in_thread(func: Callable[..., T], *args: Any) -> T:
    """``func(*args)`` off the event loop (git and file work block), refusals as tool errors."""
    with refusals():
        return await anyio.to_thread.run_sync(func, *args)


def check_node_id(node_id: str) -> str:
    """``node_id`` if it is a pytest node id inside the worktree; ToolInputError otherwise."""
    if not node_id or node_id.startswith("-") or any(c in node_id for c in "\0\n\r"):
        raise ToolInputError(f"{node_id!r} is not a pytest node id (path[::name])")
    split_path(node_id.split("::", 1)[0])
    return node_id

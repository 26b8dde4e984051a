"""Serve first, finish the set-up behind it: the tools wait for what they need.

``serve`` answers ``initialize``/``server/discover`` and ``tools/list`` once the arguments
and the configuration are validated and the cheap checks hold (docs/clients.md,
"Start-up"). What takes seconds (the worktree's checkout, the sandbox's probe runs, the
collection of the contract's test ids on the base, the scorer child becoming ready)
continues in the background; the first ``tools/call`` waits for it. A problem found there
fails that call, and every later one, with the one line the command line would have
printed; the line goes to stderr and the audit log at once, and ``serve`` exits 2 when the
session ends. It never leaves a call waiting: each step has its own bound (the sandbox's
run limits, the scorer's ready timeout).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.types import CallToolResult, TextContent

from patchwarden._errors import PatchwardenError, one_line

SetupStep = Callable[[], Awaitable[None]]
START_AT_LATEST_S = 2.0
"""The set-up starts with the first ``tools/list`` or tool call, or this long after serving
began, whichever comes first."""


class Readiness:
    """Whether the background set-up has finished, and if it failed, why (one line)."""

    def __init__(self) -> None:
        self._wanted = anyio.Event()
        self._done = anyio.Event()
        self.error: str | None = None

    def want(self) -> None:
        """Something needs the set-up now: start it if it waits for its moment."""
        self._wanted.set()

    async def wanted(self, at_latest_s: float) -> None:
        """Until :meth:`want`, or ``at_latest_s`` have passed."""
        with anyio.move_on_after(at_latest_s):
            await self._wanted.wait()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def succeed(self) -> None:
        self._done.set()

    def fail(self, message: str) -> None:
        if not self._done.is_set():
            self.error = message
            self._done.set()

    async def wait(self) -> str | None:
        """Until the set-up has finished (started now if it had not); its error line, or
        None when it holds."""
        self.want()
        await self._done.wait()
        return self.error


def setup_error_line(exc: BaseException) -> str:
    """The line a failed set-up step shows: the command line's wording, without its prefix."""
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return one_line(f"{where}{exc.strerror or exc}")
    return str(exc)


async def finish_setup(
    steps: Sequence[SetupStep],
    readiness: Readiness,
    report: Callable[[str], None],
    *,
    start_at_latest_s: float = START_AT_LATEST_S,
) -> None:
    """When the set-up is wanted, run the steps side by side; the first failure decides
    (reported once), the others are cancelled. ``readiness`` is settled either way."""
    await readiness.wanted(start_at_latest_s)
    try:
        async with anyio.create_task_group() as tg:
            for step in steps:
                tg.start_soon(_step, step, readiness, tg.cancel_scope)
    finally:
        if readiness.error is not None:
            report(readiness.error)
        readiness.succeed()  # no-op after a failure


async def _step(step: SetupStep, readiness: Readiness, scope: anyio.CancelScope) -> None:
    try:
        await step()
    except (PatchwardenError, OSError) as exc:
        readiness.fail(setup_error_line(exc))
        scope.cancel()


def say(line: str) -> None:
    print(f"patchwarden: {line}", file=sys.stderr, flush=True)


class ReadyGate:
    """Server middleware: a ``tools/call`` waits for the set-up, and fails with its error
    line when it did not hold. Everything else (discovery, ``tools/list``) goes through;
    the answer to the first ``tools/list`` starts the set-up (the client has started: the
    set-up's processes no longer compete with its start-up for the cores)."""

    def __init__(self, readiness: Readiness) -> None:
        self.readiness = readiness

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method == "tools/call":
            error = await self.readiness.wait()
            if error is not None:
                return CallToolResult(content=[TextContent(type="text", text=error)], is_error=True)
        result = await call_next(ctx)
        if ctx.method == "tools/list":
            self.readiness.want()
        return result

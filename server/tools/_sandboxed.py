"""What the tools that start a sandboxed run share (``run_tests``, ``run_python``): the run's
limits from the call's ``timeout_s``, its output as progress, its cancellation.

A run holds the session's run lock for as long as it runs: one sandboxed run of the
agent's at a time, and search_text knows when one may be changing the tree under it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import TypeVar

import anyio

from patchwarden.sandbox import Limits, prepare_writable_tree

from .._errors import ToolInputError
from ._base import Progress, refusals
from ._session import Session

T = TypeVar("T")

PROGRESS_INTERVAL_S = 0.5
CANCEL_WAIT_S = 30.0  # after a cancel, how long we wait for the killed run's thread to return
PERCENT = re.compile(r"\[\s*(\d{1,3})%\]\s*$")

OnOutput = Callable[[bytes], None]
Work = Callable[[threading.Event, OnOutput], T]
"""The blocking run: ``work(cancel, on_output)``, in a thread; ``cancel`` kills the sandbox."""


def run_limits(session: Session, timeout_s: float | None, default_s: float | None = None) -> Limits:
    """The operator's limits with the call's wall-clock limit (``timeout_s``, else
    ``default_s`` if smaller than the operator's); ToolInputError past the operator's."""
    limits: Limits = session.sandbox.limits
    if timeout_s is not None:
        if timeout_s > limits.wall_time_s:
            raise ToolInputError(
                f"timeout_s must be at most {limits.wall_time_s:g} (the operator's limit)"
            )
        return limits.model_copy(update={"wall_time_s": timeout_s})
    if default_s is not None and default_s < limits.wall_time_s:
        return limits.model_copy(update={"wall_time_s": default_s})
    return limits


class OutputProgress:
    """Output of a running process, turned into progress reports (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._partial = b""
        self.lines = 0
        self.percent: int | None = None
        self.message = ""
        self.version = 0

    def feed(self, chunk: bytes) -> None:
        with self._lock:
            data = self._partial + chunk
            *complete, self._partial = data.split(b"\n")
            for raw in complete:
                line = raw.decode("utf-8", "replace").rstrip()
                if not line:
                    continue
                self.lines += 1
                match = PERCENT.search(line)
                if match:
                    self.percent = min(100, int(match.group(1)))
                    self.message = line[:200]
                self.version += 1

    def snapshot(self) -> tuple[int, float, float | None, str]:
        with self._lock:
            if self.percent is not None:
                return self.version, float(self.percent), 100.0, self.message
            return self.version, float(self.lines), None, f"{self.lines} lines of output"


async def run_sandboxed(session: Session, work: Work[T], progress: Progress) -> T:
    """``work`` in a thread under the session's run lock, its output reported as progress
    every PROGRESS_INTERVAL_S; a cancelled call kills the run and waits for it to be gone.
    Our errors become tool errors."""
    output = OutputProgress()
    cancel = threading.Event()
    finished = threading.Event()

    def in_thread() -> T:
        try:
            prepare_writable_tree(session.workspace.tree, session.sandbox)
            return work(cancel, output.feed)
        finally:
            finished.set()

    sent = [-1]

    async def send_progress() -> None:
        version, value, total, message = output.snapshot()
        if version != sent[0]:
            sent[0] = version
            await progress(value, total, message)

    async def pump() -> None:
        while True:
            await send_progress()
            await anyio.sleep(PROGRESS_INTERVAL_S)

    outcome: T | Exception
    async with session.run_lock, anyio.create_task_group() as tg:
        tg.start_soon(pump)
        try:
            outcome = await anyio.to_thread.run_sync(in_thread, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            cancel.set()  # the launcher kills the whole sandbox
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(finished.wait, CANCEL_WAIT_S)
            raise
        except Exception as exc:  # raised below, outside the task group
            outcome = exc
        tg.cancel_scope.cancel()
    if isinstance(outcome, Exception):
        with refusals():
            raise outcome
    await send_progress()  # the last lines, also of a run shorter than one interval
    return outcome

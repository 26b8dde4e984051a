"""One scorer queue for a hosted server: a small pool of supervised scorer children, taken
in turn by the workspaces (docs/scale.md, "Hosted workspaces").

A scorer child serves one repository and contract (its ``Start`` line), so the pool keeps
children per distinct ``Start``: workspaces on the same repository, contract and held-out
directory share them, and they are stopped when the last such workspace is deleted. At most
``slots`` requests are scored at once over the whole server (each runs
``scorer.worker_count()`` sandboxed runs side by side, so the default keeps every core busy
and no more). A request waits for a slot in a queue per workspace, and the slots go round
the workspaces that wait: one agent submitting in a loop cannot starve another.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections import deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

import anyio
import anyio.abc

from patchwarden.scorer.protocol import Answer, Request, Start

from ._scorer_client import OnProgress
from ._supervisor import EventSink, RestartPolicy, ScorerSupervisor


def default_slots(worker_count: int) -> int:
    """Requests scored at once: enough to keep every core busy with ``worker_count`` runs
    per request."""
    return max(1, math.ceil((os.cpu_count() or 1) / max(1, worker_count)))


class FairQueue:
    """At most ``slots`` holders at once; waiters are served round-robin by workspace."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.busy = 0
        self._waiting: dict[str, deque[anyio.Event]] = {}
        self._turns: deque[str] = deque()

    @property
    def waiting(self) -> int:
        return sum(len(q) for q in self._waiting.values())

    @contextlib.asynccontextmanager
    async def turn(self, workspace: str) -> AsyncIterator[None]:
        if self.busy < self.slots and not self._turns:
            self.busy += 1
        else:
            granted = anyio.Event()
            queue = self._waiting.setdefault(workspace, deque())
            if not queue:
                self._turns.append(workspace)
            queue.append(granted)
            try:
                await granted.wait()
            except BaseException:
                if granted.is_set():  # handed a slot just as it was cancelled
                    self._release()
                else:
                    self._forget(workspace, granted)
                raise
        try:
            yield
        finally:
            self._release()

    def _forget(self, workspace: str, granted: anyio.Event) -> None:
        queue = self._waiting.get(workspace)
        if queue is None:
            return
        with contextlib.suppress(ValueError):
            queue.remove(granted)
        if not queue:
            del self._waiting[workspace]
            with contextlib.suppress(ValueError):
                self._turns.remove(workspace)

    def _release(self) -> None:
        """Hand the slot to the next workspace in turn, or free it."""
        if not self._turns:
            self.busy -= 1
            return
        workspace = self._turns.popleft()
        queue = self._waiting[workspace]
        queue.popleft().set()  # the slot passes on: busy stays the same
        if queue:
            self._turns.append(workspace)
        else:
            del self._waiting[workspace]


@dataclass
class _Children:
    """The scorer children of one ``Start``."""

    start: Start
    policy: RestartPolicy
    users: int = 0
    idle: list[ScorerSupervisor] = field(default_factory=list)
    all: list[ScorerSupervisor] = field(default_factory=list)
    spawning: anyio.Lock = field(default_factory=anyio.Lock)


class ScorerPool:
    """Scorer children shared by the workspaces of a hosted server."""

    def __init__(
        self, argv: Sequence[str], slots: int, on_event: EventSink, tg: anyio.abc.TaskGroup
    ) -> None:
        self._argv = list(argv)
        self.queue = FairQueue(slots)
        self._on_event = on_event
        self._tg = tg
        self._keys: dict[str, _Children] = {}

    @property
    def children(self) -> int:
        return sum(len(c.all) for c in self._keys.values())

    def join(self, start: Start, policy: RestartPolicy) -> str:
        """A workspace will send requests for ``start``; the key to send them with."""
        key = start.model_dump_json()
        children = self._keys.setdefault(key, _Children(start, policy))
        children.users += 1
        return key

    async def leave(self, key: str) -> None:
        """A workspace is gone; the last one of a key stops its children."""
        children = self._keys.get(key)
        if children is None:
            return
        children.users -= 1
        if children.users > 0:
            return
        del self._keys[key]
        with anyio.CancelScope(shield=True):
            for child in children.all:
                await child.aclose()

    async def _spawn(self, children: _Children) -> ScorerSupervisor:
        child = ScorerSupervisor(self._argv, children.start, children.policy, self._on_event)
        await child.start()
        children.all.append(child)
        self._tg.start_soon(child.watch)
        return child

    async def ready(self, key: str) -> None:
        """At least one child of ``key`` has started (ScorerUnavailable if it cannot)."""
        children = self._keys[key]
        async with children.spawning:
            if not children.all:
                children.idle.append(await self._spawn(children))

    async def request(
        self,
        key: str,
        workspace: str,
        request: Request,
        on_progress: OnProgress | None = None,
    ) -> Answer:
        """The answer of a child of ``key``, once ``workspace``'s turn has come;
        ``on_progress`` hears how far a scoring got."""
        async with self.queue.turn(workspace):
            children = self._keys[key]
            child = children.idle.pop() if children.idle else await self._spawn(children)
            try:
                return await child.request(request, on_progress)
            finally:
                if key in self._keys:
                    children.idle.append(child)

    async def aclose(self) -> None:
        for key in list(self._keys):
            self._keys[key].users = 1
            await self.leave(key)


@dataclass(frozen=True)
class PooledScorer:
    """The scorer as one workspace's tools see it (server/tools/_session.py ``Scorer``)."""

    pool: ScorerPool
    key: str
    workspace: str

    async def request(self, request: Request, on_progress: OnProgress | None = None) -> Answer:
        return await self.pool.request(self.key, self.workspace, request, on_progress)

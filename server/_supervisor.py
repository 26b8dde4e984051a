"""The scorer child, supervised: a crash, a kill or a hang costs one request, not the session.

The server watches its scorer child (docs/reliability.md, "Supervision"):

- a watcher task waits for the child to exit. Whatever the cause (a crash, a kill -9, the
  out-of-memory killer), the exit is recorded in the audit log and a new child is started
  after a backoff (``scorer.restart_backoff_s``, doubling), at most ``scorer.max_restarts``
  times within ``scorer.restart_window_s``; past that the scorer stays down, every request
  is refused with one line saying so, and the other tools keep working;
- every request has a deadline (``scorer.request_timeout_s``, or one derived from the run
  limits so that no run within its limits can reach it). A child that misses it is hung: it
  is killed, and the watcher restarts it;
- a request that was in flight when its child died, hung or broke the protocol raises
  :class:`ScorerFault`: the caller answers a clear tool error. Whether it counts against the
  agent's submissions is the tool's business (server/tools/_submit_patch.py).
"""

from __future__ import annotations

import contextlib
import math
import subprocess
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc

from patchwarden.sandbox import SandboxConfig
from patchwarden.scorer import ScorerConfig
from patchwarden.scorer.protocol import Answer, Request, Start

from ._errors import ScorerUnavailable
from ._scorer_client import READY_TIMEOUT_S, OnProgress, ScorerClient, ScorerGone

BACKOFF_CAP_S = 60.0
"""The longest wait before a restart, however many came before it in the window."""
RUN_REAP_ALLOWANCE_S = 15.0
"""Per sandboxed run on top of its wall limit: killing the sandbox and reaping it (the
launcher gives up on a sandbox that survives SIGKILL after 10 s)."""
SETUP_ALLOWANCE_S = 300.0
"""Per request on top of its runs: fetching into the clone, checkouts, the restore, the
checks and the evidence bundle."""
FREEZE_RUNS = 4
"""Sandboxed runs of the freeze procedure, one after the other (docs/design/contract-layers.md)."""

EventSink = Callable[[str, str, Mapping[str, Any]], None]
"""(event, one-line message, fields): where the supervisor reports exits and restarts."""


class ScorerFault(ScorerUnavailable):
    """A request got no answer: the scorer died, hung, broke the protocol or is down."""


@dataclass(frozen=True)
class RestartPolicy:
    request_timeout_s: float
    max_restarts: int
    window_s: float
    backoff_s: float

    @classmethod
    def of(cls, config: ScorerConfig, sandbox: SandboxConfig, seeds: int) -> RestartPolicy:
        return cls(
            request_timeout_s=request_deadline(config, sandbox, seeds),
            max_restarts=config.max_restarts,
            window_s=config.restart_window_s,
            backoff_s=config.restart_backoff_s,
        )


def request_deadline(config: ScorerConfig, sandbox: SandboxConfig, seeds: int) -> float:
    """``scorer.request_timeout_s``, or a bound no request whose runs stay within their
    limits can reach: a patch that hangs its runs must get its verdict (missing rows are
    a reject), not a fault that the agent does not pay for. ``seeds``: the contract's; the
    extra seeds every score draws run too."""
    if config.request_timeout_s is not None:
        return config.request_timeout_s
    waves = math.ceil(2 * (max(seeds, 1) + config.extra_seeds) / config.worker_count())
    score = waves * (config.run_limits.wall_time_s + RUN_REAP_ALLOWANCE_S)
    freeze = FREEZE_RUNS * (sandbox.limits.wall_time_s + RUN_REAP_ALLOWANCE_S)
    return SETUP_ALLOWANCE_S + max(score, freeze)


def _exit_text(code: int | None) -> str:
    if code is None:
        return "stopped answering"
    if code < 0:
        return f"was killed by signal {-code}"
    return f"exited with code {code}"


class ScorerSupervisor:
    """Requests to the current scorer child; a watcher replaces the child when it dies."""

    def __init__(
        self,
        argv: Sequence[str],
        start: Start,
        policy: RestartPolicy,
        on_event: EventSink,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._argv = list(argv)
        self._start = start
        self.policy = policy
        self._on_event = on_event
        self._env = dict(env) if env is not None else None
        self._client: ScorerClient | None = None
        self._changed = anyio.Event()
        self._down: str | None = None
        self._restarts: deque[float] = deque()
        self._closing = False
        self.restart_count = 0

    @property
    def pid(self) -> int | None:
        """The current child's pid (None while it is being replaced)."""
        return None if self._client is None else self._client.pid

    async def _spawn(self) -> ScorerClient:
        process = await anyio.open_process(
            self._argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,
            env=self._env,
        )
        client = ScorerClient(process)
        try:
            await client.start(self._start)
        except BaseException:
            await client.aclose()
            raise
        return client

    def _set_client(self, client: ScorerClient | None) -> None:
        self._client = client
        self._changed.set()
        self._changed = anyio.Event()

    async def start(self) -> None:
        """Start the first child; ScorerUnavailable if it does not become ready (serve then
        does not start)."""
        self._set_client(await self._spawn())

    async def watch(self) -> None:
        """Replace each child that exits, until the restart limit is reached."""
        while self._client is not None:
            client = self._client
            code = await client.wait()
            if self._closing:
                return
            self._set_client(None)
            self._on_event(
                "scorer_exit",
                f"the scorer (pid {client.pid}) {_exit_text(code)}",
                {"pid": client.pid, "exit_code": code},
            )
            await self._restart()

    async def _restart(self) -> None:
        """Start a new child after the backoff; give up past the limit (the scorer stays
        down and every request says so)."""
        policy = self.policy
        while not self._closing:
            now = time.monotonic()
            while self._restarts and now - self._restarts[0] > policy.window_s:
                self._restarts.popleft()
            if len(self._restarts) >= policy.max_restarts:
                self._down = (
                    f"the scorer failed {len(self._restarts) + 1} times within "
                    f"{policy.window_s:g} s and stays down; the operator must look at it "
                    "(its stderr and the audit log say why)"
                )
                self._on_event("scorer_down", self._down, {"restarts": len(self._restarts)})
                self._set_client(None)
                return
            delay = min(policy.backoff_s * 2 ** len(self._restarts), BACKOFF_CAP_S)
            self._restarts.append(now)
            await anyio.sleep(delay)
            self.restart_count += 1
            try:
                client = await self._spawn()
            except (ScorerUnavailable, OSError) as exc:  # OSError: no process could start
                why = exc.message if isinstance(exc, ScorerUnavailable) else str(exc)
                self._on_event(
                    "scorer_restart_failed",
                    f"scorer restart {self.restart_count} failed: {why}",
                    {"restart": self.restart_count, "delay_s": delay},
                )
                continue
            self._on_event(
                "scorer_restart",
                f"scorer restarted (pid {client.pid}; restart {len(self._restarts)} of "
                f"{policy.max_restarts} within {policy.window_s:g} s, after {delay:g} s)",
                {"pid": client.pid, "restart": self.restart_count, "delay_s": delay},
            )
            self._set_client(client)
            return

    async def _current(self) -> ScorerClient:
        """The child to send a request to; waits while one is being started."""
        deadline = BACKOFF_CAP_S + READY_TIMEOUT_S + 5
        with anyio.move_on_after(deadline):
            while self._client is None and self._down is None and not self._closing:
                await self._changed.wait()
        if self._down is not None:
            raise ScorerFault(self._down)
        if self._client is None:
            raise ScorerFault("the scorer is not running (it is being restarted)")
        return self._client

    async def request(self, request: Request, on_progress: OnProgress | None = None) -> Answer:
        """The scorer's answer to ``request`` (numbered by the channel); ScorerFault when none
        can be had. ``on_progress`` hears how far a scoring got."""
        client = await self._current()
        timeout = self.policy.request_timeout_s
        try:
            return await client.request(request, timeout_s=timeout, on_progress=on_progress)
        except TimeoutError:
            client.kill()  # hung: the watcher starts a new one
            self._on_event(
                "scorer_hung",
                f"the scorer (pid {client.pid}) did not answer within {timeout:g} s; killed",
                {"pid": client.pid, "timeout_s": timeout},
            )
            raise ScorerFault(
                f"the scorer did not answer within {timeout:g} s and was stopped; "
                "a new one is starting"
            ) from None
        except ScorerGone as exc:
            client.kill()  # dead already, or alive but off the protocol: replace it
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await client.wait()
            raise ScorerFault(
                f"the scorer failed while handling this request ({exc.message}, "
                f"{_exit_text(client.returncode)}); a new one is starting"
            ) from None

    async def aclose(self) -> None:
        self._closing = True
        client, self._client = self._client, None
        self._changed.set()
        if client is not None:
            await client.aclose()


@contextlib.asynccontextmanager
async def supervise_scorer(
    argv: Sequence[str],
    start: Start,
    policy: RestartPolicy,
    on_event: EventSink,
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[ScorerSupervisor]:
    """Start the scorer (ScorerUnavailable if it does not become ready), watch it while the
    block runs, stop it on exit. An exception of the block comes out as itself, not wrapped
    in the watcher's task group (the command line reports each kind its own way)."""
    supervisor = ScorerSupervisor(argv, start, policy, on_event, env)
    await supervisor.start()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(supervisor.watch)
            try:
                yield supervisor
            finally:
                with anyio.CancelScope(shield=True):
                    await supervisor.aclose()
                tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise

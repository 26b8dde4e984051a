"""The server's private channel to the scorer child (scorer/_process.py, scorer/protocol.py).

The scorer runs as a child process of the server (``python -m patchwarden.scorer``); the
only way to it is the child's stdin/stdout pipe, which the server holds and never passes on
(the descriptors are close-on-exec, and sandboxed processes get a new PID namespace and no
network). One request at a time; each answer is matched by id, so an answer to a request
the agent cancelled is read and dropped.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from pydantic import ValidationError

from patchwarden.scorer.protocol import (
    ANSWER,
    MAX_ANSWER_BYTES,
    Answer,
    Failure,
    Ready,
    Request,
    RequestId,
    RunsDone,
    Start,
    encode,
)

from ._errors import ScorerUnavailable

OnProgress = Callable[[RunsDone], Awaitable[None]]
"""Where a request's progress lines go (the scorer sends them while it scores)."""

READY_TIMEOUT_S = 120.0  # the scorer checks bubblewrap and its state dir before it says ready
STOP_GRACE_S = 5.0  # after closing its stdin, how long the scorer gets to finish its current line
UNNUMBERED: RequestId = 0
"""The id a caller gives a request: the channel numbers every request it sends itself, so
that an answer to an abandoned request is never taken for the answer to a later one."""


class ScorerGone(ScorerUnavailable):
    """The scorer child exited or broke the protocol; no verdict can be had."""


def scorer_argv(python: str = sys.executable) -> list[str]:
    """The command line that starts the scorer child; its settings come on the channel."""
    return [python, "-P", "-m", "patchwarden.scorer"]


class ScorerClient:
    """Requests to a running scorer child."""

    def __init__(self, process: Process) -> None:
        self._process = process
        assert process.stdout is not None and process.stdin is not None
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self._lock = anyio.Lock()
        self._ids = itertools.count(1)
        # Signals go through a pidfd: Popen.kill() polls first, which reaps the child
        # under asyncio's watcher (it then reports exit code 255); a pidfd also cannot hit
        # a process that reused the pid.
        self._pidfd = os.pidfd_open(process.pid)

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    async def wait(self) -> int:
        """Until the scorer process exits; its exit status (-N: killed by signal N)."""
        return await self._process.wait()

    def kill(self) -> None:
        """SIGKILL the scorer (its sandboxed runs die with it: they hold a parent-death
        signal and bubblewrap's --die-with-parent)."""
        self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> None:
        if self._pidfd >= 0:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, signum)

    async def _read(self) -> Answer:
        try:
            line = await self._stdout.receive_until(b"\n", MAX_ANSWER_BYTES)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
            raise ScorerGone(
                f"the scorer process has exited (code {self._process.returncode})"
            ) from None
        except anyio.DelimiterNotFound:
            raise ScorerGone("the scorer sent a line longer than the protocol allows") from None
        try:
            return ANSWER.validate_json(line)
        except ValidationError:
            raise ScorerGone("the scorer sent a line outside the protocol") from None

    async def _send(self, line: bytes) -> None:
        try:
            await self._stdin.send(line)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise ScorerGone("the scorer process has exited") from None

    async def start(self, start: Start) -> None:
        """Send the settings and wait until the scorer says ready."""
        try:
            with anyio.fail_after(READY_TIMEOUT_S):
                await self._send(encode(start))
                first = await self._read()
        except TimeoutError:
            raise ScorerUnavailable(
                f"the scorer did not become ready within {READY_TIMEOUT_S:.0f} s"
            ) from None
        except ScorerGone as exc:
            raise ScorerUnavailable(f"the scorer did not start: {exc.message}") from None
        if isinstance(first, Failure):
            raise ScorerUnavailable(f"the scorer did not start: {first.error}")
        if not isinstance(first, Ready):
            raise ScorerUnavailable("the scorer did not start: it answered out of protocol")

    async def request(
        self,
        request: Request,
        *,
        timeout_s: float | None = None,
        on_progress: OnProgress | None = None,
    ) -> Answer:
        """Send ``request``, numbered by this channel (its own id is replaced), and return
        its answer; ``on_progress`` hears each RunsDone line before it.

        A Failure is returned for the caller to report; a broken channel raises ScorerGone;
        no answer within ``timeout_s`` (counted once this request has the channel) raises
        TimeoutError, and the channel is then in an unknown state.
        """
        async with self._lock:
            with anyio.fail_after(timeout_s):
                request_id = next(self._ids)
                await self._send(encode(request.model_copy(update={"id": request_id})))
                while True:
                    answer = await self._read()
                    answer_id = getattr(answer, "id", None)
                    if isinstance(answer, RunsDone):
                        if answer_id == request_id and on_progress is not None:
                            await on_progress(answer)
                        continue
                    if answer_id == request_id or (
                        isinstance(answer, Failure) and answer_id is None
                    ):
                        return answer
                    # An answer to an earlier request whose caller was cancelled.

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await self._stdin.aclose()
            with anyio.move_on_after(STOP_GRACE_S):
                await self._process.wait()
            if self._process.returncode is None:
                self._signal(signal.SIGTERM)
                with anyio.move_on_after(STOP_GRACE_S):
                    await self._process.wait()
            if self._process.returncode is None:
                self._signal(signal.SIGKILL)
                await self._process.wait()
            if self._pidfd >= 0:
                os.close(self._pidfd)
                self._pidfd = -1


@contextlib.asynccontextmanager
async def start_scorer(
    argv: Sequence[str], start: Start, env: Mapping[str, str] | None = None
) -> AsyncIterator[ScorerClient]:
    """Start the scorer child, send it its settings, wait until it says ready, and stop it
    on exit."""
    process = await anyio.open_process(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=None,
        env=dict(env) if env is not None else None,
    )
    client = ScorerClient(process)
    try:
        await client.start(start)
        yield client
    finally:
        await client.aclose()

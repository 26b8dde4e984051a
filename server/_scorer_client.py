"""The server's private channel to the scorer child (see scorer/_process.py).

The scorer runs as a child process of the server; the only way to it is the
child's stdin/stdout pipe, which the server holds and never passes on (the
descriptors are close-on-exec, and sandboxed processes get a new PID
namespace and no network). One request at a time; each response is matched
by id, so a response to a request the agent cancelled is read and dropped.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from patchwarden.sandbox import SandboxError

READY_TIMEOUT_S = 120.0  # the scorer checks bubblewrap and its state dir before it says ready
STOP_GRACE_S = 5.0  # after closing its stdin, how long the scorer gets to finish its current line
MAX_RESPONSE_BYTES = 1024 * 1024


class ScorerGone(SandboxError):
    """The scorer child exited or broke the protocol; no verdict can be had."""


def scorer_argv(
    *,
    repo: Path,
    contract: str,
    log_dir: Path,
    config_path: Path | None,
    python: str = sys.executable,
) -> list[str]:
    """The command line that starts the scorer child (the hidden ``patchwarden scorer``)."""
    argv = [
        python,
        "-P",
        "-m",
        "patchwarden",
        "scorer",
        "--repo",
        str(repo),
        "--contract",
        contract,
        "--log-dir",
        str(log_dir),
    ]
    if config_path is not None:
        argv += ["--config", str(config_path)]
    return argv


class ScorerClient:
    """Requests to a running scorer child."""

    def __init__(self, process: Process) -> None:
        self._process = process
        assert process.stdout is not None and process.stdin is not None
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self._lock = anyio.Lock()
        self._ids = itertools.count(1)

    @property
    def pid(self) -> int:
        return self._process.pid

    async def _read(self) -> dict[str, Any]:
        try:
            line = await self._stdout.receive_until(b"\n", MAX_RESPONSE_BYTES)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
            raise ScorerGone(
                f"the scorer process has exited (code {self._process.returncode})"
            ) from None
        except anyio.DelimiterNotFound:
            raise ScorerGone("the scorer sent a line longer than the protocol allows") from None
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            raise ScorerGone("the scorer sent a line that is not JSON") from None
        if not isinstance(obj, dict):
            raise ScorerGone("the scorer sent a line that is not a JSON object")
        return obj

    async def wait_ready(self) -> None:
        try:
            with anyio.fail_after(READY_TIMEOUT_S):
                first = await self._read()
        except TimeoutError:
            raise SandboxError(
                f"the scorer did not become ready within {READY_TIMEOUT_S:.0f} s"
            ) from None
        except ScorerGone as exc:
            raise SandboxError(f"the scorer did not start: {exc.message}") from None
        if first.get("ready") is not True:
            raise SandboxError(f"the scorer did not start: {first.get('error', first)}")

    async def request(self, op: str, fields: Mapping[str, Any]) -> dict[str, Any]:
        """Send one request and return its response (``{"error": ...}`` raises ScorerGone only for
        a broken channel; an error answer is returned for the caller to report)."""
        async with self._lock:
            request_id = next(self._ids)
            line = json.dumps({"id": request_id, "op": op, **fields}).encode() + b"\n"
            try:
                await self._stdin.send(line)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise ScorerGone("the scorer process has exited") from None
            while True:
                response = await self._read()
                if response.get("id") == request_id:
                    return response
                # An answer to an earlier request whose caller was cancelled.

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await self._stdin.aclose()
            with anyio.move_on_after(STOP_GRACE_S):
                await self._process.wait()
            if self._process.returncode is None:
                self._process.terminate()
                with anyio.move_on_after(STOP_GRACE_S):
                    await self._process.wait()
            if self._process.returncode is None:
                self._process.kill()
                await self._process.wait()


@contextlib.asynccontextmanager
async def start_scorer(
    argv: Sequence[str], env: Mapping[str, str] | None = None
) -> AsyncIterator[ScorerClient]:
    """Start the scorer child, wait until it says ready, and stop it on exit."""
    process = await anyio.open_process(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=None,
        env=dict(env) if env is not None else None,
    )
    client = ScorerClient(process)
    try:
        await client.wait_ready()
        yield client
    finally:
        await client.aclose()

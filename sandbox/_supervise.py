"""Supervision of one started process: rlimits, wall/idle/cancel timeouts that kill the
whole process tree, capped output capture, and reaping.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import resource
import select
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ._config import Limits
from ._errors import SandboxError


@dataclass(frozen=True)
class ProcessResult:
    """What happened to one sandboxed command. Never an exception, whatever the outcome."""

    argv: tuple[str, ...]
    exit_code: int | None
    """Exit status; 128+N if the process died of signal N; None if we killed it."""
    signal: int | None
    """The signal we sent (SIGKILL) when we killed the run, else None."""
    stdout: str
    stderr: str
    truncated: bool
    """stdout or stderr went past limits.output_bytes; the rest was discarded."""
    timed_out: bool
    """Killed at limits.wall_time_s."""
    idle_timed_out: bool
    """Killed after limits.idle_time_s without output."""
    cancelled: bool
    """Killed because the cancel event was set."""
    duration_s: float
    backend: str
    stdout_truncated: bool = False
    """stdout went past limits.output_bytes (``truncated`` says either stream did)."""
    stderr_truncated: bool = False


READ_CHUNK_BYTES = 65536
"""One pipe read; the Linux pipe buffer is 64 KiB, so one read empties a full pipe."""
CANCEL_POLL_S = 0.05
"""How often the cancel event is looked at while the process is silent: the cancel latency."""
DRAIN_GRACE_S = 1.0
"""After the process tree is dead, how long to wait for its pipes to reach end of file. Only
a process that left our process group (possible with backend 'none') can hold them open."""
REAP_TIMEOUT_S = 10.0
"""Killed processes vanish within milliseconds; one that survives SIGKILL this long is stuck
in the kernel, and we fail closed rather than report the run as finished."""
REAP_POLL_S = 0.01
"""Poll interval while waiting for a killed process group to vanish (no kernel API waits for
a whole group)."""
CPU_HARD_GRACE_S = 1
"""RLIMIT_CPU's soft limit sends SIGXCPU; the hard limit one second later sends SIGKILL to a
process that ignores it."""
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
_LIBC = ctypes.CDLL(None, use_errno=True)
OutputCallback = Callable[[bytes], None]
StopReason = Literal["wall", "idle", "cancel"]


@dataclass(frozen=True)
class Command:
    argv: list[str]
    shown_argv: tuple[str, ...]
    cwd: Path | None
    env: dict[str, str]
    pass_fds: tuple[int, ...]
    info_fd: int | None
    """Read end of bubblewrap's --info-fd, which names the sandbox's init process."""
    beat_fd: int | None = None
    """Read end of a pipe whose bytes reset the idle timer (``LaunchSpec.beat_fd``)."""


def start_process(command: Command, limits: Limits, stdin: bytes | None) -> subprocess.Popen[bytes]:
    rlimits = _rlimits(limits)
    return subprocess.Popen(
        command.argv,
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=command.cwd,
        env=command.env,
        pass_fds=command.pass_fds,
        start_new_session=True,
        preexec_fn=functools.partial(_in_child_before_exec, rlimits),
    )


def _rlimits(limits: Limits) -> list[tuple[int, tuple[int, int]]]:
    mib = 1024 * 1024
    wanted = [
        (resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + CPU_HARD_GRACE_S)),
        (resource.RLIMIT_AS, (limits.memory_mb * mib, limits.memory_mb * mib)),
        (resource.RLIMIT_NPROC, (limits.processes, limits.processes)),
        (resource.RLIMIT_FSIZE, (limits.file_size_mb * mib, limits.file_size_mb * mib)),
        (resource.RLIMIT_CORE, (0, 0)),
    ]
    if os.geteuid() == 0:
        return wanted
    # An unprivileged process cannot raise a hard limit: stay within the ones we have.
    clamped = []
    for which, (soft, hard) in wanted:
        current_hard = resource.getrlimit(which)[1]
        if current_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, current_hard), min(hard, current_hard)
        clamped.append((which, (soft, hard)))
    return clamped


def _in_child_before_exec(rlimits: list[tuple[int, tuple[int, int]]]) -> None:
    """Runs in the forked child: the limits, and death with the launching thread."""
    for which, values in rlimits:
        resource.setrlimit(which, values)
    # If patchwarden dies, so does the sandbox (bubblewrap's --die-with-parent covers the
    # rest). The launching thread blocks in launch() until the child is reaped, so it is
    # alive for as long as the child is.
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


@dataclass
class _Capture:
    """One output stream: keeps the first `cap` bytes, counts the rest as discarded."""

    cap: int
    data: bytearray = field(default_factory=bytearray)
    truncated: bool = False

    def keep(self, chunk: bytes) -> bytes:
        kept = chunk[: max(0, self.cap - len(self.data))]
        self.data += kept
        if len(kept) < len(chunk):
            self.truncated = True
        return kept

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


class Supervisor:
    """Waits for one process while enforcing the limits, then makes sure its tree is gone."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        command: Command,
        limits: Limits,
        stdin: bytes | None,
        cancel: threading.Event | None,
        on_output: OutputCallback | None,
    ) -> None:
        self._process = process
        self._command = command
        self._limits = limits
        self._stdin = memoryview(stdin or b"")
        self._cancel = cancel
        self._on_output = on_output
        self._started = time.monotonic()
        self._ended = self._started
        self._last_output = self._started
        self._captures: dict[int, _Capture] = {}
        self._info = bytearray()
        self._sandbox_init: int | None = None  # pidfd of bubblewrap's init in the sandbox
        self._selector = selectors.DefaultSelector()
        self._exit_fd = os.pidfd_open(process.pid)

    def run(self, backend: str) -> ProcessResult:
        with contextlib.ExitStack() as cleanup:
            cleanup.callback(self._close)
            try:
                self._register()
                reason = self._wait()
            finally:
                self._kill_and_reap()
            self._pump_until(lambda: not self._watching(*self._captures), DRAIN_GRACE_S)
            return self._result(reason, backend)

    def _register(self) -> None:
        assert self._process.stdout is not None and self._process.stderr is not None
        for stream in (self._process.stdout, self._process.stderr):
            self._captures[stream.fileno()] = _Capture(self._limits.output_bytes)
            self._selector.register(stream.fileno(), selectors.EVENT_READ)
        if self._process.stdin is not None:
            os.set_blocking(self._process.stdin.fileno(), False)
            self._selector.register(self._process.stdin.fileno(), selectors.EVENT_WRITE)
        if self._command.info_fd is not None:
            self._selector.register(self._command.info_fd, selectors.EVENT_READ)
        if self._command.beat_fd is not None:
            self._selector.register(self._command.beat_fd, selectors.EVENT_READ)
        self._selector.register(self._exit_fd, selectors.EVENT_READ)

    def _wait(self) -> StopReason | None:
        """Until the process exits (None) or a limit is reached (the reason)."""
        while True:
            reason, timeout = self._limit_reached()
            if reason is not None:
                break
            if self._handle_events(timeout):
                break
        self._ended = time.monotonic()
        return reason

    def _limit_reached(self) -> tuple[StopReason | None, float]:
        now = time.monotonic()
        if self._cancel is not None and self._cancel.is_set():
            return "cancel", 0.0
        wall_left = self._started + self._limits.wall_time_s - now
        idle_left = self._last_output + self._limits.idle_time_s - now
        if wall_left <= 0:
            return "wall", 0.0
        if idle_left <= 0:
            return "idle", 0.0
        timeout = min(wall_left, idle_left)
        if self._cancel is not None:
            timeout = min(timeout, CANCEL_POLL_S)
        return None, timeout

    def _handle_events(self, timeout: float) -> bool:
        """Serve the pipes that are ready; whether the process has exited."""
        exited = False
        for key, _ in self._selector.select(timeout):
            if key.fd == self._exit_fd:
                exited = True
            elif key.fd in self._captures:
                self._read_output(key.fd)
            elif key.fd == self._command.info_fd:
                self._read_info(key.fd)
            elif key.fd == self._command.beat_fd:
                self._read_beat(key.fd)
            else:
                self._write_stdin(key.fd)
        return exited

    def _pump_until(self, done: Callable[[], bool], grace_s: float) -> None:
        deadline = time.monotonic() + grace_s
        while not done() and time.monotonic() < deadline:
            self._handle_events(deadline - time.monotonic())

    def _watching(self, *fds: int | None) -> bool:
        return any(fd is not None and fd in self._selector.get_map() for fd in fds)

    def _read_output(self, fd: int) -> None:
        chunk = os.read(fd, READ_CHUNK_BYTES)
        if not chunk:
            self._selector.unregister(fd)
            return
        self._last_output = time.monotonic()
        kept = self._captures[fd].keep(chunk)
        if kept and self._on_output is not None:
            self._on_output(kept)

    def _read_beat(self, fd: int) -> None:
        """A beat: the process is waiting on work done elsewhere, not idle."""
        if not os.read(fd, READ_CHUNK_BYTES):
            self._selector.unregister(fd)
            return
        self._last_output = time.monotonic()

    def _read_info(self, fd: int) -> None:
        chunk = os.read(fd, READ_CHUNK_BYTES)
        self._info += chunk
        if not chunk:
            self._selector.unregister(fd)
        if self._sandbox_init is None and self._info:
            self._open_sandbox_init()

    def _open_sandbox_init(self) -> None:
        """Hold bubblewrap's init process (pid 1 inside) by pidfd, as soon as it is named.

        Killing it makes the kernel kill everything in the sandbox's PID namespace, and it
        exits only after all of them are gone; waiting for it proves the sandbox is empty.
        """
        try:
            info = json.loads(self._info)
        except ValueError:
            return  # not complete yet; bubblewrap writes it in one go, so rarely seen
        self._sandbox_init = _open_init_of(int(info["child-pid"]), int(info["pid-namespace"]))

    def _write_stdin(self, fd: int) -> None:
        try:
            written = os.write(fd, self._stdin[:READ_CHUNK_BYTES])
        except BrokenPipeError:
            written = len(self._stdin)  # the command closed stdin: nothing more to send
        self._stdin = self._stdin[written:]
        if not self._stdin:
            self._close_stdin()

    def _close_stdin(self) -> None:
        stdin = self._process.stdin
        if stdin is not None and not stdin.closed:
            if self._watching(stdin.fileno()):
                self._selector.unregister(stdin.fileno())
            stdin.close()

    def _kill_and_reap(self) -> None:
        """Kill the process group (also after a normal exit: background children go too),
        reap our child, and wait until nothing of the run is left."""
        if self._watching(self._exit_fd):
            self._selector.unregister(self._exit_fd)
        self._close_stdin()
        with contextlib.suppress(ProcessLookupError):  # the group is already empty
            os.killpg(self._process.pid, signal.SIGKILL)
        self._process.wait()
        deadline = time.monotonic() + REAP_TIMEOUT_S
        if self._command.info_fd is not None:
            # A run stopped early may not have read --info-fd yet; bubblewrap is dead, so
            # the pipe ends soon.
            self._pump_until(lambda: not self._watching(self._command.info_fd), DRAIN_GRACE_S)
            self._kill_sandbox_init()
        _wait_group_gone(self._process.pid, deadline)

    def _kill_sandbox_init(self) -> None:
        if self._sandbox_init is None:
            return
        # If it exited already, the pidfd still tells us when it is fully gone.
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(self._sandbox_init, signal.SIGKILL)
        ready, _, _ = select.select([self._sandbox_init], [], [], REAP_TIMEOUT_S)
        if not ready:
            raise SandboxError("the sandbox survived SIGKILL", where=self._command.argv[0])

    def _close(self) -> None:
        self._selector.close()
        os.close(self._exit_fd)
        if self._sandbox_init is not None:
            os.close(self._sandbox_init)
        for stream in (self._process.stdin, self._process.stdout, self._process.stderr):
            if stream is not None:
                stream.close()

    def _result(self, reason: StopReason | None, backend: str) -> ProcessResult:
        out, err = self._captures.values()
        returncode = self._process.returncode
        exit_code = returncode if returncode >= 0 else 128 - returncode
        return ProcessResult(
            argv=self._command.shown_argv,
            exit_code=None if reason is not None else exit_code,
            signal=signal.SIGKILL.value if reason is not None else None,
            stdout=out.text(),
            stderr=err.text(),
            truncated=out.truncated or err.truncated,
            timed_out=reason == "wall",
            idle_timed_out=reason == "idle",
            cancelled=reason == "cancel",
            duration_s=self._ended - self._started,
            backend=backend,
            stdout_truncated=out.truncated,
            stderr_truncated=err.truncated,
        )


def _open_init_of(pid: int, pid_namespace: int) -> int | None:
    """A pidfd for bubblewrap's init, or None if it is gone. The namespace check guards
    against its pid having been reused by an unrelated process in the meantime."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return None
    try:
        same = os.stat(f"/proc/{pid}/ns/pid").st_ino == pid_namespace
    except (FileNotFoundError, ProcessLookupError):
        same = False
    if not same:
        os.close(pidfd)
        return None
    return pidfd


def _wait_group_gone(pgid: int, deadline: float) -> None:
    while _live_group_members(pgid):
        if time.monotonic() > deadline:
            raise SandboxError(f"processes of group {pgid} survived SIGKILL", where="launch")
        time.sleep(REAP_POLL_S)


def _live_group_members(pgid: int) -> list[int]:
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue  # exited while we looked
        state, process_group = fields[0], int(fields[2])
        if process_group == pgid and state not in (b"Z", b"X"):
            members.append(int(entry.name))
    return members

"""Run a command whose stderr is a terminal (a pty), to see the progress line it draws."""

from __future__ import annotations

import os
import pty
import subprocess
import threading
from collections.abc import Mapping, Sequence


def run_on_terminal(
    argv: Sequence[str], env: Mapping[str, str], timeout: float = 300
) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run ``argv`` with stdout a pipe and stderr a terminal; its result and what it drew.

    The terminal is drained while the command runs, so a long progress output cannot fill
    the pty's buffer and stall the command.
    """
    primary, secondary = pty.openpty()
    drawn: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: the command has closed its end of the terminal
                return
            if not chunk:
                return
            drawn.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    try:
        proc = subprocess.Popen(
            list(argv), stdout=subprocess.PIPE, stderr=secondary, text=True, env=dict(env)
        )
        os.close(secondary)
        secondary = -1
        reader.start()
        try:
            stdout, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
        reader.join(timeout=10)
    finally:
        if secondary != -1:
            os.close(secondary)
        os.close(primary)
    done = subprocess.CompletedProcess(list(argv), proc.returncode, stdout, None)
    return done, b"".join(drawn).decode("utf-8", "replace")

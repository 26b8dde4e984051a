"""Answer discovery while the MCP SDK loads: a stdio front for ``serve``.

Importing the SDK is most of ``serve``'s start-up (docs/clients.md, "Start-up"), and a client
gives a server a few seconds to answer its first requests. The answers to those requests
never change for a given release: ``server/discover`` and ``tools/list`` of the stateless
protocol, ``initialize`` and ``tools/list`` of the handshake. They are recorded from the real
server in ``server/_discovery.json`` (``python -m patchwarden.server._discovery`` writes it;
tests/test_front.py fails when it no longer matches what the SDK answers).

The front sits on the process's stdin and stdout; the SDK reads and writes two pipes in
their place. A thread passes every line from the client on to the SDK, unchanged and in
order; while the SDK is not serving yet, it also answers the recorded requests itself, and a
second thread, which passes the SDK's lines on to the client, drops the SDK's own answer to
each of those. So the SDK sees every message as without the front (its session state, its
audit log), and the client gets one answer per request. The front imports only the standard
library.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import threading
from pathlib import Path
from typing import Any, BinaryIO

ANSWERS_FILE = Path(__file__).with_name("_discovery.json")
STATELESS_KEYS = {"server/discover": "discover", "tools/list": "tools"}
DRAIN_IDLE_S = 0.2
"""On close, the SDK's last lines are passed on until its pipe has been quiet this long."""


SOURCES = ("_app.py", "tools")
"""What the answers are made of, besides the SDK: the server's set-up and its tools."""


def fingerprint() -> str:
    """A digest of what the recorded answers depend on: the sources in ``SOURCES`` and the
    versions of patchwarden and the SDK. A recording made from other code is not used."""
    from importlib.metadata import PackageNotFoundError, version

    digest = hashlib.sha256()
    here = Path(__file__).parent
    files = []
    for name in SOURCES:
        path = here / name
        files += sorted(path.glob("*.py")) if path.is_dir() else [path]
    for path in files:
        digest.update(f"{path.relative_to(here)}\0".encode())
        digest.update(path.read_bytes())
    for distribution in ("patchwarden", "mcp", "mcp-types"):
        try:
            digest.update(f"{distribution}={version(distribution)}\0".encode())
        except PackageNotFoundError:
            digest.update(f"{distribution}=?\0".encode())
    return digest.hexdigest()


def load_answers(path: Path = ANSWERS_FILE) -> dict[str, Any] | None:
    """The recorded answers, or None (no front) when the file is missing, unreadable or
    recorded from other code (its fingerprint differs): then the SDK answers everything."""
    try:
        answers = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(answers, dict) or answers.get("fingerprint") != fingerprint():
        return None
    return answers


class Front:
    """The stdio front of one ``serve`` process (see the module's docstring)."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self._answers = answers
        self._serving = threading.Event()
        self._answered: set[str] = set()
        self._handshake: str | None = None
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._client_in: BinaryIO | None = None
        self._client_out: BinaryIO | None = None
        self._to_sdk: BinaryIO | None = None
        self._from_sdk_fd = -1
        self._threads: list[threading.Thread] = []

    def start(self, stdin_fd: int = 0, stdout_fd: int = 1) -> None:
        """Take the client's descriptors: from now on the SDK reading ``stdin_fd`` and writing
        ``stdout_fd`` reads and writes the front's pipes."""
        client_in, client_out = os.dup(stdin_fd), os.dup(stdout_fd)
        sdk_in_read, sdk_in_write = os.pipe()
        sdk_out_read, sdk_out_write = os.pipe()
        os.dup2(sdk_in_read, stdin_fd)
        os.dup2(sdk_out_write, stdout_fd)
        os.close(sdk_in_read)
        os.close(sdk_out_write)
        self._client_in = os.fdopen(client_in, "rb")
        self._client_out = os.fdopen(client_out, "wb", buffering=0)
        self._to_sdk = os.fdopen(sdk_in_write, "wb", buffering=0)
        self._from_sdk_fd = sdk_out_read
        for target, name in ((self._inbound, "in"), (self._outbound, "out")):
            thread = threading.Thread(target=target, name=f"patchwarden-front-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def serving(self) -> None:
        """The SDK serves now: the front only passes lines on."""
        self._serving.set()

    def close(self) -> None:
        """The SDK is done: pass on what it wrote last, then stop (once)."""
        if self._closed.is_set() or len(self._threads) < 2:
            return
        self._closed.set()
        inbound, outbound = self._threads
        outbound.join(timeout=5)
        if outbound.is_alive():
            return  # still writing to a client that does not read: the process exit ends it
        with self._lock:
            if self._client_out is not None:
                self._client_out.close()
                self._client_out = None
        os.close(self._from_sdk_fd)
        inbound.join(timeout=0.1)
        if not inbound.is_alive() and self._client_in is not None:
            self._client_in.close()  # the client had left; otherwise the process exit closes it

    # -- client to SDK --------------------------------------------------------------

    def _inbound(self) -> None:
        assert self._client_in is not None and self._to_sdk is not None
        try:
            for line in self._client_in:
                if not self._serving.is_set():
                    self._maybe_answer(line)
                self._to_sdk.write(line)
        except OSError:
            pass  # the SDK is gone: nobody reads what the client still sends
        finally:
            with contextlib.suppress(OSError):
                self._to_sdk.close()  # the client left: the SDK reads the end of its input

    def _maybe_answer(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict) or "id" not in message:
            return
        result = self._answer(message)
        if result is None:
            return
        key = json.dumps(message["id"])
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        with self._lock:
            self._answered.add(key)
            self._write_client(json.dumps(reply, separators=(",", ":")).encode() + b"\n")

    def _answer(self, message: dict[str, Any]) -> dict[str, Any] | None:
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        meta = params.get("_meta")
        version = (
            meta.get("io.modelcontextprotocol/protocolVersion") if isinstance(meta, dict) else None
        )
        stateless = self._answers.get("stateless", {})
        handshake = self._answers.get("handshake", {})
        if version is not None:
            if version != stateless.get("version") or set(params) - {"_meta"}:
                return None
            recorded: dict[str, Any] | None = stateless.get(STATELESS_KEYS.get(str(method), ""))
            return recorded
        if method == "initialize" and self._handshake is None:
            requested = params.get("protocolVersion")
            if requested not in handshake.get("versions", ()):
                return None
            self._handshake = requested
            return {**handshake["initialize"], "protocolVersion": requested}
        if method == "tools/list" and self._handshake is not None and not params:
            result: dict[str, Any] | None = handshake.get("tools")
            return result
        return None

    # -- SDK to client --------------------------------------------------------------

    def _outbound(self) -> None:
        pending = b""
        while True:
            wait = DRAIN_IDLE_S if self._closed.is_set() else 0.5
            ready, _, _ = select.select([self._from_sdk_fd], [], [], wait)
            if not ready:
                if self._closed.is_set():
                    break
                continue
            chunk = os.read(self._from_sdk_fd, 65536)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self._pass_on(line + b"\n")
        if pending:
            self._pass_on(pending)

    def _pass_on(self, line: bytes) -> None:
        with self._lock:
            if self._answered and self._is_answered(line):
                return
            self._write_client(line)

    def _is_answered(self, line: bytes) -> bool:
        """The SDK's answer to a request the front answered already (dropped once)."""
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or "method" in message or "id" not in message:
            return False
        key = json.dumps(message["id"])
        if key in self._answered:
            self._answered.discard(key)
            return True
        return False

    def _write_client(self, data: bytes) -> None:
        if self._client_out is None:
            return  # closed: the session is over
        with contextlib.suppress(OSError):  # the client is gone
            self._client_out.write(data)

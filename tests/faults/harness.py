"""Serving, finding processes, killing and checking the log, for the fault-injection suite.

Everything is real: ``patchwarden serve`` in its own process (over stdio through the SDK
client, or over HTTP), its scorer child, bubblewrap runs. Processes are found through /proc
(the server by its unique config path, the scorer as its child running
``patchwarden.scorer``), killed with real signals, and the reviewers' log directory is read
back from disk.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import git
from anyio.from_thread import BlockingPortal
from mcp import Client, StdioServerParameters

from tests._tool_sessions import until_scored

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "orders"
ONE_SEED = "oneseed"
"""Tag of the base the suite serves: the example with one seed, so a score is two runs."""
ONE_SEED_FIX = "oneseed-fix"
"""The example's fix on top of ONE_SEED: accepted when nothing goes wrong."""
BUNDLE_FILES = ("decision.json", "scorecard.json", "review-note.txt", "parent.jsonl", "patch.jsonl")
IDENTITY = {
    "GIT_AUTHOR_NAME": "op",
    "GIT_AUTHOR_EMAIL": "op@example.invalid",
    "GIT_COMMITTER_NAME": "op",
    "GIT_COMMITTER_EMAIL": "op@example.invalid",
}
HTTP_TOKEN = "fault-suite-token"
T = TypeVar("T")


def wait_for(check: Callable[[], T], timeout: float, what: str) -> T:
    """Poll ``check`` until it returns something true; fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


# -- the repository -------------------------------------------------------------------


def fix_files() -> dict[str, str]:
    """The example's fix: tree path -> content."""
    fix = EXAMPLES / "patches" / "fix"
    return {p.relative_to(fix).as_posix(): p.read_text() for p in fix.rglob("*.py")}


def build_repo(dest: Path) -> Path:
    """The orders example plus ``oneseed`` (the contract with seed 11 only) and
    ``oneseed-fix`` (the example fix on top of it)."""
    subprocess.run(
        [sys.executable, str(EXAMPLES / "make_repo.py"), str(dest)], check=True, capture_output=True
    )
    repo = git.Repo(dest)
    contract = dest / "contract" / "differential-contract.yaml"
    contract.write_text(contract.read_text().replace("seeds: [11, 29, 47]", "seeds: [11]"))
    repo.git.add("--all")
    repo.git.commit("-q", "--no-verify", "-m", "one seed", env=IDENTITY)
    repo.create_tag(ONE_SEED)
    for rel, text in fix_files().items():
        (dest / rel).write_text(text)
    repo.git.add("--all")
    repo.git.commit("-q", "--no-verify", "-m", "the fix, one seed", env=IDENTITY)
    repo.create_tag(ONE_SEED_FIX)
    repo.git.checkout("-q", ONE_SEED)
    return dest


# -- processes ------------------------------------------------------------------------


def cmdline(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def argv0(pid: int) -> bytes:
    return (cmdline(pid) or [b""])[0]


def _stat(pid: int) -> tuple[str, int] | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return fields[0].decode(), int(fields[1])


def alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None and stat[1] == pid and stat[0] not in ("Z", "X"):
                found.append(int(entry))
    return found


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for child in children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def pids_with(*words: str) -> list[int]:
    """Live processes whose command line holds every one of ``words`` (as substrings)."""
    wanted = [w.encode() for w in words]
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and entry != str(os.getpid()):
            line = b"\0".join(cmdline(int(entry)))
            if all(w in line for w in wanted) and alive(int(entry)):
                found.append(int(entry))
    return found


def kill9(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


# -- a served session -----------------------------------------------------------------


@dataclass
class Dirs:
    base: Path
    repo: Path
    logs: Path
    scorer_state: Path
    xdg: Path
    """XDG_STATE_HOME of the server: its state directory is xdg/patchwarden/server."""
    pause: Path
    """PATCHWARDEN_TEST_PAUSE_DIR of the scorer (scorer/_faults.py)."""
    stderr: Path
    """The server's stderr (and its scorer's)."""
    config: Path

    @classmethod
    def under(cls, base: Path, repo: Path) -> Dirs:
        dirs = cls(
            base=base,
            repo=repo,
            logs=base / "logs",
            scorer_state=base / "scorer-state",
            xdg=base / "xdg",
            pause=base / "pause",
            stderr=base / "stderr.txt",
            config=base / "config.yaml",
        )
        for path in (dirs.logs, dirs.scorer_state, dirs.xdg, dirs.pause):
            path.mkdir(parents=True, exist_ok=True)
        return dirs

    @property
    def server_state(self) -> Path:
        return self.xdg / "patchwarden" / "server"

    def write_config(
        self, scorer: str = "", agent: str = "", sandbox: str = "", http_port: int = 0
    ) -> None:
        """The operator configuration; ``scorer``, ``agent``, ``sandbox``: extra YAML lines
        of each section (indented by two)."""
        if http_port:
            agent += f"  http_port: {http_port}\n  http_token: {HTTP_TOKEN}\n"
        self.config.write_text(
            f"sandbox:\n  limits:\n    wall_time_s: 60\n{sandbox}"
            f"scorer:\n  state_dir: {json.dumps(str(self.scorer_state))}\n"
            f"  log_dir: {json.dumps(str(self.logs))}\n{scorer}"
            f"agent:\n  repo: {json.dumps(str(self.repo))}\n  base: {ONE_SEED}\n{agent}"
        )

    def env(self) -> dict[str, str]:
        env = {
            "XDG_STATE_HOME": str(self.xdg),
            "PATCHWARDEN_TEST_PAUSE_DIR": str(self.pause),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        }
        if "PYTHONPATH" in os.environ:
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        return env

    def serve_argv(self, *extra: str) -> list[str]:
        return patchwarden("serve", "--config", str(self.config), *extra)

    def pause_at(self, phase: str | None) -> None:
        """Make the scorer pause at ``phase`` from its next score on (None: nowhere)."""
        for mark in self.pause.iterdir():
            mark.unlink()
        if phase is not None:
            (self.pause / f"pause-at-{phase}").write_text("")

    def paused(self, phase: str) -> int:
        """The pid of a scorer that reached ``phase``, once one has (0 until then)."""
        for mark in self.pause.glob(f"{phase}.*"):
            return int(mark.suffix[1:])
        return 0

    def audit(self) -> list[dict[str, Any]]:
        path = self.logs / "audit.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def events(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.audit() if e.get("event") == kind]


def patchwarden(*args: str) -> list[str]:
    """The command line of ``patchwarden ARGS`` with this interpreter."""
    return [sys.executable, "-P", "-m", "patchwarden", *args]


def score_argv(dirs: Dirs, parent: str, patch: str, *extra: str) -> list[str]:
    """``patchwarden score`` of the served repository with the session's configuration."""
    contract = "contract/differential-contract.yaml"
    return patchwarden(
        *("score", "--repo", str(dirs.repo), "--contract", contract),
        *("--parent", parent, "--patch", patch, "--config", str(dirs.config), *extra),
    )


def text_of(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


@dataclass
class Served:
    """A running ``patchwarden serve`` and an SDK client connected to it."""

    portal: BlockingPortal
    client: Client
    dirs: Dirs
    server_pid: int

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        def once(tool: str, arguments: dict[str, Any]) -> Any:
            return self.portal.call(lambda: self.client.call_tool(tool, arguments))

        return until_scored(tool, once(tool, arguments or {}), once)

    def call_soon(self, tool: str, arguments: dict[str, Any]) -> Future[Any]:
        return self.portal.start_task_soon(lambda: self.client.call_tool(tool, arguments))

    def ok(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        result = self.call(tool, arguments)
        assert not result.is_error, text_of(result)
        return dict(result.structured_content)

    def error(self, tool: str, arguments: dict[str, Any] | None = None) -> str:
        result = self.call(tool, arguments)
        assert result.is_error, f"{tool} {arguments} did not fail: {text_of(result)}"
        return text_of(result)

    def scorer_pid(self, timeout: float = 60) -> int:
        """The live scorer child (waits while one is being started)."""

        def find() -> int:
            for pid in children(self.server_pid):
                if b"patchwarden.scorer" in b" ".join(cmdline(pid)):
                    return pid
            return 0

        return wait_for(find, timeout, "a scorer child")

    def submissions_left(self) -> int:
        return int(self.ok("get_contract")["submissions_left"])

    def write_fix(self) -> None:
        for rel, text in fix_files().items():
            self.ok("write_file", {"path": rel, "content": text})

    def touch(self, n: int) -> None:
        """Make the worktree differ from the base (and from the last submission)."""
        self.ok("write_file", {"path": "notes/change.txt", "content": f"change {n}\n"})


def start_stdio(portal: BlockingPortal, dirs: Dirs) -> tuple[Served, Callable[[], None]]:
    """``patchwarden serve`` over stdio (its stderr to dirs.stderr); returns the session and
    the function that ends it."""
    params = StdioServerParameters(
        command="/bin/sh",
        args=["-c", 'exec "$@" 2>>"$PW_STDERR"', "serve", *dirs.serve_argv()],
        env={**dirs.env(), "PW_STDERR": str(dirs.stderr)},
        cwd=str(dirs.base),
    )
    cm = portal.wrap_async_context_manager(Client(params, read_timeout_seconds=600))
    client = cm.__enter__()
    pid = wait_for(lambda: pids_with("serve", str(dirs.config)), 30, "the server")[0]
    return Served(portal, client, dirs, pid), lambda: cm.__exit__(None, None, None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_http(portal: BlockingPortal, dirs: Dirs) -> tuple[Served, Callable[[], None]]:
    """``patchwarden serve --transport http`` and a client with its bearer token."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    port = int(re.findall(r"http_port: (\d+)", dirs.config.read_text())[0])
    with dirs.stderr.open("ab") as err:
        process = subprocess.Popen(
            dirs.serve_argv("--transport", "http"),
            env=dirs.env(),
            cwd=str(dirs.base),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    wait_for(lambda: "listening on" in dirs.stderr.read_text(), 60, "the HTTP server")
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {HTTP_TOKEN}"}, timeout=600)
    url = f"http://127.0.0.1:{port}/mcp"
    cm = portal.wrap_async_context_manager(
        Client(streamable_http_client(url, http_client=http), read_timeout_seconds=600)
    )
    client = cm.__enter__()

    def stop() -> None:
        try:
            cm.__exit__(None, None, None)
            portal.call(http.aclose)
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=60)

    return Served(portal, client, dirs, process.pid), stop


# -- the reviewers' log ------------------------------------------------------------------


def verdict_problems(logs: Path, delivered: list[str]) -> list[str]:
    """Every way a verdict can be lost or half-written, as read back from ``logs``:
    a delivered verdict missing from the index or its bundle, an indexed verdict whose
    bundle is incomplete, or a published bundle that the index does not hold."""
    problems = []
    index_path = logs / "verdicts.jsonl"
    index = {}
    if index_path.exists():
        for number, line in enumerate(index_path.read_text().splitlines(), 1):
            try:
                entry = json.loads(line)
            except ValueError:
                problems.append(f"{index_path}:{number}: not JSON")
                continue
            index[entry["verdict_id"]] = entry
    root = logs / "verdicts"
    published = (
        [p.name for p in root.iterdir() if not p.name.startswith(".")] if root.exists() else []
    )
    for verdict_id in delivered:
        if verdict_id not in index:
            problems.append(f"delivered verdict {verdict_id} is not in the index")
    for verdict_id in set(index) | set(published):
        if verdict_id not in index:
            problems.append(f"bundle {verdict_id} is not in the index")
        bundle = root / verdict_id
        for name in BUNDLE_FILES:
            if not (bundle / name).is_file():
                problems.append(f"{bundle}/{name} is missing")
        decision = bundle / "decision.json"
        if decision.is_file():
            try:
                json.loads(decision.read_text())
            except ValueError:
                problems.append(f"{decision} is half-written")
    return problems


def accepts_in_log(logs: Path) -> list[str]:
    """Verdict ids decided ``accept`` in the index."""
    path = logs / "verdicts.jsonl"
    if not path.exists():
        return []
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [e["verdict_id"] for e in entries if e.get("decision") == "accept"]


# -- disks (root only) ------------------------------------------------------------------


def mount_tmpfs(path: Path, size_mb: int) -> None:
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755", "tmpfs", str(path)],
        check=True,
        capture_output=True,
        text=True,
    )


def unmount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], check=True)


def fill(path: Path) -> Path:
    """Fill the filesystem holding ``path`` to the last byte; returns the filler file."""
    filler = path / ".filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (1 << 20, 4096, 1):
            block = b"\0" * size
            try:
                while True:
                    os.write(fd, block)
            except OSError:
                continue
    finally:
        os.close(fd)
    return filler


class ReadOnly:
    """A read-only bind mount of a directory over itself, until ``undo``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        subprocess.run(["mount", "--bind", str(path), str(path)], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], check=True)

    def undo(self) -> None:
        unmount(self.path)


def one_line_naming(text: str, path: Path) -> list[str]:
    """The lines of ``text`` that name ``path`` (or a path under it)."""
    return [line for line in text.splitlines() if str(path) in line]


def log_files_below(path: Path) -> Iterator[Path]:
    return (p for p in path.rglob("*") if p.is_file())


def clear(path: Path) -> None:
    for child in path.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


VERDICT_ID = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{10}-[0-9a-f]{4}$")

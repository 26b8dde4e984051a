"""``run_python`` through the real server path: the SDK's in-memory client against the app
(tools, audit middleware, path policy, workspace) on a worktree of the orders example, with
real bubblewrap. The scorer is a fake that nothing here calls: the tool never reaches it.

A few real processes each (about half a second apiece): what an agent does with the tool
(a snippet that imports the project, a script with arguments, a traceback, bad inputs), then
what a hostile snippet tries (fork, flood, sleep, write or read outside the tree, sockets),
with the host's files checked after each and the same server asked again.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client

from patchwarden.sandbox import Limits, SandboxConfig, prepare_writable_tree, run_agent_python
from patchwarden.server._app import build_app
from patchwarden.server._audit import AuditLog
from patchwarden.server.tools import Session
from patchwarden.server.tools._run_python import DEFAULT_TIMEOUT_S, MAX_CODE_CHARS
from patchwarden.server.tools._sandboxed import run_limits
from tests._tool_sessions import CONTRACT, FakeScorer, example_session

RUN_UID = 64902
"""The runs' own uid: RLIMIT_NPROC counts every process of a uid on the host, so the fork
bomb spends this budget, not that of other suites running as nobody (tests/attacks/lab.py
uses 64901)."""
LIMITS = Limits(wall_time_s=20, idle_time_s=20, processes=64, output_bytes=200_000)
SANDBOX = SandboxConfig(run_as_uid=RUN_UID, limits=LIMITS)
PROPERTY_FILE = "tests/properties/test_orders.py"
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the process limit holds only as root")


@dataclass
class Served:
    """One server (one app) and one client for the whole test."""

    portal: BlockingPortal
    client: Client
    session: Session
    logs: Path
    progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        async def progress(value: float, total: float | None, message: str | None) -> None:
            self.progress.append((value, total, message))

        return self.portal.call(
            lambda: self.client.call_tool(tool, arguments, progress_callback=progress)
        )

    def ok(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self.call(tool, arguments)
        assert not result.is_error, _text(result)
        return dict(result.structured_content)

    def refused(self, tool: str, arguments: dict[str, Any]) -> str:
        result = self.call(tool, arguments)
        assert result.is_error, f"{tool} {arguments} was not refused: {_text(result)}"
        return _text(result).removeprefix(f"Error executing tool {tool}: ")

    def audit(self) -> list[dict[str, Any]]:
        lines = (self.logs / "audit.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines]

    @property
    def tree(self) -> Path:
        return self.session.workspace.tree


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture
def served(example_repo: Path, tmp_path: Path) -> Iterator[Served]:
    with contextlib.ExitStack() as stack:
        session = stack.enter_context(
            example_session(example_repo, tmp_path / "state", FakeScorer(), SANDBOX)
        )
        app = build_app(session, AuditLog(tmp_path / "logs", "s1"))
        portal = stack.enter_context(start_blocking_portal())
        client = stack.enter_context(portal.wrap_async_context_manager(Client(app)))
        yield Served(portal, client, session, tmp_path / "logs")
        assert session.scorer.asked == []  # type: ignore[attr-defined]


def without_duration(result: dict[str, Any], below_s: float = 10.0) -> dict[str, Any]:
    duration = result.pop("duration_s")
    assert 0 < duration < below_s, duration
    return result


# -- what an agent does with it ---------------------------------------------------------------

SNIPPET = """\
import sys
from decimal import Decimal

import orders
from orders.total import bulk_price

print(bulk_price(Decimal("1.00"), 10))
print(orders.__file__, sys.argv)
"""


@pytest.mark.bwrap
def test_a_snippet_imports_the_project_from_the_worktree(served: Served) -> None:
    result = served.ok("run_python", {"code": SNIPPET, "args": ["--qty", "10"]})
    assert without_duration(result) == {
        "exit_code": 0,
        # The float rounding of the example's bulk price: what an agent comes to reproduce.
        "stdout": "9.50\n/workspace/orders/__init__.py ['-c', '--qty', '10']\n",
        "stdout_truncated": False,
        "stderr": "",
        "stderr_truncated": False,
        "timed_out": False,
        "problems": [],
    }
    assert served.progress[-1] == (2.0, None, "2 lines of output")
    last = served.audit()[-1]
    assert (last["tool"], last["outcome"]) == ("run_python", "ok")
    assert last["arguments"] == {
        "code": {"elided_chars": len(SNIPPET)},
        "args": ["--qty", "10"],
    }


REPRO_SCRIPT = """\
import sys

from orders.total import BULK_MIN_QTY

print(sys.argv[1:], BULK_MIN_QTY)
print("bad quantity", file=sys.stderr)
raise SystemExit(3)
"""


@pytest.mark.bwrap
def test_a_script_runs_with_its_args_and_a_failure_shows_its_traceback(served: Served) -> None:
    served.ok("write_file", {"path": "scripts/repro.py", "content": REPRO_SCRIPT})
    script = served.ok("run_python", {"path": "scripts/repro.py", "args": ["a b", "--x"]})
    assert without_duration(script) == {
        "exit_code": 3,
        "stdout": "['a b', '--x'] 10\n",
        "stdout_truncated": False,
        "stderr": "bad quantity\n",
        "stderr_truncated": False,
        "timed_out": False,
        "problems": [],
    }
    failing = served.ok(
        "run_python", {"code": "from orders.total import bulk_price\n\nbulk_price(None, 2)\n"}
    )
    assert failing["exit_code"] == 1 and failing["stdout"] == ""
    stderr = failing["stderr"]
    # The snippet's own frames, innermost last; none of the program that runs it.
    assert stderr.startswith(
        'Traceback (most recent call last):\n  File "<run_python>", line 3, in <module>\n'
        "    bulk_price(None, 2)\n"
    ), stderr
    assert 'File "/workspace/orders/total.py", line ' in stderr
    assert stderr.endswith("TypeError: unsupported operand type(s) for *: 'NoneType' and 'int'\n")
    assert "<stdin>" not in stderr and "runpy" not in stderr


@pytest.mark.bwrap
def test_a_src_layout_is_importable_ahead_of_an_installed_copy(tmp_path: Path) -> None:
    """The sandbox side alone (sandbox/_python_runner.py): the import roots come from the
    tree's packaging metadata, before the interpreter's paths, as the agent's tests see
    them. PyYAML (a dependency of ours, so installed) stands in for an installed copy of
    the project."""
    tree = tmp_path / "tree"
    (tree / "src" / "yaml").mkdir(parents=True)
    (tree / "src" / "yaml" / "__init__.py").write_text("WHERE = 'the tree'\n")
    (tree / "pyproject.toml").write_text(
        '[project]\nname = "yaml"\n[tool.setuptools.package-dir]\n"" = "src"\n'
    )
    prepare_writable_tree(tree, SANDBOX)
    code = "import sys, yaml\nprint(yaml.WHERE, yaml.__file__, sys.path[:2])\n"
    result = run_agent_python(tree, 1, SANDBOX, code=code)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == (
        "the tree /workspace/src/yaml/__init__.py ['/workspace/src', '/workspace']\n"
    )


def test_bad_inputs_are_one_line_refusals_before_anything_runs(served: Served) -> None:
    os.symlink("/etc/passwd", served.tree / "link_out")  # as a sandboxed run could plant it
    one = "give exactly one of code (a snippet) and path (a script to run)"
    for arguments, message in [
        ({}, one),
        ({"code": "print(1)", "path": "orders/total.py"}, one),
        ({"args": ["x"]}, one),
        (
            {"path": "/etc/passwd"},
            "'/etc/passwd': absolute paths are refused; use a path relative to the worktree",
        ),
        ({"path": "../x.py"}, "'../x.py': '..' is refused; use a path inside the worktree"),
        ({"path": ".git/config"}, "'.git/config': paths inside .git are refused"),
        ({"path": ".git"}, "'.git': paths inside .git are refused"),
        ({"path": "orders"}, "'orders' is a directory, not a file"),
        ({"path": "orders/missing.py"}, "'orders/missing.py' does not exist"),
        ({"path": "link_out"}, "'link_out' is a symbolic link leaving the worktree; refused"),
        ({"code": "print(1)", "args": ["a\0b"]}, "args must not contain a NUL character"),
        (
            {"code": "print(1)", "timeout_s": 21},
            "timeout_s must be at most 20 (the operator's limit)",
        ),
    ]:
        assert served.refused("run_python", arguments) == message, arguments
    too_long = served.refused("run_python", {"code": "#" * (MAX_CODE_CHARS + 1)})
    assert f"at most {MAX_CODE_CHARS} characters" in too_long
    assert served.progress == []  # nothing ran
    entries = [e for e in served.audit() if e["tool"] == "run_python"]
    assert len(entries) == 13 and {e["outcome"] for e in entries} == {"error"}
    assert entries[-1]["arguments"] == {"code": {"elided_chars": MAX_CODE_CHARS + 1}}
    # Without timeout_s a run gets the tool's default, or the operator's limit if smaller.
    assert run_limits(served.session, None, DEFAULT_TIMEOUT_S).wall_time_s == 20
    roomy = SandboxConfig(limits=Limits(wall_time_s=300))
    served.session.sandbox = roomy
    assert run_limits(served.session, None, DEFAULT_TIMEOUT_S).wall_time_s == DEFAULT_TIMEOUT_S
    assert run_limits(served.session, 120, DEFAULT_TIMEOUT_S).wall_time_s == 120


# -- what a hostile snippet tries -------------------------------------------------------------

FORK_BOMB = """\
import os, time
children = 0
try:
    for _ in range(500):
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        children += 1
except BlockingIOError:
    print("refused after", children, flush=True)
"""


def _processes_of(uid: int) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    found.append(int(entry.name))
    return found


@pytest.mark.bwrap
@as_root
def test_a_fork_bomb_stops_at_the_process_limit_and_the_server_goes_on(served: Served) -> None:
    started = time.monotonic()
    result = served.ok("run_python", {"code": FORK_BOMB})
    words = result["stdout"].split()
    assert words[:2] == ["refused", "after"], result
    assert 0 < int(words[2]) < LIMITS.processes
    assert result["exit_code"] == 0 and not result["timed_out"]
    # The sleeping children went with the sandbox: the call did not wait for them.
    assert time.monotonic() - started < 15
    assert _processes_of(RUN_UID) == []
    again = served.ok("run_python", {"code": "print('alive')"})
    assert (again["exit_code"], again["stdout"]) == (0, "alive\n")


@pytest.mark.bwrap
def test_an_output_flood_is_cut_and_says_so(served: Served) -> None:
    flood = "import sys\nsys.stdout.write('x' * 5_000_000)\nsys.stdout.flush()\n"
    flood += "print('the end', file=sys.stderr)\n"
    result = served.ok("run_python", {"code": flood})
    assert without_duration(result) == {
        "exit_code": 0,
        "stdout": "x" * 8000,
        "stdout_truncated": True,
        "stderr": "the end\n",
        "stderr_truncated": False,
        "timed_out": False,
        "problems": [
            "stdout was longer than 200000 bytes: the rest was discarded, so the end shown "
            "is where it was cut"
        ],
    }


SLEEPER = "import time\nprint('sleeping', flush=True)\ntime.sleep(600)\n"


@pytest.mark.bwrap
def test_a_sleep_past_the_limit_is_killed_and_a_cancelled_call_kills_its_run(
    served: Served,
) -> None:
    started = time.monotonic()
    result = served.ok("run_python", {"code": SLEEPER, "timeout_s": 1})
    assert without_duration(result, below_s=5) == {
        "exit_code": None,
        "stdout": "sleeping\n",
        "stdout_truncated": False,
        "stderr": "",
        "stderr_truncated": False,
        "timed_out": True,
        "problems": ["killed at its time limit of 1 s"],
    }
    assert time.monotonic() - started < 10

    async def cancelled_call() -> bool:
        with anyio.move_on_after(2) as scope:
            await served.client.call_tool("run_python", {"code": SLEEPER})
        return scope.cancelled_caught

    assert served.portal.call(cancelled_call)
    started = time.monotonic()
    again = served.ok("run_python", {"code": "print('alive')"})  # the run lock was released
    assert again["stdout"] == "alive\n" and time.monotonic() - started < 10
    outcomes = [e["outcome"] for e in served.audit() if e["tool"] == "run_python"]
    assert outcomes == ["ok", "cancelled", "ok"]
    assert _processes_of(RUN_UID) == [] or os.geteuid() != 0


ESCAPES = """\
import json, os, socket

report = {}


def attempt(key, action):
    try:
        value = action()
    except OSError as exc:
        report[key] = f"{type(exc).__name__}: {exc.strerror}"
    else:
        report[key] = "ok" if value is None else "read " + str(value)[:60]


def write(path, mode="w"):
    def action():
        with open(path, mode) as handle:
            handle.write("x\\n")

    return action


def read(path):
    def action():
        with open(path) as handle:
            return handle.read()

    return action


def connect(host, port):
    return lambda: socket.create_connection((host, port), timeout=5).close()


attempt("write_etc", write("/etc/pw-run-python-probe"))
attempt("write_usr", write("/usr/pw-run-python-probe"))
attempt("write_root", write("/pw-run-python-probe"))
attempt("write_above_tree", write("../pw-run-python-probe"))
attempt("write_host_state", write(@STATE@ + "/escape.txt"))
attempt("write_contract", write(@CONTRACT@))
attempt("append_property_file", write(@PROPERTY@, "a"))
attempt("write_dot_git", write(".git", "a"))
attempt("write_private_tmp", write("/tmp/" + @TOKEN@))
attempt("read_shadow", read("/etc/shadow"))
attempt("read_scorer_state", read(@SCORER_FILE@))
attempt("list_host_state", lambda: os.listdir(@STATE@))
attempt("connect_host_loopback", connect("127.0.0.1", @PORT@))
attempt("connect_internet", connect("1.1.1.1", 53))
print(json.dumps(report, sort_keys=True))
"""


def _snapshot(paths: list[Path]) -> dict[Path, bytes | None]:
    return {p: p.read_bytes() if p.exists() else None for p in paths}


@pytest.mark.bwrap
def test_writes_reads_and_sockets_outside_the_sandbox_fail(served: Served, tmp_path: Path) -> None:
    scorer_file = tmp_path / "scorer-state" / "verdicts.jsonl"
    scorer_file.parent.mkdir()
    scorer_file.write_text('{"secret": "SCORER-STATE-SECRET"}\n')
    token = f"pw-run-python-{secrets.token_hex(4)}"
    state = tmp_path / "state"
    tree = served.tree
    watched = [
        tree / CONTRACT,
        tree / PROPERTY_FILE,
        tree / ".git",
        scorer_file,
        state / "escape.txt",
        tree.parent / "pw-run-python-probe",
        Path("/etc/pw-run-python-probe"),
        Path("/usr/pw-run-python-probe"),
        Path("/pw-run-python-probe"),
        Path("/tmp") / token,
    ]
    before = _snapshot(watched)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(0)
        code = ESCAPES
        for name, value in {
            "STATE": str(state),
            "CONTRACT": CONTRACT,
            "PROPERTY": PROPERTY_FILE,
            "TOKEN": token,
            "SCORER_FILE": str(scorer_file),
            "PORT": listener.getsockname()[1],
        }.items():
            code = code.replace(f"@{name}@", repr(value))
        result = served.ok("run_python", {"code": code})
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing from inside reached the host's loopback
    assert result["exit_code"] == 0, result
    report = json.loads(result["stdout"])
    read_only = "OSError: Read-only file system"
    # "/" inside (also "../" from the tree) is bubblewrap's own directory, not the host's:
    # the snapshot below shows the host's "/" untouched; as root, the sandbox uid may not
    # even write bubblewrap's.
    inside_root = {key: report.pop(key) for key in ("write_root", "write_above_tree")}
    if os.geteuid() == 0:
        assert set(inside_root.values()) == {"PermissionError: Permission denied"}
    assert report == {
        "write_etc": read_only,
        "write_usr": read_only,
        "write_host_state": "FileNotFoundError: No such file or directory",
        "write_contract": read_only,
        "append_property_file": read_only,
        "write_dot_git": "PermissionError: Permission denied",
        "write_private_tmp": "ok",
        "read_shadow": "PermissionError: Permission denied",
        "read_scorer_state": "FileNotFoundError: No such file or directory",
        "list_host_state": "FileNotFoundError: No such file or directory",
        "connect_host_loopback": "ConnectionRefusedError: Connection refused",
        "connect_internet": "OSError: Network is unreachable",
    }
    assert _snapshot(watched) == before
    assert "SCORER-STATE-SECRET" not in json.dumps(result)

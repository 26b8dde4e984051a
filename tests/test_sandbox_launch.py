"""The sandbox, attacked from inside: every attack runs under real bubblewrap, no mocks.

Each test starts Python inside the sandbox (`python3` resolves to the configured interpreter)
and checks the exact outcome inside and on the host.
"""

from __future__ import annotations

import ast
import os
import signal
import socket
import textwrap
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from patchwarden import sandbox
from patchwarden.sandbox import (
    NONE_BACKEND_WARNING,
    TREE_MOUNT,
    LaunchSpec,
    Limits,
    ProcessResult,
    SandboxConfig,
    SandboxError,
    check_sandbox,
    launch,
    prepare_writable_tree,
    python_runtime,
    tree_path_inside,
)

bwrap = pytest.mark.bwrap
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the uid drop happens only as root")

FAST = Limits(wall_time_s=20, idle_time_s=20, memory_mb=1024, processes=256)
CONFIG = SandboxConfig(limits=FAST)
DENIED = "DENIED"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A read-only tree with one contract file; readable by the sandbox uid."""
    root = tmp_path / "tree"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_contract.py").write_text("ORIGINAL\n")
    (root / "src.py").write_text("VALUE = 1\n")
    for path in (root, root / "tests"):
        path.chmod(0o755)
    return root


@pytest.fixture
def writable_tree(tree: Path) -> Path:
    prepare_writable_tree(tree, CONFIG)
    return tree


def run_python(
    code: str, tree: Path, config: SandboxConfig = CONFIG, **spec: object
) -> ProcessResult:
    argv = ["python3", "-c", textwrap.dedent(code)]
    return launch(LaunchSpec(argv=argv, tree=tree, **spec), config)  # type: ignore[arg-type]


def attempt(statement: str) -> str:
    """Python source that prints DENIED if `statement` raises OSError, else ALLOWED."""
    return textwrap.dedent(
        f"""
        try:
            {statement}
            print("ALLOWED", flush=True)
        except OSError as exc:
            print("{DENIED}", type(exc).__name__, flush=True)
        """
    )


def live_processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmdline = Path(entry.path, "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry.name))
    return found


# --- the facade -------------------------------------------------------------------------------


def test_facade_exports_exist() -> None:
    for name in sandbox.__all__:
        assert hasattr(sandbox, name), name
    assert {"launch", "LaunchSpec", "ProcessResult", "TREE_MOUNT", "SandboxError"} <= set(
        sandbox.__all__
    )


def test_tree_path_inside() -> None:
    assert tree_path_inside(Path("/srv/t"), CONFIG) == TREE_MOUNT
    assert tree_path_inside(Path("/srv/t"), SandboxConfig(backend="none")) == "/srv/t"


# --- isolation -------------------------------------------------------------------------------


@bwrap
def test_the_sandbox_works_here() -> None:
    checks = check_sandbox(CONFIG)
    assert all(check.ok for check in checks), checks
    assert [c.name for c in checks[-2:]] == ["python inside", "process budget"]


@bwrap
@as_root
def test_runs_as_the_sandbox_uid_without_privileges(tree: Path) -> None:
    result = run_python(
        """
        import os
        status = dict(l.split(":", 1) for l in open("/proc/self/status"))
        print(os.getuid(), os.getgid(), os.getgroups(), status["CapEff"].strip(),
              status["NoNewPrivs"].strip())
        """,
        tree,
    )
    assert result.stdout == "65534 65534 [] 0000000000000000 1\n", result.stderr


@bwrap
def test_writing_a_contract_file_fails_and_the_host_file_is_unchanged(
    writable_tree: Path,
) -> None:
    code = "\n".join(
        attempt(statement)
        for statement in (
            "open('tests/test_contract.py', 'a').write('HACKED')",
            "os.remove('tests/test_contract.py')",
            "os.rename('tests/test_contract.py', 'moved.py')",
            "open('src.py', 'a').write('# agent edit\\n')",  # not a contract path: allowed
        )
    )
    result = run_python(
        "import os\n" + code,
        writable_tree,
        tree_writable=True,
        contract_paths=["tests/test_contract.py"],
    )
    assert result.stdout.split("\n")[:4] == [
        f"{DENIED} OSError",
        f"{DENIED} OSError",
        f"{DENIED} OSError",
        "ALLOWED",
    ], result.stderr
    assert (writable_tree / "tests" / "test_contract.py").read_text() == "ORIGINAL\n"
    assert not (writable_tree / "moved.py").exists()
    assert (writable_tree / "src.py").read_text() == "VALUE = 1\n# agent edit\n"


@bwrap
def test_a_missing_contract_path_cannot_be_created_and_leaves_nothing(
    writable_tree: Path,
) -> None:
    code = "\n".join(
        attempt(statement)
        for statement in (
            "open('tests/test_new.py', 'w').write('def test(): pass')",
            "open('tests/test_new.py/inner.py', 'w').write('x')",
            "open('newdir/test_b.py', 'w').write('x')",
            "open('newdir/sibling.py', 'w').write('x')",  # beside it: allowed
        )
    )
    result = run_python(
        code,
        writable_tree,
        tree_writable=True,
        contract_paths=["tests/test_new.py", "newdir/test_b.py", "deep/er/test_c.py"],
    )
    assert result.stdout.split("\n")[:4] == [
        f"{DENIED} IsADirectoryError",
        f"{DENIED} OSError",
        f"{DENIED} IsADirectoryError",
        "ALLOWED",
    ], result.stderr
    assert not (writable_tree / "tests" / "test_new.py").exists()
    assert not (writable_tree / "newdir" / "test_b.py").exists()
    assert (writable_tree / "newdir" / "sibling.py").read_text() == "x"
    assert not (writable_tree / "deep").exists()  # the mount points we made are gone


@bwrap
def test_a_readonly_tree_cannot_be_written_and_missing_contract_paths_are_skipped(
    tree: Path,
) -> None:
    result = run_python(
        attempt("open('new.py', 'w')") + attempt("open('src.py', 'a')"),
        tree,
        contract_paths=["tests/test_missing.py"],
    )
    # Read-only file system, or (as root, src.py belongs to root) permission denied first.
    assert [line.split()[0] for line in result.stdout.splitlines()] == [DENIED, DENIED]
    assert sorted(p.name for p in tree.iterdir()) == ["src.py", "tests"]
    assert sorted(p.name for p in (tree / "tests").iterdir()) == ["test_contract.py"]


@bwrap
def test_a_symlinked_contract_path_is_refused(writable_tree: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (writable_tree / "linked").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SandboxError, match="symlink"):
        launch(
            LaunchSpec(
                argv=["true"],
                tree=writable_tree,
                tree_writable=True,
                contract_paths=["linked/test_x.py"],
            ),
            CONFIG,
        )
    assert list((tmp_path / "elsewhere").iterdir()) == []


@bwrap
@pytest.mark.parametrize("kind", ["dir", "file"])
def test_the_trees_git_is_not_reachable(tree: Path, kind: str) -> None:
    if kind == "dir":
        (tree / ".git").mkdir()
        (tree / ".git" / "config").write_text("SECRET-GITDIR\n")
    else:
        (tree / ".git").write_text("gitdir: /srv/state/repo/.git/worktrees/SECRET-GITDIR\n")
    read = "print(os.listdir('.git'))" if kind == "dir" else "print(open('.git').read())"
    result = run_python("import os\n" + attempt(read) + attempt("open('.git/hooks', 'w')"), tree)
    assert "SECRET" not in result.stdout
    expected = {
        "dir": f"[]\nALLOWED\n{DENIED} OSError\n",  # an empty read-only directory
        "file": f"{DENIED} PermissionError\n{DENIED} NotADirectoryError\n",  # /dev/null
    }
    assert result.stdout == expected[kind], result.stderr


@bwrap
def test_tcp_to_the_host_and_the_internet_fails(tree: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        code = "import socket\n" + "".join(
            attempt(f"socket.create_connection({address!r}, timeout=3)")
            for address in (("127.0.0.1", port), ("192.0.2.1", 80))
        )
        result = run_python(code, tree)
        assert result.stdout.count(DENIED) == 2, (result.stdout, result.stderr)
        shared = run_python(code, tree, SandboxConfig(network=True, limits=FAST))
        assert shared.stdout.startswith("ALLOWED"), shared.stderr  # the listener is reachable


@bwrap
def test_abstract_unix_sockets_of_the_host_are_unreachable(tree: Path) -> None:
    name = f"\0patchwarden-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(name)
        listener.listen()
        result = run_python(
            "import socket\n" + attempt(f"socket.socket(socket.AF_UNIX).connect({name!r})"),
            tree,
        )
    assert result.stdout.startswith(DENIED), result.stderr


@pytest.fixture
def home_canary() -> Iterator[Path]:
    path = Path.home() / f".patchwarden-canary-{uuid.uuid4().hex}"
    path.write_text("SECRET-HOME\n")
    try:
        yield path
    finally:
        path.unlink()


@bwrap
def test_host_files_outside_the_mounts_cannot_be_read(
    tree: Path, tmp_path: Path, home_canary: Path
) -> None:
    state = tmp_path / "scorer-state"
    state.mkdir(mode=0o700)
    (state / "verdicts.jsonl").write_text("SECRET-STATE\n")
    code = "import os\n" + "".join(
        attempt(f"print(open({str(path)!r}).read())")
        for path in (state / "verdicts.jsonl", home_canary)
    )
    code += f"print(os.path.exists({str(Path(sandbox.__file__).parent)!r}))\n"
    result = run_python(code, tree)
    assert "SECRET" not in result.stdout
    assert result.stdout == f"{DENIED} FileNotFoundError\n" * 2 + "False\n", result.stderr


@bwrap
def test_the_environment_is_cleared(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATCHWARDEN_CANARY", "SECRET-ENV")
    monkeypatch.setenv("LANG", "C.UTF-8")
    result = run_python("import os; print(sorted(os.environ.items()))", tree, env={"EXTRA": "1"})
    assert "SECRET" not in result.stdout
    env = dict(ast.literal_eval(result.stdout))
    assert env["LANG"] == "C.UTF-8"
    assert env["EXTRA"] == "1"
    assert env["HOME"] == "/home/sandbox"
    assert env["TMPDIR"] == "/tmp"
    assert set(env) <= {"LANG", "LC_ALL", "TZ", "EXTRA", "HOME", "TMPDIR", "PATH", "PWD"}


@bwrap
def test_host_processes_are_invisible_and_home_and_tmp_are_private_and_writable(
    tree: Path,
) -> None:
    result = run_python(
        f"""
        import os
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        print({os.getpid()} in pids, max(pids) < 10)
        for d in ("/tmp", os.environ["HOME"]):
            open(os.path.join(d, "pw-written"), "w").write("x")
            print(sorted(os.listdir(d)))
        """,
        tree,
    )
    # A runtime that lives under /tmp (a CI clone's .venv) is mounted there, read-only.
    runtime_tops = sorted(
        {Path(m).parts[2] for m in python_runtime(SandboxConfig()).mounts if m.startswith("/tmp/")}
    )
    # (a name no clone directory has: a clone at /tmp/x has its runtime mounted at /tmp/x)
    tmp_listing = sorted(["pw-written", *runtime_tops])
    assert result.stdout == f"False True\n{tmp_listing}\n['pw-written']\n", result.stderr


# --- limits ------------------------------------------------------------------------------------


@bwrap
@as_root
def test_the_process_limit_stops_forking(tree: Path) -> None:
    # Bounded first: each child sleeps, the parent stops at the first refusal.
    result = run_python(
        """
        import os, time
        children = 0
        try:
            for _ in range(200):
                if os.fork() == 0:
                    time.sleep(30)
                    os._exit(0)
                children += 1
        except BlockingIOError:
            print("refused after", children, flush=True)
        """,
        tree,
        limits=FAST.model_copy(update={"processes": 64}),
    )
    words = result.stdout.split()
    assert words[:2] == ["refused", "after"], (result.stdout, result.stderr)
    assert int(words[2]) < 64
    assert result.duration_s < 10  # the sleeping children went with the sandbox


@bwrap
@as_root
def test_a_fork_bomb_is_contained_and_the_machine_stays_usable(tree: Path) -> None:
    bomb = """
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
        """
    limits = FAST.model_copy(update={"processes": 64, "wall_time_s": 2.0})
    result = run_python(bomb, tree, limits=limits)
    assert result.timed_out and result.exit_code is None and result.signal == signal.SIGKILL
    after = run_python("print('alive')", tree)
    assert after.stdout == "alive\n" and after.exit_code == 0, after.stderr
    assert after.duration_s < 5


@bwrap
def test_a_memory_hog_is_stopped(tree: Path) -> None:
    result = run_python(
        "x = bytearray(2 * 1024 ** 3)", tree, limits=FAST.model_copy(update={"memory_mb": 256})
    )
    assert result.exit_code == 1
    assert "MemoryError" in result.stderr


@bwrap
def test_a_busy_loop_is_killed_at_the_wall_limit_keeping_earlier_output(tree: Path) -> None:
    result = run_python(
        "print('started', flush=True)\nwhile True: pass",
        tree,
        limits=FAST.model_copy(update={"wall_time_s": 1.0}),
    )
    assert (result.timed_out, result.idle_timed_out, result.cancelled) == (True, False, False)
    assert result.exit_code is None and result.signal == signal.SIGKILL
    assert result.stdout == "started\n"
    assert 1.0 <= result.duration_s < 3


@bwrap
def test_a_silent_hang_is_killed_at_the_idle_limit_keeping_earlier_output(tree: Path) -> None:
    result = run_python(
        "import time\nprint('waiting', flush=True)\ntime.sleep(60)",
        tree,
        limits=FAST.model_copy(update={"idle_time_s": 0.5}),
    )
    assert (result.timed_out, result.idle_timed_out) == (False, True)
    assert result.stdout == "waiting\n"
    assert result.duration_s < 3


@bwrap
def test_beats_keep_a_silent_process_from_the_idle_limit_and_stay_out_of_its_output(
    tree: Path,
) -> None:
    # What an isolated oracle does while it waits for its product process: silent on
    # stdout and stderr, a byte on the beat pipe now and then. 2.5 s of it outlasts an idle
    # limit of 1 s; when the beats stop, the idle limit fires as before.
    beat_read, beat_write = os.pipe()
    os.set_inheritable(beat_write, True)
    try:
        result = run_python(
            f"""
            import os, time
            for _ in range(25):
                os.write({beat_write}, b".")
                time.sleep(0.1)
            print("done", flush=True)
            time.sleep(60)
            """,
            tree,
            limits=FAST.model_copy(update={"idle_time_s": 1.0}),
            pass_fds=(beat_write,),
            beat_fd=beat_read,
        )
    finally:
        os.close(beat_read)
        os.close(beat_write)
    assert (result.timed_out, result.idle_timed_out) == (False, True)
    assert (result.stdout, result.stderr) == ("done\n", "")
    assert 2.5 <= result.duration_s < 10


@bwrap
def test_an_output_flood_is_capped(tree: Path) -> None:
    cap = 100_000
    result = run_python(
        "import sys\nfor _ in range(100): sys.stdout.write('x' * 50_000)\n"
        "print('small', file=sys.stderr)",
        tree,
        limits=FAST.model_copy(update={"output_bytes": cap}),
    )
    assert result.exit_code == 0
    assert result.truncated
    assert result.stdout == "x" * cap
    assert result.stderr == "small\n"


@pytest.mark.parametrize(
    ("backend", "escape_session"),
    [pytest.param("bubblewrap", True, marks=bwrap), ("none", False)],
)
def test_a_background_child_is_gone_after_the_run(
    tree: Path, backend: str, escape_session: bool
) -> None:
    marker = f"patchwarden-bg-{uuid.uuid4().hex}"
    config = SandboxConfig(backend=backend, limits=FAST)  # type: ignore[arg-type]
    result = run_python(
        f"""
        import subprocess, sys
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(300)", {marker!r}],
            start_new_session={escape_session},
        )
        print(child.pid)
        """,
        tree,
        config,
    )
    assert result.exit_code == 0, result.stderr
    assert live_processes_with(marker) == []


@bwrap
def test_the_cancel_event_kills_the_run(tree: Path) -> None:
    cancel = threading.Event()
    timer = threading.Timer(0.3, cancel.set)
    timer.start()
    try:
        result = launch(
            LaunchSpec(
                argv=[
                    "python3",
                    "-c",
                    "import time\nwhile True:\n print('.', flush=True)\n time.sleep(0.05)",
                ],
                tree=tree,
            ),
            CONFIG,
            cancel=cancel,
        )
    finally:
        timer.cancel()
    assert result.cancelled and not result.timed_out and result.exit_code is None
    assert result.stdout.startswith(".\n")
    assert result.duration_s < 3


# --- plumbing --------------------------------------------------------------------------------


@bwrap
def test_exit_status_stdin_output_callback_and_a_result_channel(tree: Path) -> None:
    read_end, write_end = os.pipe()
    chunks: list[bytes] = []
    try:
        result = launch(
            LaunchSpec(
                argv=[
                    "python3",
                    "-c",
                    f"import os, sys; os.write({write_end}, b'RESULT'); "
                    "print(sys.stdin.read().upper()); sys.exit(3)",
                ],
                tree=tree,
                pass_fds=[write_end],
                stdin=b"fed\n",
            ),
            CONFIG,
            on_output=chunks.append,
        )
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as channel:
        assert channel.read() == b"RESULT"
    assert (result.exit_code, result.signal, result.stdout) == (3, None, "FED\n\n")
    assert b"".join(chunks) == b"FED\n\n"
    assert result.argv[0] == "python3" and result.backend == "bubblewrap"


@bwrap
def test_concurrent_launches_from_threads_do_not_mix(tree: Path) -> None:
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda i: run_python(f"print({i})", tree), range(8)))
    assert [r.stdout for r in results] == [f"{i}\n" for i in range(8)]


@bwrap
def test_a_crash_by_signal_is_an_exit_status(tree: Path) -> None:
    result = run_python("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", tree)
    assert (result.exit_code, result.signal, result.timed_out) == (139, None, False)


@bwrap
def test_a_missing_command_is_a_result(tree: Path) -> None:
    result = launch(LaunchSpec(argv=["no-such-command-xyz"], tree=tree), CONFIG)
    assert result.exit_code not in (0, None)
    assert "no-such-command-xyz" in result.stderr


@bwrap
def test_hidden_and_readonly_paths(tree: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "data.txt").write_text("visible\n")
    (shared / "secret.txt").write_text("SECRET-HIDDEN\n")
    (tree / "local-secret.txt").write_text("SECRET-IN-TREE\n")
    for path in (tmp_path, shared):
        path.chmod(0o755)
    config = SandboxConfig(
        readonly_paths=(str(shared),),
        hidden_paths=(str(shared / "secret.txt"), str(tree / "local-secret.txt")),
        limits=FAST,
    )
    result = run_python(
        f"print(open({str(shared / 'data.txt')!r}).read(), end='')\n"
        + attempt(f"print(open({str(shared / 'secret.txt')!r}).read())")
        + attempt("print(open('local-secret.txt').read())")
        + attempt(f"open({str(shared / 'new.txt')!r}, 'w')"),
        tree,
        config,
    )
    assert "SECRET" not in result.stdout
    # Hidden files are covered by /dev/null on a nodev mount: they cannot even be opened.
    assert result.stdout == (
        f"visible\n{DENIED} PermissionError\n{DENIED} PermissionError\n{DENIED} OSError\n"
    ), result.stderr


@bwrap
@as_root
def test_a_writable_tree_must_belong_to_the_sandbox_uid(tree: Path) -> None:
    with pytest.raises(SandboxError, match="prepare_writable_tree"):
        launch(LaunchSpec(argv=["true"], tree=tree, tree_writable=True), CONFIG)


@bwrap
def test_without_bubblewrap_nothing_runs(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tree))  # no bwrap on PATH; a config not yet verified
    config = SandboxConfig(limits=FAST.model_copy(update={"cpu_s": 77}))
    with pytest.raises(SandboxError, match="bubblewrap"):
        launch(LaunchSpec(argv=["true"], tree=tree), config)


def test_backend_none_warns_on_every_run(tree: Path, capfd: pytest.CaptureFixture[str]) -> None:
    config = SandboxConfig(backend="none", limits=FAST)
    first = run_python("import os; print(os.getcwd())", tree, config)
    second = run_python("print('again')", tree, config)
    assert first.stdout == f"{tree}\n" and second.stdout == "again\n"
    assert first.backend == "none"
    assert capfd.readouterr().err.count(NONE_BACKEND_WARNING + "\n") == 2


@bwrap
def test_filling_tmp_stops_at_the_tmpfs_size(tree: Path) -> None:
    """A disk-filling run hits ENOSPC in its private /tmp, not the host's memory."""
    limits = FAST.model_copy(update={"tmpfs_mb": 8, "file_size_mb": 1024})
    result = run_python(
        """
        import errno
        written = 0
        try:
            with open("/tmp/fill", "wb") as handle:
                while True:
                    handle.write(b"x" * 65536)
                    handle.flush()
                    written += 65536
        except OSError as exc:
            print(errno.errorcode[exc.errno], written // (1024 * 1024))
        """,
        tree,
        limits=limits,
    )
    assert result.stdout == "ENOSPC 8\n", result.stderr

"""The one place where a sandboxed process is started (see SPEC section 2, "Trust boundaries").

`launch` runs one command under bubblewrap (or, for development only, without isolation),
supervises it (wall-clock, idle and cancel; capped output) and returns a `ProcessResult`.
A red, crashed or killed process is data; only missing isolation raises (`SandboxError`).

How privileges are dropped when patchwarden runs as root. RLIMIT_NPROC is not enforced for
uid 0, so the sandboxed process must run as an ordinary uid (`config.run_as_uid`). bubblewrap
resolves every mount source with the permissions of the uid it runs as, and the trees and
the interpreter usually live under directories only root may enter (a 0700 state directory,
/root/.pyenv). So bubblewrap runs as root, without a user namespace, keeping only the
capabilities needed to change uid, and `setpriv` inside the sandbox drops to the uid, clears
groups and empties every capability set before exec'ing the command. bubblewrap sets
no_new_privs and mounts everything nosuid, so the command cannot regain root.
When patchwarden is not root, bubblewrap runs unprivileged in a user namespace as the caller.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import json
import os
import resource
import select
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from ._config import Limits, SandboxConfig
from ._errors import ConfigError, SandboxError

TREE_MOUNT = "/workspace"
"""Where the tree appears inside bubblewrap; the working directory of the command."""

SANDBOX_HOME = "/home/sandbox"
"""$HOME inside bubblewrap: an empty tmpfs, so the host's home is never visible."""

SYSTEM_DIRS = ("/usr", "/etc")
"""System directories mounted read-only; they exist on every Linux system."""

OPTIONAL_SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib64")
"""System directories mounted read-only if present (symlinks into /usr on merged-/usr)."""

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
"""PATH inside, after the directory of the configured interpreter."""

NONE_BACKEND_WARNING = (
    "patchwarden: WARNING: sandbox backend 'none' runs without isolation (development only)"
)

SETPRIV_CAPABILITIES = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")
"""All bubblewrap keeps for the command when running as root: setpriv needs SETUID/SETGID to
change uid and groups and SETPCAP to empty the bounding set; it then drops them all."""

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

RUNTIME_PROBE_TIMEOUT_S = 60.0
"""Time allowed for the interpreter to report where it is installed (a cold start on a busy
machine can take seconds)."""

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
_LIBC = ctypes.CDLL(None, use_errno=True)
_OutputCallback = Callable[[bytes], None]
_StopReason = Literal["wall", "idle", "cancel"]


@dataclass(frozen=True)
class LaunchSpec:
    """One command to run in the sandbox."""

    argv: Sequence[str]
    """The command; argv[0] may be a bare name (looked up on PATH inside) or absolute."""
    tree: Path
    """Host directory mounted as the working directory (at TREE_MOUNT under bubblewrap)."""
    tree_writable: bool = False
    """Agent runs: True; scorer runs: False."""
    contract_paths: Sequence[str] = ()
    """Paths relative to tree, mounted read-only over themselves."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Set inside after the environment is cleared; wins over HOME, TMPDIR, PATH and the
    operator allow-list."""
    pass_fds: Sequence[int] = ()
    """Host file descriptors inherited by the command (e.g. a result channel)."""
    limits: Limits | None = None
    """None: config.limits."""
    stdin: bytes | None = None
    """Bytes fed to the command's stdin; None: stdin is /dev/null."""


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


def launch(
    spec: LaunchSpec,
    config: SandboxConfig,
    *,
    cancel: threading.Event | None = None,
    on_output: Callable[[bytes], None] | None = None,
) -> ProcessResult:
    """Run spec.argv in the sandbox and wait for it (thread-safe; blocks the calling thread).

    on_output is called from this thread with each chunk of output kept (stdout and stderr
    alike). Raises SandboxError if isolation cannot be provided, ConfigError for a config
    that cannot be used; every outcome of the command itself is a ProcessResult.
    """
    # Imported here because _doctor probes the sandbox through this module.
    from ._doctor import require_sandbox

    require_sandbox(config)
    return run_unchecked(spec, config, cancel=cancel, on_output=on_output)


def run_unchecked(
    spec: LaunchSpec,
    config: SandboxConfig,
    *,
    cancel: threading.Event | None = None,
    on_output: Callable[[bytes], None] | None = None,
) -> ProcessResult:
    """`launch` without the one-time check that bubblewrap works (used by that check)."""
    limits = spec.limits or config.limits
    if config.backend == "none":
        print(NONE_BACKEND_WARNING, file=sys.stderr, flush=True)
        return _run_unisolated(spec, config, limits, cancel, on_output)
    return _run_bubblewrap(spec, config, limits, cancel, on_output)


def mounted_host_paths(config: SandboxConfig) -> list[str]:
    """Every host path a sandboxed run can see besides its tree (system dirs,
    the Python runtime with bubblewrap, the operator's extra mounts)."""
    paths = [
        *SYSTEM_DIRS,
        *OPTIONAL_SYSTEM_DIRS,
        *config.pythonpath,
        *config.readonly_paths,
        *config.writable_paths,
    ]
    if config.backend == "bubblewrap":
        paths += python_runtime(config).mounts
    return list(dict.fromkeys(paths))


def tree_path_inside(spec_tree: Path, config: SandboxConfig) -> str:
    """Where the tree is seen by the sandboxed command."""
    return TREE_MOUNT if config.backend == "bubblewrap" else str(spec_tree)


def prepare_writable_tree(tree: Path, config: SandboxConfig) -> None:
    """Give the sandbox uid ownership of an agent tree, so the agent's runs can write it.

    A no-op unless patchwarden runs as root with backend bubblewrap. The tree's `.git` is left
    alone: it is never mounted, and git refuses repositories owned by another uid.
    """
    if not drops_privileges(config):
        return
    uid = config.sandbox_uid
    os.chown(tree, uid, uid)
    for root, dirs, files in os.walk(tree):
        if Path(root) == tree and ".git" in dirs:
            dirs.remove(".git")
        for name in (*dirs, *files):
            if Path(root) == tree and name == ".git":
                continue
            os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)


def drops_privileges(config: SandboxConfig) -> bool:
    """Whether sandboxed commands run as config.sandbox_uid rather than as the caller."""
    return config.backend == "bubblewrap" and os.geteuid() == 0


# --- the bubblewrap command line -------------------------------------------------------------


def build_bwrap_argv(
    spec: LaunchSpec, config: SandboxConfig, *, info_fd: int | None = None
) -> list[str]:
    """The full bubblewrap command for spec (pure apart from looking up files on the host)."""
    tree = _existing_tree(spec.tree)
    runtime = python_runtime(config)
    argv = [_host_tool("bwrap"), *_namespace_args(config), "--die-with-parent", "--new-session"]
    if info_fd is not None:
        argv += ["--info-fd", str(info_fd)]
    env = sandbox_env(spec, config, home=SANDBOX_HOME, tmpdir="/tmp", runtime=runtime)
    argv += ["--clearenv"]
    for name, value in env.items():
        argv += ["--setenv", name, value]
    argv += _system_mount_args((spec.limits or config.limits).tmpfs_mb)
    argv += _runtime_mount_args(runtime, tree)
    argv += _operator_mount_args(config)
    argv += _tree_mount_args(spec, tree)
    argv += _hidden_path_args(config, tree)
    argv += ["--chdir", TREE_MOUNT, "--", *_uid_drop_args(config), *spec.argv]
    return argv


def _namespace_args(config: SandboxConfig) -> list[str]:
    if not drops_privileges(config):
        return ["--unshare-all", *(["--share-net"] if config.network else [])]
    # As root, --unshare-all would add a user namespace mapping the command's uid to host
    # root; everything else it unshares is listed here (see the module docstring).
    args = ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
    if not config.network:
        args.append("--unshare-net")
    args += ["--cap-drop", "ALL"]
    for capability in SETPRIV_CAPABILITIES:
        args += ["--cap-add", capability]
    return args


def _uid_drop_args(config: SandboxConfig) -> list[str]:
    if not drops_privileges(config):
        return []
    uid = config.sandbox_uid
    return [
        _host_tool("setpriv"),
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]


def _system_mount_args(tmpfs_mb: int) -> list[str]:
    args: list[str] = []
    for path in SYSTEM_DIRS:
        args += ["--ro-bind", path, path]
    for path in OPTIONAL_SYSTEM_DIRS:
        args += ["--ro-bind-try", path, path]
    args += ["--proc", "/proc", "--dev", "/dev"]
    # Sticky and world-writable like a real /tmp: when bubblewrap runs as root these tmpfs
    # belong to root, and the command runs as the sandbox uid.
    size = ["--size", str(tmpfs_mb * 1024 * 1024)]
    args += ["--perms", "1777", *size, "--tmpfs", "/tmp"]
    args += [*_parent_dir_args(SANDBOX_HOME), "--perms", "1777", *size, "--tmpfs", SANDBOX_HOME]
    return args


def _parent_dir_args(mount_point: str) -> list[str]:
    """Create the directories above a mount point with mode 0755 first.

    bubblewrap creates missing parents with mode 0700 when it runs as root, which would shut
    the sandbox uid out of e.g. /root/.pyenv/versions/3.11.7. `--dir` leaves directories
    that already exist as they are.
    """
    args: list[str] = []
    for parent in reversed(PurePosixPath(mount_point).parents[:-1]):  # all but "/"
        args += ["--perms", "0755", "--dir", str(parent)]
    return args


def _runtime_mount_args(runtime: PythonRuntime, tree: Path) -> list[str]:
    args: list[str] = []
    for path in runtime.mounts:
        if not _is_within(tree, Path(path)):  # never expose the tree's host path or siblings
            args += [*_parent_dir_args(path), "--ro-bind", path, path]
    return args


def _operator_mount_args(config: SandboxConfig) -> list[str]:
    args: list[str] = []
    for key, paths, flag in (
        ("pythonpath", config.pythonpath, "--ro-bind"),
        ("readonly_paths", config.readonly_paths, "--ro-bind"),
        ("writable_paths", config.writable_paths, "--bind"),
    ):
        for path in paths:
            if not os.path.exists(path):
                raise ConfigError(f"{key}: {path} does not exist", where="sandbox")
            args += [*_parent_dir_args(path), flag, path, path]
    return args


def _tree_mount_args(spec: LaunchSpec, tree: Path) -> list[str]:
    args = ["--bind" if spec.tree_writable else "--ro-bind", str(tree), TREE_MOUNT]
    args += _git_cover_args(tree)
    for mount in plan_contract_mounts(spec, tree):
        inside = f"{TREE_MOUNT}/{mount.relative}"
        if mount.exists:
            args += ["--ro-bind", str(tree / mount.relative), inside]
        elif spec.tree_writable:
            args += _empty_readonly_dir_args(inside)
    return args


def _git_cover_args(tree: Path) -> list[str]:
    git = tree / ".git"
    if not os.path.lexists(git):
        return []
    if git.is_symlink():
        raise SandboxError("the tree's .git is a symlink; refusing to run", where=str(tree))
    return _cover_args(git, f"{TREE_MOUNT}/.git")


def _hidden_path_args(config: SandboxConfig, tree: Path) -> list[str]:
    args: list[str] = []
    for hidden in config.hidden_paths:
        path = Path(hidden)
        if not os.path.lexists(path):
            continue
        if _is_within(path, tree) and path != tree:  # the tree is seen at TREE_MOUNT only
            relative = path.relative_to(tree).as_posix()
            _refuse_symlinks(tree, relative, what="hidden path")
            args += _cover_args(path, f"{TREE_MOUNT}/{relative}")
        else:
            args += _cover_args(path, hidden)
    return args


def _cover_args(host_path: Path, inside: str) -> list[str]:
    if host_path.is_dir() and not host_path.is_symlink():
        return _empty_readonly_dir_args(inside)
    return ["--ro-bind", "/dev/null", inside]


def _empty_readonly_dir_args(inside: str) -> list[str]:
    return ["--perms", "0555", "--tmpfs", inside, "--remount-ro", inside]


@dataclass(frozen=True)
class ContractMount:
    """One contract path of a tree, and whether it exists there."""

    relative: str
    exists: bool


def plan_contract_mounts(spec: LaunchSpec, tree: Path) -> list[ContractMount]:
    """Check every contract path and say whether it exists.

    Raises SandboxError if a contract path goes through a symlink: mounting it would follow
    the link to wherever the tree's author pointed it.
    """
    mounts = []
    for raw in spec.contract_paths:
        relative = _normal_relative_path(raw)
        exists = _refuse_symlinks(tree, relative, what="contract path")
        mounts.append(ContractMount(relative, exists))
    return mounts


def _normal_relative_path(raw: str) -> str:
    path = PurePosixPath(raw)
    parts = path.parts
    if path.is_absolute() or not parts or any(p in ("..", ".") for p in raw.split("/")):
        raise ValueError(f"contract path {raw!r} must be relative, without '.' or '..'")
    if parts[0] == ".git":
        raise ValueError(f"contract path {raw!r} is inside .git")
    return path.as_posix()


def _refuse_symlinks(tree: Path, relative: str, *, what: str) -> bool:
    """Whether tree/relative exists; raises SandboxError if any component is a symlink."""
    path = tree
    for part in PurePosixPath(relative).parts:
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return False
        if stat.S_ISLNK(mode):
            raise SandboxError(
                f"{what} {relative!r} goes through a symlink at "
                f"{path.relative_to(tree).as_posix()!r}; refusing to mount it",
                where=str(tree),
            )
    return True


def _is_within(path: Path, ancestor: Path) -> bool:
    return path == ancestor or ancestor in path.parents


@functools.cache
def _which(name: str) -> str | None:
    return shutil.which(name)


def _host_tool(name: str) -> str:
    path = _which(name)
    if path is None:
        raise SandboxError(f"{name} is not installed (not found on PATH)", where=name)
    return path


def _existing_tree(tree: Path) -> Path:
    resolved = tree.resolve(strict=True)
    if not resolved.is_dir():
        raise NotADirectoryError(f"tree {tree} is not a directory")
    return resolved


# --- environment and the Python runtime ------------------------------------------------------


def sandbox_env(
    spec: LaunchSpec, config: SandboxConfig, *, home: str, tmpdir: str, runtime: PythonRuntime
) -> dict[str, str]:
    """The command's whole environment: allow-list, then HOME/TMPDIR/PATH, then spec.env."""
    env = {name: os.environ[name] for name in config.env_allow if name in os.environ}
    env.update(HOME=home, TMPDIR=tmpdir, PATH=f"{runtime.bin_dir}:{SYSTEM_PATH}")
    for name, value in spec.env.items():
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise ValueError(f"environment variable {name!r} cannot be set")
        env[name] = value
    return env


@dataclass(frozen=True)
class PythonRuntime:
    """Where an interpreter lives: what to mount read-only so it runs inside."""

    executable: str
    bin_dir: str
    """Put first on PATH, so `python3` inside is this interpreter."""
    mounts: tuple[str, ...]
    """Host paths mounted read-only at the same path (prefixes and sys.path entries)."""


def python_runtime(config: SandboxConfig) -> PythonRuntime:
    """The configured interpreter's installation (asked once per interpreter and cached)."""
    name = config.python or sys.executable
    path = name if os.path.isabs(name) else _which(name)
    if path is None or not os.access(path, os.X_OK):
        raise ConfigError(f"python: {name!r} is not an executable interpreter", where="sandbox")
    return _probe_runtime(path)


_RUNTIME_PROBE = (
    "import json, sys; print(json.dumps({'executable': sys.executable, 'prefixes': "
    "[sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix], 'path': sys.path}))"
)


@functools.cache
def _probe_runtime(interpreter: str) -> PythonRuntime:
    # -I: ignore PYTHONPATH, the user site directory and the current directory, so we see the
    # installation itself and not whatever this process's environment adds.
    try:
        completed = subprocess.run(
            [interpreter, "-I", "-c", _RUNTIME_PROBE],
            capture_output=True,
            text=True,
            timeout=RUNTIME_PROBE_TIMEOUT_S,
            check=True,
        )
        report = json.loads(completed.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise ConfigError(
            f"python: {interpreter} did not report its installation ({exc})", where="sandbox"
        ) from None
    executable = str(report["executable"])
    candidates = [
        *report["prefixes"],
        *report["path"],
        os.path.dirname(os.path.realpath(executable)),
    ]
    return PythonRuntime(
        executable=executable,
        bin_dir=os.path.dirname(executable),
        mounts=_runtime_mounts(str(c) for c in candidates),
    )


def _runtime_mounts(candidates: Iterable[str]) -> tuple[str, ...]:
    """Existing, safe candidates, without those already inside another one or inside /usr."""
    kept: list[Path] = []
    for candidate in sorted({os.path.normpath(c) for c in candidates if c}):
        path = Path(candidate)
        if not path.exists() or not _is_safe_runtime_path(path):
            continue
        if any(_is_within(path, Path(system)) for system in SYSTEM_DIRS):
            continue
        if not any(_is_within(path, k) for k in kept):
            kept.append(path)
    return tuple(str(k) for k in kept)


def _is_safe_runtime_path(path: Path) -> bool:
    """Not /, not the host home or above it, and not a directory that holds our own packages
    (an editable install of patchwarden adds the project directory to sys.path)."""
    home = Path.home().resolve()
    if _is_within(home, path):
        return False
    ours = path / "sandbox" / Path(__file__).name
    return not (ours.exists() and ours.samefile(__file__))


# --- running and supervising -----------------------------------------------------------------


def _run_bubblewrap(
    spec: LaunchSpec,
    config: SandboxConfig,
    limits: Limits,
    cancel: threading.Event | None,
    on_output: _OutputCallback | None,
) -> ProcessResult:
    tree = _existing_tree(spec.tree)
    _check_tree_access(spec, tree, config)
    with contextlib.ExitStack() as stack:
        created = _create_contract_mount_points(spec, tree, config)
        stack.callback(_remove_empty_dirs, created)
        info_read, info_write = os.pipe()
        stack.callback(_close_quietly, info_read)
        try:
            argv = build_bwrap_argv(spec, config, info_fd=info_write)
            command = _Command(
                argv=argv,
                shown_argv=tuple(spec.argv),
                cwd=None,
                env={"PATH": SYSTEM_PATH},
                pass_fds=(*spec.pass_fds, info_write),
                info_fd=info_read,
            )
            process = _start(command, limits, spec.stdin)
        finally:
            os.close(info_write)
        return _Supervisor(process, command, limits, spec.stdin, cancel, on_output).run(
            config.backend
        )


def _run_unisolated(
    spec: LaunchSpec,
    config: SandboxConfig,
    limits: Limits,
    cancel: threading.Event | None,
    on_output: _OutputCallback | None,
) -> ProcessResult:
    tree = _existing_tree(spec.tree)
    with tempfile.TemporaryDirectory(prefix="patchwarden-home-") as home:
        env = sandbox_env(spec, config, home=home, tmpdir=home, runtime=python_runtime(config))
        command = _Command(
            argv=list(spec.argv),
            shown_argv=tuple(spec.argv),
            cwd=tree,
            env=env,
            pass_fds=tuple(spec.pass_fds),
            info_fd=None,
        )
        try:
            process = _start(command, limits, spec.stdin)
        except FileNotFoundError as exc:  # bubblewrap reports this as an exit status; so do we
            return _not_found_result(command, exc, config.backend)
        return _Supervisor(process, command, limits, spec.stdin, cancel, on_output).run(
            config.backend
        )


def _not_found_result(command: _Command, exc: OSError, backend: str) -> ProcessResult:
    return ProcessResult(
        argv=command.shown_argv,
        exit_code=127,  # the shell's "command not found"
        signal=None,
        stdout="",
        stderr=f"patchwarden: cannot execute {command.argv[0]}: {exc.strerror}\n",
        truncated=False,
        timed_out=False,
        idle_timed_out=False,
        cancelled=False,
        duration_s=0.0,
        backend=backend,
    )


def _check_tree_access(spec: LaunchSpec, tree: Path, config: SandboxConfig) -> None:
    if not drops_privileges(config):
        return
    uid = config.sandbox_uid
    st = os.stat(tree)
    if spec.tree_writable and st.st_uid != uid:
        raise SandboxError(
            f"the tree belongs to uid {st.st_uid}, not the sandbox uid {uid}; "
            "call prepare_writable_tree() first",
            where=str(tree),
        )
    if st.st_uid != uid and st.st_mode & 0o005 != 0o005:
        raise SandboxError(
            f"the tree is not readable by the sandbox uid {uid} (it needs mode o+rx)",
            where=str(tree),
        )


def _create_contract_mount_points(
    spec: LaunchSpec, tree: Path, config: SandboxConfig
) -> list[Path]:
    """Create the directories bubblewrap mounts an empty read-only directory on, for contract
    paths missing from a writable tree; returns them, parents first, for removal after."""
    if not spec.tree_writable:
        return []
    created: list[Path] = []
    for mount in plan_contract_mounts(spec, tree):
        if mount.exists:
            continue
        path = tree
        for part in PurePosixPath(mount.relative).parts:
            path = path / part
            if not os.path.lexists(path):
                os.mkdir(path)
                created.append(path)
                if drops_privileges(config):
                    os.chown(path, config.sandbox_uid, config.sandbox_uid)
    return created


def _remove_empty_dirs(created: list[Path]) -> None:
    for path in reversed(created):
        try:
            os.rmdir(path)
        except OSError as exc:
            # The command may have put files next to the mount point, or moved a parent away:
            # those directories are the command's now, and stay.
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
                raise


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError as exc:
        if exc.errno != errno.EBADF:  # already closed by the supervisor
            raise


@dataclass(frozen=True)
class _Command:
    argv: list[str]
    shown_argv: tuple[str, ...]
    cwd: Path | None
    env: dict[str, str]
    pass_fds: tuple[int, ...]
    info_fd: int | None
    """Read end of bubblewrap's --info-fd, which names the sandbox's init process."""


def _start(command: _Command, limits: Limits, stdin: bytes | None) -> subprocess.Popen[bytes]:
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


class _Supervisor:
    """Waits for one process while enforcing the limits, then makes sure its tree is gone."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        command: _Command,
        limits: Limits,
        stdin: bytes | None,
        cancel: threading.Event | None,
        on_output: _OutputCallback | None,
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
        self._selector.register(self._exit_fd, selectors.EVENT_READ)

    def _wait(self) -> _StopReason | None:
        """Until the process exits (None) or a limit is reached (the reason)."""
        while True:
            reason, timeout = self._limit_reached()
            if reason is not None:
                break
            if self._handle_events(timeout):
                break
        self._ended = time.monotonic()
        return reason

    def _limit_reached(self) -> tuple[_StopReason | None, float]:
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

    def _result(self, reason: _StopReason | None, backend: str) -> ProcessResult:
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

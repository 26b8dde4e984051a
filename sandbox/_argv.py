"""The bubblewrap command line: namespaces, mounts, the uid drop (docs/design/sandbox.md).

Pure argv building from a LaunchSpec and a SandboxConfig; nothing here starts a process.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from patchwarden._hostpaths import is_within
from patchwarden._treepaths import normal_tree_path

from ._config import Limits, SandboxConfig
from ._errors import ConfigError, SandboxError
from ._runtime import SYSTEM_DIRS, PythonRuntime, python_runtime, which


def drops_privileges(config: SandboxConfig) -> bool:
    """Whether sandboxed commands run as config.sandbox_uid rather than as the caller."""
    return config.backend == "bubblewrap" and os.geteuid() == 0


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


TREE_MOUNT = "/workspace"
"""Where the tree appears inside bubblewrap; the working directory of the command."""

SANDBOX_HOME = "/home/sandbox"
"""$HOME inside bubblewrap: an empty tmpfs, so the host's home is never visible."""


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
    readonly_mounts: Sequence[tuple[Path, str]] = ()
    """Extra host directories, each mounted read-only at an absolute path inside, outside
    TREE_MOUNT and the system directories (e.g. test files kept apart from the tree, the
    scorer's hidden canary properties). Ignored by the ``none`` backend, which sees every
    host path where it is."""
    beat_fd: int | None = None
    """The read end of a pipe whose bytes count as output for ``limits.idle_time_s`` (and
    are discarded): an isolated oracle beats on it while it waits for its product process,
    so the idle limit cannot fire before the call's own deadline. The write end goes in
    ``pass_fds``; the caller closes both."""


# --- the bubblewrap command line -------------------------------------------------------------


def build_bwrap_argv(
    spec: LaunchSpec,
    config: SandboxConfig,
    *,
    info_fd: int | None = None,
    seccomp_fd: int | None = None,
    run_uid: int | None = None,
) -> list[str]:
    """The full bubblewrap command for spec (pure apart from looking up files on the host).

    seccomp_fd: a descriptor bubblewrap reads the seccomp program from (sandbox/_seccomp.py).
    ``run_uid``: the uid the command drops to when root (default: config.sandbox_uid).
    """
    tree = existing_tree(spec.tree)
    runtime = python_runtime(config)
    argv = [_host_tool("bwrap"), *_namespace_args(config), "--die-with-parent", "--new-session"]
    if info_fd is not None:
        argv += ["--info-fd", str(info_fd)]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    env = sandbox_env(spec, config, home=SANDBOX_HOME, tmpdir="/tmp", runtime=runtime)
    argv += ["--clearenv"]
    for name, value in env.items():
        argv += ["--setenv", name, value]
    argv += _system_mount_args((spec.limits or config.limits).tmpfs_mb)
    argv += _runtime_mount_args(runtime, tree)
    argv += _operator_mount_args(config)
    argv += _tree_mount_args(spec, tree)
    argv += _hidden_path_args(config, tree)
    argv += _readonly_mount_args(spec, _taken_paths(config, runtime))
    argv += ["--chdir", TREE_MOUNT, "--", *_uid_drop_args(config, run_uid), *spec.argv]
    return argv


def _taken_paths(config: SandboxConfig, runtime: PythonRuntime) -> list[str]:
    """Every path the sandbox mounts besides the spec's extra read-only directories."""
    return [
        TREE_MOUNT,
        SANDBOX_HOME,
        "/tmp",
        "/proc",
        "/dev",
        *SYSTEM_DIRS,
        *OPTIONAL_SYSTEM_DIRS,
        *runtime.mounts,
        *config.pythonpath,
        *config.readonly_paths,
        *config.writable_paths,
        *config.hidden_paths,
    ]


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


def _uid_drop_args(config: SandboxConfig, run_uid: int | None) -> list[str]:
    if not drops_privileges(config):
        return []
    uid = config.sandbox_uid if run_uid is None else run_uid
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
        if not is_within(tree, Path(path)):  # never expose the tree's host path or siblings
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
        if is_within(path, tree) and path != tree:  # the tree is seen at TREE_MOUNT only
            relative = path.relative_to(tree).as_posix()
            _refuse_symlinks(tree, relative, what="hidden path")
            args += _cover_args(path, f"{TREE_MOUNT}/{relative}")
        else:
            args += _cover_args(path, hidden)
    return args


def _readonly_mount_args(spec: LaunchSpec, taken: Sequence[str]) -> list[str]:
    """The spec's extra read-only directories, each at a new top-level path inside.

    A top-level name nothing else uses cannot cover the tree, the system, the runtime or an
    operator mount, nor be covered by them.
    """
    used = {PurePosixPath(path).parts[1] for path in taken if len(PurePosixPath(path).parts) > 1}
    args: list[str] = []
    for host, inside in spec.readonly_mounts:
        point = PurePosixPath(inside)
        if not point.is_absolute() or len(point.parts) != 2 or point.parts[1] in (".", ".."):
            raise ValueError(f"read-only mount point {inside!r} must be one top-level directory")
        if point.parts[1] in used:
            raise ValueError(f"read-only mount point {inside!r} is already used in the sandbox")
        used.add(point.parts[1])
        if host.is_symlink() or not host.is_dir():
            raise SandboxError("a read-only mount must be a directory, not a link", where=str(host))
        args += ["--ro-bind", str(host.resolve()), inside]
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
    return normal_tree_path(raw, "contract path")


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


def _host_tool(name: str) -> str:
    path = which(name)
    if path is None:
        raise SandboxError(f"{name} is not installed (not found on PATH)", where=name)
    return path


def existing_tree(tree: Path) -> Path:
    resolved = tree.resolve(strict=True)
    if not resolved.is_dir():
        raise NotADirectoryError(f"tree {tree} is not a directory")
    return resolved

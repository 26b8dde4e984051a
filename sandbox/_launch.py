"""The one place where a sandboxed process is started (see docs/architecture.md).

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
import errno
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from ._argv import (
    NONE_BACKEND_WARNING,
    OPTIONAL_SYSTEM_DIRS,
    SYSTEM_PATH,
    TREE_MOUNT,
    LaunchSpec,
    _uid_drop_args,
    build_bwrap_argv,
    drops_privileges,
    existing_tree,
    plan_contract_mounts,
    sandbox_env,
)
from ._config import Limits, SandboxConfig
from ._errors import SandboxError
from ._runtime import SYSTEM_DIRS, python_runtime
from ._seccomp import seccomp_program
from ._supervise import Command, OutputCallback, ProcessResult, Supervisor, start_process
from ._uids import lease_uid


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
    alone: it is never mounted, and git refuses repositories owned by another uid. With
    ``sandbox.uid_range`` each run then hands the tree on to the uid it leased.
    """
    if not drops_privileges(config):
        return
    _hand_tree_to(tree, config.sandbox_uid)


def _hand_tree_to(tree: Path, uid: int) -> None:
    """Make ``uid`` the owner of everything in ``tree`` but its ``.git`` (links not followed)."""
    os.chown(tree, uid, uid)
    for root, dirs, files in os.walk(tree):
        if Path(root) == tree and ".git" in dirs:
            dirs.remove(".git")
        for name in (*dirs, *files):
            if Path(root) == tree and name == ".git":
                continue
            os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)


# --- running and supervising -----------------------------------------------------------------


def _run_bubblewrap(
    spec: LaunchSpec,
    config: SandboxConfig,
    limits: Limits,
    cancel: threading.Event | None,
    on_output: OutputCallback | None,
) -> ProcessResult:
    tree = existing_tree(spec.tree)
    _check_tree_access(spec, tree, config)
    with contextlib.ExitStack() as stack:
        run_uid: int | None = None
        if drops_privileges(config):
            run_uid = stack.enter_context(lease_uid(config))
            if spec.tree_writable and config.uid_range is not None:
                _hand_tree_to(tree, run_uid)  # files of an earlier run belong to its uid
        created = _create_contract_mount_points(spec, tree, config, run_uid)
        stack.callback(_remove_empty_dirs, created)
        info_read, info_write = os.pipe()
        stack.callback(_close_quietly, info_read)
        seccomp_read = _seccomp_pipe()
        try:
            argv = build_bwrap_argv(
                spec, config, info_fd=info_write, seccomp_fd=seccomp_read, run_uid=run_uid
            )
            # bubblewrap takes its options from a descriptor; the command stays on the
            # command line (bubblewrap wants it there), and shows itself anyway.
            separator = len(argv) - len(spec.argv) - len(_uid_drop_args(config, run_uid)) - 1
            assert argv[separator] == "--"
            args_fd = _args_descriptor(argv[1:separator])
            stack.callback(os.close, args_fd)
            command = Command(
                argv=[argv[0], "--args", str(args_fd), *argv[separator:]],
                shown_argv=tuple(spec.argv),
                cwd=None,
                env={"PATH": SYSTEM_PATH},
                pass_fds=(*spec.pass_fds, info_write, seccomp_read, args_fd),
                info_fd=info_read,
                beat_fd=spec.beat_fd,
            )
            process = start_process(command, limits, spec.stdin)
        finally:
            os.close(info_write)
            os.close(seccomp_read)
        return Supervisor(process, command, limits, spec.stdin, cancel, on_output).run(
            config.backend
        )


def _args_descriptor(args: list[str]) -> int:
    """bubblewrap's options in a memory file for ``--args FD`` (NUL-terminated each).

    On the command line they would be readable by every process in the sandbox as
    /proc/1/cmdline: host paths of the tree and the mounts, the environment. bubblewrap reads
    the descriptor before it sets up the sandbox and closes it, so nothing inside can.
    """
    data = b"".join(os.fsencode(arg) + b"\0" for arg in args)
    fd = os.memfd_create("patchwarden-bwrap-args", os.MFD_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _run_unisolated(
    spec: LaunchSpec,
    config: SandboxConfig,
    limits: Limits,
    cancel: threading.Event | None,
    on_output: OutputCallback | None,
) -> ProcessResult:
    tree = existing_tree(spec.tree)
    with tempfile.TemporaryDirectory(prefix="patchwarden-home-") as home:
        env = sandbox_env(spec, config, home=home, tmpdir=home, runtime=python_runtime(config))
        command = Command(
            argv=list(spec.argv),
            shown_argv=tuple(spec.argv),
            cwd=tree,
            env=env,
            pass_fds=tuple(spec.pass_fds),
            info_fd=None,
            beat_fd=spec.beat_fd,
        )
        try:
            process = start_process(command, limits, spec.stdin)
        except FileNotFoundError as exc:  # bubblewrap reports this as an exit status; so do we
            return _not_found_result(command, exc, config.backend)
        return Supervisor(process, command, limits, spec.stdin, cancel, on_output).run(
            config.backend
        )


def _not_found_result(command: Command, exc: OSError, backend: str) -> ProcessResult:
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
    if spec.tree_writable and st.st_uid != uid and st.st_uid not in config.run_uids():
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
    spec: LaunchSpec, tree: Path, config: SandboxConfig, run_uid: int | None
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
                if run_uid is not None:
                    os.chown(path, run_uid, run_uid)
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


def _seccomp_pipe() -> int:
    """A pipe holding the seccomp program, for bubblewrap's ``--seccomp``; returns its read end.

    The program is a few hundred bytes, far below a pipe's buffer, so writing it all before
    bubblewrap starts cannot block.
    """
    program = seccomp_program()
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, program)
    finally:
        os.close(write_end)
    return read_end


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError as exc:
        if exc.errno != errno.EBADF:  # already closed by the supervisor
            raise

"""Can this machine isolate our runs?

`check_sandbox` tries each piece the way `launch` uses it and says, in plain words, what works
and how to fix what does not. `require_sandbox` refuses to go on without isolation; `launch`
calls it first, and a positive answer is remembered for the life of the process.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ._argv import LaunchSpec, drops_privileges
from ._config import SandboxConfig
from ._env import FIND_COPIES, RUNNER_SUPPORTS
from ._errors import PatchwardenError, SandboxError
from ._launch import run_unchecked
from ._pytest_runner import configuration_line, configuration_problems, layout_for, pytest_world
from ._runtime import python_runtime
from ._supervise import ProcessResult

MIN_BWRAP_VERSION = (0, 5, 0)
"""The oldest bubblewrap with --perms for --tmpfs, which the sandbox's /tmp and $HOME need.
Tested with 0.8.0."""

PROBE_TIME_S = 30.0
"""Wall and idle limit of each probe; a sandboxed `true` takes milliseconds."""

VERSION_TIMEOUT_S = 10.0
"""Time allowed for `bwrap --version`."""

_verified: set[SandboxConfig] = set()
_verified_lock = threading.Lock()


@dataclass(frozen=True)
class DoctorCheck:
    """One thing the sandbox needs, and whether it works here."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    """What the operator can do about it, in plain words (empty when ok)."""


def check_sandbox(config: SandboxConfig) -> list[DoctorCheck]:
    """Every check in order, up to and including the first that fails."""
    if config.backend == "none":
        return [
            DoctorCheck(
                "backend",
                ok=True,
                detail="backend 'none': runs are NOT isolated (development only)",
                fix="set sandbox.backend: bubblewrap for real use",
            )
        ]
    checks: list[DoctorCheck] = []
    for check in _checks_for(config):
        try:
            result = check(config)
        except PatchwardenError as exc:
            result = DoctorCheck(check.__name__.removeprefix("_check_"), False, str(exc), "")
        checks.append(result)
        if not result.ok:
            break
    return checks


def require_sandbox(config: SandboxConfig) -> None:
    """Raise SandboxError, saying why and what to do, unless runs can be isolated as configured.

    Nothing to check for backend 'none' (launch warns on every run instead).
    """
    if config.backend == "none":
        return
    with _verified_lock:
        if config in _verified:
            return
    failed = [check for check in check_sandbox(config) if not check.ok]
    if failed:
        first = failed[0]
        fix = f" Fix: {first.fix}" if first.fix else ""
        raise SandboxError(f"{first.detail}.{fix}", where=f"sandbox check '{first.name}'")
    with _verified_lock:
        _verified.add(config)


def _checks_for(config: SandboxConfig) -> list[Callable[[SandboxConfig], DoctorCheck]]:
    checks: list[Callable[[SandboxConfig], DoctorCheck]] = [
        _check_bwrap_installed,
        _check_bwrap_version,
    ]
    if drops_privileges(config):
        checks.append(_check_setpriv_installed)
    checks.append(_check_sandboxed_run)
    if drops_privileges(config):
        checks.append(_check_uid_drop)
    checks.append(_check_python_inside)
    checks.append(_check_process_budget)
    return checks


def _check_bwrap_installed(config: SandboxConfig) -> DoctorCheck:
    path = shutil.which("bwrap")
    if path is None:
        return DoctorCheck(
            "bwrap installed",
            False,
            "bubblewrap (bwrap) is not on PATH",
            "install bubblewrap (apt install bubblewrap / dnf install bubblewrap)",
        )
    return DoctorCheck("bwrap installed", True, path)


def _check_bwrap_version(config: SandboxConfig) -> DoctorCheck:
    completed = subprocess.run(
        ["bwrap", "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S
    )
    found = re.search(r"(\d+)\.(\d+)\.(\d+)", completed.stdout)
    if found is None:
        return DoctorCheck(
            "bwrap version",
            False,
            f"cannot read the version from {completed.stdout.strip()!r}",
            "reinstall bubblewrap",
        )
    version = tuple(int(part) for part in found.groups())
    wanted = ".".join(map(str, MIN_BWRAP_VERSION))
    if version < MIN_BWRAP_VERSION:
        return DoctorCheck(
            "bwrap version",
            False,
            f"bubblewrap {found.group(0)} is older than {wanted}",
            f"install bubblewrap {wanted} or newer",
        )
    return DoctorCheck("bwrap version", True, f"bubblewrap {found.group(0)}")


def _check_setpriv_installed(config: SandboxConfig) -> DoctorCheck:
    path = shutil.which("setpriv")
    if path is None:
        return DoctorCheck(
            "setpriv installed",
            False,
            "setpriv is not on PATH; as root, runs drop to the sandbox uid with it",
            "install util-linux (it provides setpriv)",
        )
    return DoctorCheck("setpriv installed", True, path)


def _check_sandboxed_run(config: SandboxConfig) -> DoctorCheck:
    result = _probe(["true"], config)
    if result.exit_code == 0:
        return DoctorCheck("sandboxed run", True, "a sandboxed `true` ran")
    return DoctorCheck(
        "sandboxed run",
        False,
        f"a sandboxed `true` failed: {_first_line(result)}",
        _namespace_advice(config),
    )


def _check_uid_drop(config: SandboxConfig) -> DoctorCheck:
    result = _probe(["cat", "/proc/self/status"], config)
    status = dict(line.split(":", 1) for line in result.stdout.splitlines() if ":" in line)
    uids = status.get("Uid", "").split()
    uid = uids[0] if uids else "?"
    wanted = config.run_uids()
    capabilities = [status.get(f"Cap{kind}", "").strip() for kind in ("Prm", "Eff", "Bnd")]
    dropped = (
        result.exit_code == 0
        and uid.isdigit()
        and int(uid) in wanted
        and uids == [uid] * 4
        and all(value and int(value, 16) == 0 for value in capabilities)
        and status.get("NoNewPrivs", "").strip() == "1"
    )
    if dropped:
        return DoctorCheck("uid drop", True, f"runs as uid {uid}, no capabilities, no_new_privs")
    return DoctorCheck(
        "uid drop",
        False,
        f"the sandboxed process did not run as uid {_uids_text(wanted)} without privileges "
        f"(Uid: {status.get('Uid', '?').strip()}; {_first_line(result)})",
        "check that setpriv works here (setpriv --reuid=65534 --regid=65534 --clear-groups true)",
    )


def _uids_text(uids: range) -> str:
    return str(uids[0]) if len(uids) == 1 else f"{uids[0]}-{uids[-1]}"


def _check_process_budget(config: SandboxConfig) -> DoctorCheck:
    """Whether each run has a process budget of its own (never fails: the shared budget is a
    fallback that still holds every run to its limit, but one run can starve another)."""
    if drops_privileges(config) and config.uid_range is not None:
        uids = config.run_uids()
        taken = _uids_with_users(uids)
        if taken:
            return DoctorCheck(
                "process budget",
                False,
                f"sandbox.uid_range holds uids of users of this host: {', '.join(taken[:5])}",
                "choose a range no user or service has (and no subuid range)",
            )
        return DoctorCheck(
            "process budget",
            True,
            f"one per run: uids {_uids_text(uids)} ({len(uids)} runs at once)",
        )
    why = (
        "set sandbox.uid_range (e.g. [100000, 100063]) to give each run its own"
        if drops_privileges(config)
        else "a uid per run needs root; run patchwarden as root with sandbox.uid_range"
    )
    return DoctorCheck(
        "process budget",
        True,
        f"shared: every run counts against one RLIMIT_NPROC budget of "
        f"{config.limits.processes} processes, so a fork bomb in one run can starve another",
        why,
    )


def _uids_with_users(uids: range) -> list[str]:
    import pwd

    return [f"{entry.pw_uid} ({entry.pw_name})" for entry in pwd.getpwall() if entry.pw_uid in uids]


def _check_python_inside(config: SandboxConfig) -> DoctorCheck:
    runtime = python_runtime(config)
    result = _probe([runtime.executable, "-I", "-c", "import sys; print(sys.version)"], config)
    if result.exit_code == 0:
        return DoctorCheck("python inside", True, f"{runtime.executable} {result.stdout.strip()}")
    return DoctorCheck(
        "python inside",
        False,
        f"{runtime.executable} does not start in the sandbox: {_first_line(result)}",
        "set sandbox.python to an interpreter whose installation the sandbox uid can read",
    )


_MACHINERY_PROBE = (
    "import json, pytest, hypothesis; "
    "print(json.dumps({'pytest': pytest.__version__, 'hypothesis': hypothesis.__version__}))"
)


def check_interpreter(
    config: SandboxConfig,
    project_packages: Sequence[str] | None = None,
    tree: Path | None = None,
) -> list[DoctorCheck]:
    """What the configured interpreter holds, seen inside the sandbox: pytest and Hypothesis at
    versions the runner supports, (given the project's packages) no copy of the project,
    which would be measured instead of the tree if the tree were not first on sys.path, and
    (given the project's tree) what its pytest configuration needs."""
    runtime = python_runtime(config)
    checks = [_check_machinery(config, runtime.executable)]
    if project_packages is not None:
        checks.append(_check_no_project_copy(config, runtime.executable, project_packages))
    if tree is not None:
        checks.append(_check_pytest_configuration(config, tree))
    return checks


def _check_pytest_configuration(config: SandboxConfig, tree: Path) -> DoctorCheck:
    """The project's pytest configuration can be honoured with this interpreter: its plugins
    are in the env (docs/design/runner.md, "The project's pytest configuration")."""
    layout = layout_for(tree, config)
    problems = configuration_problems(tree, config, layout)
    if problems:
        fix = "add what is missing to the declarations and run `patchwarden env build`"
        return DoctorCheck("pytest configuration", False, configuration_line(problems), fix)
    world, left_out = pytest_world(config, layout, "scorer")
    source = layout.pytest.source or "none (pytest's defaults)"
    plugins = ", ".join(world["plugins"]) or "none"
    detail = f"{source}; plugins loaded: {plugins}"
    return DoctorCheck(
        "pytest configuration", True, detail, "left out: " + "; ".join(left_out) if left_out else ""
    )


def _check_machinery(config: SandboxConfig, python: str) -> DoctorCheck:
    result = _probe([python, "-I", "-c", _MACHINERY_PROBE], config)
    fix = (
        "build an env with `patchwarden env build` and set sandbox.python to the interpreter "
        "it prints"
    )
    try:
        versions = json.loads(result.stdout)
    except ValueError:
        return DoctorCheck(
            "test machinery", False, f"{python} cannot import pytest and hypothesis: "
            f"{_first_line(result)}", fix
        )  # fmt: skip
    wrong = [
        f"{name} {versions[name]} (the runner supports {supported})"
        for name, supported in RUNNER_SUPPORTS.items()
        if versions.get(name) not in supported
    ]
    if wrong:
        return DoctorCheck("test machinery", False, f"{python} has " + ", ".join(wrong), fix)
    shown = ", ".join(f"{name} {versions[name]}" for name in RUNNER_SUPPORTS)
    return DoctorCheck("test machinery", True, shown)


def _check_no_project_copy(
    config: SandboxConfig, python: str, packages: Sequence[str]
) -> DoctorCheck:
    if not packages:
        return DoctorCheck("no copy of the project", True, "the project names no packages")
    result = _probe([python, "-I", "-c", FIND_COPIES, *packages], config)
    try:
        found = json.loads(result.stdout)["found"]
    except (ValueError, KeyError, TypeError):
        return DoctorCheck(
            "no copy of the project", False, f"cannot ask {python}: {_first_line(result)}", ""
        )
    if found:
        copies = ", ".join(f"{name} at {where}" for name, where in sorted(found.items()))
        return DoctorCheck(
            "no copy of the project",
            False,
            f"{python} holds its own copy of the project's code: {copies}",
            "build an env that does not (`patchwarden env build --repo R`) and set "
            "sandbox.python to it; until then the tree comes first on sys.path and a run "
            "that imports this copy fails closed",
        )
    return DoctorCheck(
        "no copy of the project", True, f"none of {', '.join(packages)} outside the tree"
    )


def _probe(argv: list[str], config: SandboxConfig) -> ProcessResult:
    limits = config.limits.model_copy(
        update={"wall_time_s": PROBE_TIME_S, "idle_time_s": PROBE_TIME_S}
    )
    with tempfile.TemporaryDirectory(prefix="patchwarden-probe-") as tree:
        os.chmod(tree, 0o755)  # the sandbox uid must be able to enter it
        return run_unchecked(LaunchSpec(argv=argv, tree=Path(tree), limits=limits), config)


def _first_line(result: ProcessResult) -> str:
    if result.timed_out or result.idle_timed_out:
        return "it did not finish"
    lines = (result.stderr or result.stdout).strip().splitlines()
    return lines[0] if lines else f"exit status {result.exit_code}"


def _namespace_advice(config: SandboxConfig) -> str:
    """Why namespaces cannot be created here, as far as we can tell, and what to do."""
    if _read_sysctl("kernel/apparmor_restrict_unprivileged_userns") == "1" and not drops_privileges(
        config
    ):
        return (
            "this system (Ubuntu 24.04 or later) lets AppArmor block unprivileged user "
            "namespaces: add an AppArmor profile that allows userns for /usr/bin/bwrap, or set "
            "sysctl kernel.apparmor_restrict_unprivileged_userns=0"
        )
    if _read_sysctl("user/max_user_namespaces") == "0" and not drops_privileges(config):
        return "user namespaces are switched off: set sysctl user.max_user_namespaces=10000"
    if _read_sysctl("kernel/unprivileged_userns_clone") == "0" and not drops_privileges(config):
        return "unprivileged user namespaces are off: set sysctl kernel.unprivileged_userns_clone=1"
    if _in_container():
        return (
            "this looks like a container that may not create namespaces: allow it (e.g. docker "
            "run --security-opt seccomp=unconfined --security-opt apparmor=unconfined "
            "--cap-add SYS_ADMIN), or run patchwarden on the host"
        )
    return (
        "bubblewrap cannot create the sandbox; run `bwrap --unshare-all --ro-bind / / true` "
        "to see why"
    )


def _read_sysctl(name: str) -> str | None:
    try:
        return Path("/proc/sys", name).read_text().strip()
    except OSError:
        return None


def _in_container() -> bool:
    if os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv"):
        return True
    try:
        cgroups = Path("/proc/1/cgroup").read_text()
    except OSError:
        return False
    return any(word in cgroups for word in ("docker", "kubepods", "containerd", "lxc"))

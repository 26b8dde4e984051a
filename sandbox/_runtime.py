"""The Python runtime seen inside the sandbox: which host directories its installation needs.

The interpreter is probed once (in a plain subprocess) for the directories its installation
needs; those are mounted read-only.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchwarden._hostpaths import is_within

from ._config import SandboxConfig
from ._errors import ConfigError

# --- environment and the Python runtime ------------------------------------------------------


RUNTIME_PROBE_TIMEOUT_S = 60.0
"""Time allowed for the interpreter to report where it is installed (a cold start on a busy
machine can take seconds)."""
SYSTEM_DIRS = ("/usr", "/etc")
"""System directories mounted read-only; they exist on every Linux system."""


@functools.cache
def which(name: str) -> str | None:
    return shutil.which(name)


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
    path = name if os.path.isabs(name) else which(name)
    if path is None or not os.access(path, os.X_OK):
        raise ConfigError(f"python: {name!r} is not an executable interpreter", where="sandbox")
    return _probe_runtime(path)


_RUNTIME_PROBE = (
    "import json, sys; print(json.dumps({'executable': sys.executable, 'prefixes': "
    "[sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix], 'path': sys.path, "
    "'identity': {'version': sys.version, 'implementation': sys.implementation.name, "
    "'base_prefix': sys.base_prefix}}))"
)


def _run_probe(interpreter: str, program: str, what: str) -> Any:
    """The JSON ``program`` prints when ``interpreter`` runs it; ``what`` names the question
    in the one-line error."""
    # -I: ignore PYTHONPATH, the user site directory and the current directory, so we see the
    # installation itself and not whatever this process's environment adds.
    try:
        completed = subprocess.run(
            [interpreter, "-I", "-c", program],
            capture_output=True,
            text=True,
            timeout=RUNTIME_PROBE_TIMEOUT_S,
            check=True,
        )
        return json.loads(completed.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise ConfigError(
            f"python: {interpreter} did not {what} ({exc})", where="sandbox"
        ) from None


@functools.cache
def _ask(interpreter: str) -> dict[str, Any]:
    """What ``interpreter`` says about its installation (asked once per interpreter)."""
    report = _run_probe(interpreter, _RUNTIME_PROBE, "report its installation")
    if not isinstance(report, dict):
        raise ConfigError(f"python: {interpreter} did not report its installation", where="sandbox")
    return report


@functools.cache
def _probe_runtime(interpreter: str) -> PythonRuntime:
    report = _ask(interpreter)
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


_PLUGIN_PROBE = (
    "import importlib.metadata as m, json; print(json.dumps(sorted({(e.name, e.value, "
    "e.dist.name if e.dist is not None else '') for e in m.entry_points(group='pytest11')})))"
)


@functools.cache
def pytest_entry_points(interpreter: str) -> tuple[tuple[str, str, str], ...]:
    """The ``pytest11`` entry points installed in ``interpreter``'s environment, as
    ``(name, module, distribution)``: the plugins the project's env provides (asked once per
    interpreter, ``-I`` as the runtime probe)."""
    found = _run_probe(interpreter, _PLUGIN_PROBE, "list its pytest plugins")
    return tuple((str(a), str(b), str(c)) for a, b, c in found)


def python_identity(interpreter: str) -> dict[str, str]:
    """Which Python ``interpreter`` is (version, implementation, installation): what a venv
    built from it depends on."""
    return {str(k): str(v) for k, v in _ask(interpreter)["identity"].items()}


def _runtime_mounts(candidates: Iterable[str]) -> tuple[str, ...]:
    """Existing, safe candidates, without those already inside another one or inside /usr."""
    kept: list[Path] = []
    for candidate in sorted({os.path.normpath(c) for c in candidates if c}):
        path = Path(candidate)
        if not path.exists() or not _is_safe_runtime_path(path):
            continue
        if any(is_within(path, Path(system)) for system in SYSTEM_DIRS):
            continue
        if not any(is_within(path, k) for k in kept):
            kept.append(path)
    return tuple(str(k) for k in kept)


def _is_safe_runtime_path(path: Path) -> bool:
    """Not /, not the host home or above it, and not a directory that holds our own packages
    (an editable install of patchwarden adds the project directory to sys.path)."""
    home = Path.home().resolve()
    if is_within(home, path):
        return False
    ours = path / "sandbox" / Path(__file__).name
    return not (ours.exists() and ours.samefile(__file__))

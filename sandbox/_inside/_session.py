"""Inside the oracle: the pytest session of one run and the hand-over to the signer.

Part of the program concatenated by sandbox/_inside (``program``).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ._boot import (
        MODE,
        PARK_TIMEOUT_S,
        PYTEST_ARGS,
        PYTEST_WORLD,
        SEED,
        SPEC_ROOT,
        TARGETS,
        TREE,
        _report,
    )
    from ._guard import _watched
    from ._plugin import Reporter
    from ._start import _END_REQUEST, _PARK, CANARIES


def _quiet_signals():
    """No Python signal handler may run once the session is over: a handler receives the
    frame it interrupts, and the rows are being handed to the signer."""
    for number in signal.valid_signals():
        with contextlib.suppress(OSError, ValueError, TypeError):
            if callable(signal.getsignal(number)):
                signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())


def _test_path(node):
    """A target's file as a pytest argument: relative to the tree (the working directory),
    or absolute under the spec root kept apart from it."""
    path = node.split("::", 1)[0]
    return path if SPEC_ROOT == TREE else os.path.join(SPEC_ROOT, path)


ALREADY_IMPORTED = "Module already imported so cannot be rewritten"
"""pytest's warning about a module imported before its rewriting hook (its text's start)."""


def _project_ini(path):
    """The project's ini keys the run keeps (read from the parent on the host), as the
    ``[tool.pytest.ini_options]`` of a TOML file of the run's own: a JSON string or list of
    strings is a TOML one. ``addopts`` is empty: the options kept come as arguments."""
    lines = ["[tool.pytest.ini_options]", 'addopts = ""']
    for key, value in PYTEST_WORLD["ini"].items():
        lines.append(f"{json.dumps(key)} = {json.dumps(value)}")
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")


def _world_args(ini):
    """What every run gives pytest of the project's configuration, the scorer's and the
    agent's alike: its ini keys, the env's plugins (autoload is off: each by entry-point
    name), its addopts as kept."""
    _project_ini(ini)
    args = ["-c", ini, "-p", "no:cacheprovider", "-p", "_hypothesis_pytestplugin"]
    # The plugins were imported before the tree was importable (so it cannot shadow them):
    # pytest's assertion rewriting (agent runs) then says it cannot rewrite them, a warning
    # that a project's filterwarnings = error would turn into a usage error of every run.
    args += ["-W", f"ignore:{ALREADY_IMPORTED}:pytest.PytestAssertRewriteWarning"]
    for name in PYTEST_WORLD["plugins"]:
        args += ["-p", name]
    return args


def main():
    basetemp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "pw-basetemp")
    ini = os.path.join(os.environ.get("TMPDIR", "/tmp"), "pw-pytest.toml")
    rootdir = os.path.normpath(os.path.join(TREE, PYTEST_WORLD["rootdir"]))
    args = [
        *_world_args(ini),
        "--rootdir",
        rootdir,
        "--confcutdir",
        rootdir,
        *PYTEST_WORLD["addopts"],
        *PYTEST_ARGS,
    ]
    if MODE == "scorer":
        args = [
            *_world_args(ini),
            "--rootdir",
            SPEC_ROOT,
            "--confcutdir",
            SPEC_ROOT,
            *PYTEST_WORLD["addopts"],
            # Both keep pytest's Config in a module global while a test runs (pytestPDB,
            # _pytest.assertion.util): from there product code could reach every object of
            # the session, the runner's included. Witnesses do not depend on them.
            "-p",
            "no:debugging",
            "-p",
            "no:assertion",
            "--basetemp",
            basetemp,
            f"--hypothesis-seed={SEED}",
            # A module that fails to import leaves its properties not run (a fail); the
            # others, and the canaries, still run.
            "--continue-on-collection-errors",
            "-q",
            "--tb=short",
            "-o",
            "console_output_style=classic",
            "--no-header",
            *sorted({_test_path(node) for _, node in TARGETS}),
            # The canaries last: whatever product code changes during the session, they
            # are collected and run after it.
            *dict.fromkeys(path for _, path, _ in CANARIES),
        ]
    reporter = Reporter(CANARIES)
    reporter.watched = _watched()
    code = pytest.main(args, plugins=[reporter])
    if MODE == "agent":
        _report.close()
        sys.exit(int(code))
    _quiet_signals()
    payload = reporter.scorer_payload(int(code))  # noqa: F841 (the signer reads this frame)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os.write(_END_REQUEST, b"G")
    # The signer writes the rows and ends the process with the run's status; this frame
    # must stay the top of the main thread meanwhile (the signer checks it).
    select.select([_PARK], [], [], PARK_TIMEOUT_S)
    os._exit(1)  # the signer never came: no end marker, a wrong status, the run is forged

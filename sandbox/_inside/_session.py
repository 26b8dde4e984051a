"""Inside the oracle: the pytest session of one run and the hand-over to the signer.

Part of the program concatenated by sandbox/_inside (``program``).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ._boot import MODE, PARK_TIMEOUT_S, PYTEST_ARGS, SEED, SPEC_ROOT, TARGETS, TREE, _report
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


def main():
    basetemp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "pw-basetemp")
    ini = os.path.join(os.environ.get("TMPDIR", "/tmp"), "pw-pytest.ini")
    args = list(PYTEST_ARGS)
    if MODE == "scorer":
        with open(ini, "w") as handle:
            handle.write("[pytest]\naddopts =\nxfail_strict = false\n")
        args = [
            "-c",
            ini,
            "--rootdir",
            SPEC_ROOT,
            "--confcutdir",
            SPEC_ROOT,
            "-p",
            "no:cacheprovider",
            # Both keep pytest's Config in a module global while a test runs (pytestPDB,
            # _pytest.assertion.util): from there product code could reach every object of
            # the session, the runner's included. Witnesses do not depend on them.
            "-p",
            "no:debugging",
            "-p",
            "no:assertion",
            "-p",
            "_hypothesis_pytestplugin",
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

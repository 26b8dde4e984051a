"""Pause points for the fault-injection suite (tests/faults/): test-only, and unreachable from
the agent zone.

With ``PATCHWARDEN_TEST_PAUSE_DIR=<dir>`` in the scorer's own environment, the scorer looks
for ``<dir>/pause-at-<phase>`` when it reaches a phase of a score; if the test created that
file, the scorer creates ``<dir>/<phase>.<pid>`` and sleeps, so the test can kill it there
for real (``kill -9``) rather than guess with timers. Phases: ``clone`` (the scratch clone is
up to date, no worktree yet) and ``bundle`` (the runs are over and part of the evidence is
in the staging directory).

Only the operator who starts ``serve`` or ``score`` sets the scorer's environment: the agent
cannot set a variable there, every sandboxed process starts from a cleared environment, and
the directory is not mounted in any sandbox. Unset (always, outside the suite), a pause
point costs one dictionary lookup. See docs/reliability.md.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

PAUSE_DIR_ENV = "PATCHWARDEN_TEST_PAUSE_DIR"
PAUSE_S = 120.0
"""Long enough for any test to find the mark and kill; short enough that a forgotten file
costs two minutes, not a hung scorer (the request deadline stops it anyway)."""


def pause_point(phase: str) -> None:
    """Pause here if the test suite asked to (see the module docstring)."""
    directory = os.environ.get(PAUSE_DIR_ENV)
    if not directory or not os.path.exists(os.path.join(directory, f"pause-at-{phase}")):
        return
    Path(directory, f"{phase}.{os.getpid()}").write_text(phase, encoding="utf-8")
    time.sleep(PAUSE_S)

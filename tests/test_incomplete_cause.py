"""Why a run is incomplete, as ``task from-fix`` and ``contract check`` say it: the limit it
ran into, the signal that ended it, or why its report is not trusted (scorer/_contract_check.py
``incomplete_cause``). Pure: the run's record in, the line out."""

from __future__ import annotations

import dataclasses
import signal

import pytest

from patchwarden.sandbox import ProcessResult, PropertyRun
from patchwarden.scorer import incomplete_cause

PROCESS = ProcessResult(
    argv=("python", "-"),
    exit_code=0,
    signal=None,
    stdout="",
    stderr="",
    truncated=False,
    timed_out=False,
    idle_timed_out=False,
    cancelled=False,
    duration_s=1.0,
    backend="bubblewrap",
)
RUN = PropertyRun(
    seed=11, records=[], missing=[], complete=False, shadowed=[], problems=[], process=PROCESS
)


@pytest.mark.parametrize(
    ("process", "run", "cause"),
    [
        (
            {"exit_code": None, "signal": signal.SIGKILL, "timed_out": True},
            {},
            "it ran past its wall time (run_limits.wall_time_s)",
        ),
        (
            {"exit_code": None, "signal": signal.SIGKILL, "idle_timed_out": True},
            {},
            "it printed nothing for run_limits.idle_time_s",
        ),
        ({"exit_code": 128 + signal.SIGXCPU}, {}, "it used its CPU time (run_limits.cpu_s)"),
        ({"exit_code": 128 + signal.SIGSEGV}, {}, "it ended by signal SIGSEGV"),
        (
            {"exit_code": None, "signal": signal.SIGKILL, "timed_out": True},
            {"forged": ["no authenticated end marker on the channel"]},
            "it ran past its wall time (run_limits.wall_time_s)",
        ),
        (
            {},
            {"forged": ["no authenticated end marker on the channel"]},
            "its report is not trusted: no authenticated end marker on the channel",
        ),
        ({}, {"missing": ["p1", "p2"]}, "2 properties never reported"),
        ({}, {"missing": ["p1"]}, "1 property never reported"),
        ({}, {}, ""),
    ],
)
def test_an_incomplete_run_names_its_cause(
    process: dict[str, object], run: dict[str, object], cause: str
) -> None:
    made = dataclasses.replace(RUN, process=dataclasses.replace(PROCESS, **process), **run)
    assert incomplete_cause(made) == cause

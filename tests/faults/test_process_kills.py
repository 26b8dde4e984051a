"""kill -9 of a sandboxed run (under ``patchwarden score``) and of the server itself during a
submission."""

from __future__ import annotations

import contextlib
import json
import subprocess
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal

from . import tally
from .harness import (
    ONE_SEED,
    ONE_SEED_FIX,
    Dirs,
    accepts_in_log,
    alive,
    argv0,
    build_repo,
    cmdline,
    descendants,
    kill9,
    pids_with,
    score_argv,
    start_stdio,
    verdict_problems,
    wait_for,
)

pytestmark = pytest.mark.bwrap


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> Dirs:
    base = tmp_path_factory.mktemp("kills")
    dirs = Dirs.under(base, build_repo(base / "orders"))
    dirs.write_config(scorer="  restart_backoff_s: 0.2\n")
    return dirs


def test_kill_9_of_a_sandboxed_run_is_a_reject_not_an_accept(dirs: Dirs) -> None:
    """The fix is accepted when nothing goes wrong; with one of its runs killed it must not
    be: the run's rows are missing (missing_seed), and the evidence says what happened."""
    with tally.injected("kill -9 of a sandboxed run") as fault:
        score = subprocess.Popen(
            score_argv(dirs, ONE_SEED, ONE_SEED_FIX, "--json"),
            env=dirs.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        with score:
            # The reporter process inside the sandbox (its command line shows on the host).
            run = wait_for(
                lambda: [p for p in descendants(score.pid) if b"--report-fd" in cmdline(p)],
                120,
                "a sandboxed run",
            )[0]
            kill9(run)
            out, err = score.communicate(timeout=300)
        fault.accepts = int(score.returncode == 0)
        assert score.returncode == 1, out + err
        decision = json.loads(out)
        assert decision["decision"] == "reject"
        assert {r["reason"] for r in decision["results"]} == {"missing_seed"}
        bundle = dirs.logs / "verdicts" / decision["verdict_id"]
        runs = [json.loads(p.read_text()) for p in (bundle / "runs").glob("*.json")]
        killed = [r for r in runs if r["exit_code"] == 128 + 9 or not r["complete"]]
        assert len(killed) == 1 and killed[0]["complete"] is False, runs
        problems = verdict_problems(dirs.logs, [decision["verdict_id"]])
        fault.lost = len(problems)
        assert problems == []


def test_kill_9_of_the_server_during_a_submission(
    portal: BlockingPortal, dirs: Dirs, tmp_path: Path
) -> None:
    """The scorer and its runs die with the server; nothing half-written is published; a new
    server on the same state and log directories serves and judges."""
    with tally.injected("kill -9 of the server during a submission") as fault:
        indexed_before = _indexed(dirs)
        served, stop = start_stdio(portal, dirs)
        try:
            served.write_fix()
            served.touch(1)
            pending = served.call_soon("submit_patch", {"message": "the server dies"})
            scorer = served.scorer_pid()
            runs = wait_for(
                lambda: [p for p in descendants(scorer) if b"bwrap" in argv0(p)],
                60,
                "sandboxed runs",
            )
            doomed = [served.server_pid, scorer, *descendants(scorer)]
            kill9(served.server_pid)
            with contextlib.suppress(Exception):  # the client loses its server: any error
                result = pending.result(timeout=60)
                assert result.is_error
            wait_for(lambda: not any(alive(p) for p in doomed), 20, "the scorer and its runs")
            assert runs
        finally:
            with contextlib.suppress(Exception):
                stop()
        # Whatever the killed scorer had written is either whole and indexed, or unpublished.
        problems = verdict_problems(dirs.logs, [])
        new = _indexed(dirs) - indexed_before
        fault.accepts = len(set(accepts_in_log(dirs.logs)) & new)
        assert not new  # killed during its runs: it published nothing
        served, stop = start_stdio(portal, dirs)
        try:
            served.write_fix()
            served.touch(2)
            summary = served.ok("submit_patch", {"message": "a new server"})
            assert summary["decision"] == "accept", summary
            problems += verdict_problems(dirs.logs, [str(summary["verdict_id"])])
        finally:
            stop()
        fault.lost = len(problems)
        assert problems == []
        assert not pids_with("patchwarden.scorer", str(dirs.config))


def _indexed(dirs: Dirs) -> set[str]:
    path = dirs.logs / "verdicts.jsonl"
    if not path.exists():
        return set()
    return {json.loads(line)["verdict_id"] for line in path.read_text().splitlines()}

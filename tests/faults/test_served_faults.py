"""Faults injected into one served session (stdio), in order: the scorer killed in each phase
and hung; as root, the log and the scorer state directory full and read-only; a torn last
index line; stale git locks in the scorer's clone.

The session serves the orders example with one seed (a score is two sandboxed runs) and the
example's fix written into the worktree, so every submission that gets a verdict is an
``accept``: a fault must turn that into a clear tool error that is not counted, never into
another verdict, and the next submission must get its ``accept`` again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import git
import pytest
from anyio.from_thread import BlockingPortal

from . import tally
from .harness import (
    ONE_SEED,
    ONE_SEED_FIX,
    Dirs,
    ReadOnly,
    Served,
    alive,
    argv0,
    build_repo,
    descendants,
    fill,
    kill9,
    mount_tmpfs,
    patchwarden,
    score_argv,
    start_stdio,
    text_of,
    unmount,
    verdict_problems,
    wait_for,
)

pytestmark = pytest.mark.bwrap
NO_DISKS: list[str] = []
"""Why the session has no small disks of its own (the disk faults are then skipped)."""

REQUEST_TIMEOUT_S = 20
"""The session's request deadline: far above a one-seed score, short enough to wait for."""


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dirs]:
    base = tmp_path_factory.mktemp("faults")
    dirs = Dirs.under(base, build_repo(base / "orders"))
    mounted: list[Path] = []
    if os.geteuid() != 0:
        NO_DISKS.append("mounting a small or read-only disk needs root")
    else:  # small disks of their own, to fill and make read-only
        try:
            for path in (dirs.logs, dirs.scorer_state, dirs.xdg):
                mount_tmpfs(path, 64)
                mounted.append(path)
        except subprocess.CalledProcessError as exc:
            NO_DISKS.append(f"this machine refuses a tmpfs mount ({exc.stderr or exc})")
    dirs.write_config(
        scorer=f"  request_timeout_s: {REQUEST_TIMEOUT_S}\n  max_restarts: 20\n"
        "  restart_backoff_s: 0.2\n",
        agent="  max_submissions: 40\n  uncounted_faults: 40\n",
    )
    try:
        yield dirs
    finally:
        for path in mounted:
            unmount(path)


@pytest.fixture
def disks(dirs: Dirs) -> Dirs:
    """The session's directories, each on a small disk of its own."""
    if NO_DISKS:
        pytest.skip(NO_DISKS[0])
    return dirs


@pytest.fixture(scope="module")
def served(portal: BlockingPortal, dirs: Dirs) -> Iterator[Served]:
    served, stop = start_stdio(portal, dirs)
    served.write_fix()
    try:
        yield served
    finally:
        stop()


DELIVERED: list[str] = []
"""Every verdict id the session handed to the agent."""
_counter = iter(range(1, 10_000))


def submit_ok(served: Served) -> dict[str, object]:
    """A submission that must get its verdict: the fix, accepted."""
    served.touch(next(_counter))
    summary = served.ok("submit_patch", {"message": "the fix"})
    DELIVERED.append(str(summary["verdict_id"]))
    assert summary["decision"] == "accept", summary
    return summary


def check_no_verdict(text: str) -> None:
    assert "no verdict" in text and "was not counted" in text, text


def check_log(dirs: Dirs, fault: tally.Fault) -> None:
    problems = verdict_problems(dirs.logs, DELIVERED)
    fault.lost = len(problems)
    fault.notes += problems
    assert problems == []


def test_the_session_judges_the_fix(served: Served) -> None:
    submit_ok(served)  # the baseline every fault below is measured against


@pytest.mark.parametrize("phase", ["clone", "runs", "bundle"])
def test_kill_9_of_the_scorer_in_each_phase(served: Served, dirs: Dirs, phase: str) -> None:
    with tally.injected(f"kill -9 of the scorer ({phase})") as fault:
        left = served.submissions_left()
        restarts = len(dirs.events("scorer_restart"))
        served.touch(next(_counter))
        dirs.pause_at(phase if phase != "runs" else None)
        pending = served.call_soon("submit_patch", {"message": f"killed in {phase}"})
        if phase == "runs":
            scorer = served.scorer_pid()
            wait_for(
                lambda: [p for p in descendants(scorer) if b"bwrap" in argv0(p)],
                60,
                "sandboxed runs of the scorer",
            )
        else:
            scorer = wait_for(lambda: dirs.paused(phase), 60, f"the scorer at {phase}")
        victims = descendants(scorer)
        kill9(scorer)
        result = pending.result(timeout=120)
        dirs.pause_at(None)
        fault.accepts = int(
            not result.is_error and result.structured_content["decision"] == "accept"
        )
        assert result.is_error, text_of(result)
        check_no_verdict(text_of(result))
        assert "killed by signal 9" in text_of(result)
        assert served.submissions_left() == left
        wait_for(lambda: len(dirs.events("scorer_restart")) > restarts, 60, "the restart")
        wait_for(lambda: not any(alive(p) for p in victims), 15, "the killed scorer's runs")
        exit_event = dirs.events("scorer_exit")[-1]
        assert exit_event["pid"] == scorer and exit_event["exit_code"] == -signal.SIGKILL
        submit_ok(served)
        check_log(dirs, fault)


def test_a_hung_scorer_is_stopped_at_the_deadline_and_replaced(served: Served, dirs: Dirs) -> None:
    with tally.injected("hung scorer (SIGSTOP)") as fault:
        left = served.submissions_left()
        served.touch(next(_counter))
        dirs.pause_at("clone")
        pending = served.call_soon("submit_patch", {"message": "hung"})
        scorer = wait_for(lambda: dirs.paused("clone"), 60, "the scorer at clone")
        os.kill(scorer, signal.SIGSTOP)
        result = pending.result(timeout=REQUEST_TIMEOUT_S + 60)
        dirs.pause_at(None)
        assert result.is_error
        check_no_verdict(text_of(result))
        assert f"did not answer within {REQUEST_TIMEOUT_S} s" in text_of(result)
        assert served.submissions_left() == left
        hung = dirs.events("scorer_hung")
        assert hung and hung[-1]["pid"] == scorer
        wait_for(lambda: not alive(scorer), 15, "the hung scorer to be gone")
        submit_ok(served)
        check_log(dirs, fault)


# -- disks ------------------------------------------------------------------------------


def _stderr_since(dirs: Dirs, offset: int) -> str:
    return dirs.stderr.read_text(errors="replace")[offset:]


def _disk_fault(served: Served, dirs: Dirs, name: str, directory: Path, mode: str) -> None:
    with tally.injected(f"{mode} disk for the {name}") as fault:
        left = served.submissions_left()
        offset = len(dirs.stderr.read_text(errors="replace"))
        served.touch(next(_counter))
        undo: ReadOnly | Path = ReadOnly(directory) if mode == "read-only" else fill(directory)
        try:
            text = served.error("submit_patch", {"message": f"{mode} {name}"})
            assert served.ok("get_contract")["base_commit"]  # the other tools go on
        finally:
            if isinstance(undo, ReadOnly):
                undo.undo()
            else:
                undo.unlink()
        check_no_verdict(text)
        errno_text = "Read-only file system" if mode == "read-only" else "No space left on device"
        assert errno_text in text, text
        assert str(directory) not in text  # the agent is told no host path of the scorer
        assert served.submissions_left() == left
        # The operator's line names the path.
        lines = [line for line in _stderr_since(dirs, offset).splitlines() if errno_text in line]
        assert any(str(directory) in line for line in lines), lines
        assert not any("patchwarden: error: patchwarden:" in line for line in lines)
        submit_ok(served)
        check_log(dirs, fault)


@pytest.mark.parametrize("mode", ["full", "read-only"])
def test_the_log_directory_full_or_read_only(served: Served, disks: Dirs, mode: str) -> None:
    _disk_fault(served, disks, "log directory", disks.logs, mode)


@pytest.mark.parametrize("mode", ["full", "read-only"])
def test_the_scorer_state_directory_full_or_read_only(
    served: Served, disks: Dirs, mode: str
) -> None:
    _disk_fault(served, disks, "scorer state directory", disks.scorer_state, mode)


def test_the_server_state_directory_full(served: Served, disks: Dirs) -> None:
    dirs = disks
    with tally.injected("full disk for the server state directory") as fault:
        left = served.submissions_left()
        served.touch(next(_counter))
        filler = fill(dirs.xdg)
        try:
            text = served.error("submit_patch", {"message": "server state full"})
        finally:
            filler.unlink()
        # git's words for ENOSPC, and the file it could not write
        assert "Out of diskspace" in text or "No space left on device" in text, text
        assert str(dirs.server_state) in text
        assert served.submissions_left() == left  # nothing was committed, nothing counted
        submit_ok(served)
        check_log(dirs, fault)


@pytest.mark.parametrize("where", ["log directory", "state directory"])
def test_score_on_a_full_or_read_only_disk_is_one_line_naming_the_path(
    disks: Dirs, where: str
) -> None:
    """The command line: exit 2 and one line naming the path, no doubled prefix."""
    dirs = disks
    with tally.injected(f"patchwarden score, {where} unusable") as fault:
        directory = dirs.logs if where == "log directory" else dirs.scorer_state
        undo: ReadOnly | Path = fill(directory) if where == "log directory" else ReadOnly(directory)
        try:
            done = subprocess.run(
                score_argv(dirs, ONE_SEED, ONE_SEED_FIX),
                env=dirs.env(),
                capture_output=True,
                text=True,
                timeout=300,
            )
        finally:
            if isinstance(undo, ReadOnly):
                undo.undo()
            else:
                undo.unlink()
        fault.accepts = int(done.returncode == 0)
        assert done.returncode == 2, done.stdout + done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith("patchwarden: error: ")
        assert not lines[0].startswith("patchwarden: error: patchwarden:")
        assert str(directory) in lines[0], lines[0]
        check_log(dirs, fault)


# -- files ------------------------------------------------------------------------------


def test_a_torn_last_index_line_is_skipped_and_repaired(served: Served, dirs: Dirs) -> None:
    with tally.injected("torn last line in verdicts.jsonl") as fault:
        index = dirs.logs / "verdicts.jsonl"
        before = index.read_text().splitlines()
        with index.open("a") as handle:
            handle.write('{"verdict_id": "20260101T000000Z-0123456789-abcd", "deci')
        torn_line = len(before) + 1
        listed = subprocess.run(
            patchwarden("verdicts", "list", "--json", "--log-dir", str(dirs.logs)),
            env=dirs.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert listed.returncode == 0, listed.stderr
        assert listed.stderr == (
            f"patchwarden: warning: {index}:{torn_line}: skipped a torn last line "
            "(an interrupted write)\n"
        )
        assert len(json.loads(listed.stdout)) == len(before)
        offset = len(dirs.stderr.read_text(errors="replace"))
        submit_ok(served)
        assert f"{index}:{torn_line}: removed a torn last line" in _stderr_since(dirs, offset)
        after = index.read_text().splitlines()
        assert after[:-1] == before and len(after) == len(before) + 1
        check_log(dirs, fault)


def test_stale_git_locks_in_the_scorers_clone_are_cleared(served: Served, dirs: Dirs) -> None:
    with tally.injected("stale git locks in the scorer's clone") as fault:
        (clone,) = [
            p for p in (dirs.scorer_state / "clones").iterdir() if p.is_dir() and p.name[0] != "."
        ]
        session = dirs.audit()[0]["session"]
        made = len(git.Repo(dirs.repo).git.for_each_ref(f"refs/patchwarden/{session}").split("\n"))
        # What a git killed in the middle of a fetch leaves: the lock of the ref it was
        # writing (the next submission's), and those of files it was rewriting.
        locks = [
            clone / "refs" / "remotes" / "source" / "patchwarden" / session / f"{made + 1}.lock",
            clone / "packed-refs.lock",
            clone / "config.lock",
        ]
        for lock in locks:
            lock.parent.mkdir(parents=True, exist_ok=True)
            lock.write_text("")
        offset = len(dirs.stderr.read_text(errors="replace"))
        submit_ok(served)
        said = _stderr_since(dirs, offset)
        for lock in locks:
            assert not lock.exists()
            assert f"{lock}: removed a stale git lock" in said, said
        check_log(dirs, fault)

"""The limits of supervision: crashing the scorer on purpose buys a few uncounted tries, not
unlimited ones, and a scorer that keeps failing stays down while the session goes on; and
the HTTP transport recovers from a killed scorer as stdio does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from anyio.from_thread import BlockingPortal

from . import tally
from .harness import (
    Dirs,
    Served,
    build_repo,
    free_port,
    kill9,
    start_http,
    start_stdio,
    text_of,
    verdict_problems,
    wait_for,
)

pytestmark = pytest.mark.bwrap


def kill_at_clone(served: Served, n: int) -> str:
    """Submit, kill -9 the scorer when it has its clone, return the tool error."""
    dirs = served.dirs
    served.touch(n)
    dirs.pause_at("clone")
    pending = served.call_soon("submit_patch", {"message": f"crash {n}"})
    kill9(wait_for(lambda: dirs.paused("clone"), 60, "the scorer at clone"))
    result = pending.result(timeout=120)
    dirs.pause_at(None)
    assert result.is_error, text_of(result)
    return text_of(result)


@pytest.fixture(scope="module")
def strict(portal: BlockingPortal, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("strict")
    dirs = Dirs.under(base, build_repo(base / "orders"))
    dirs.write_config(
        scorer="  max_restarts: 2\n  restart_window_s: 600\n  restart_backoff_s: 0.2\n",
        agent="  max_submissions: 5\n  uncounted_faults: 1\n",
    )
    served, stop = start_stdio(portal, dirs)
    try:
        yield served
    finally:
        stop()


def test_crashing_the_scorer_on_purpose_does_not_buy_unlimited_submissions(
    strict: Served,
) -> None:
    with tally.injected("repeated scorer crashes (uncounted faults, restart limit)") as fault:
        assert strict.submissions_left() == 5
        first = kill_at_clone(strict, 1)
        assert "was not counted (5 submissions left)" in first, first
        second = kill_at_clone(strict, 2)
        assert "counts against the limit" in second and "(4 submissions left)" in second
        third = kill_at_clone(strict, 3)
        assert "(3 submissions left)" in third, third
        # Two restarts within the window were allowed; the third exit leaves it down.
        dirs = strict.dirs
        wait_for(lambda: dirs.events("scorer_down"), 30, "the scorer to be given up")
        assert [e["event"] for e in dirs.audit() if "event" in e] == [
            "scorer_exit",
            "scorer_restart",
            "scorer_exit",
            "scorer_restart",
            "scorer_exit",
            "scorer_down",
        ]
        strict.touch(4)
        down = strict.error("submit_patch", {"message": "after the limit"})
        assert "stays down" in down and "the operator must look at it" in down, down
        # The session goes on where it can: every tool that needs no scorer still works.
        assert strict.ok("read_file", {"path": "notes/change.txt"})["content"] == "change 4\n"
        assert strict.ok("get_contract")["submissions_left"] == 2
        problems = verdict_problems(dirs.logs, [])
        fault.lost = len(problems)
        assert problems == []


def test_the_http_transport_recovers_from_a_killed_scorer(
    portal: BlockingPortal, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with tally.injected("kill -9 of the scorer under the HTTP transport") as fault:
        base = tmp_path_factory.mktemp("http")
        dirs = Dirs.under(base, build_repo(base / "orders"))
        dirs.write_config(scorer="  restart_backoff_s: 0.2\n", http_port=free_port())
        served, stop = start_http(portal, dirs)
        try:
            served.write_fix()
            left = served.submissions_left()
            text = kill_at_clone(served, 1)
            assert "no verdict" in text and "was not counted" in text, text
            assert served.submissions_left() == left
            wait_for(lambda: dirs.events("scorer_restart"), 60, "the restart")
            served.touch(2)
            summary = served.ok("submit_patch", {"message": "after the restart"})
            assert summary["decision"] == "accept", summary
            problems = verdict_problems(dirs.logs, [str(summary["verdict_id"])])
            fault.lost = len(problems)
            assert problems == []
        finally:
            stop()

"""The supervisor's rules on small stand-in scorer programs (real child processes, real
signals; the real scorer under real faults is tests/faults/): start-up failures, the
deadline, backoff and the restart limit, and errors that come out as themselves."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from patchwarden.sandbox import SandboxConfig
from patchwarden.scorer import ScorerConfig
from patchwarden.scorer.protocol import Ping, Pong, Start
from patchwarden.server import ScorerUnavailable
from patchwarden.server._scorer_client import UNNUMBERED
from patchwarden.server._supervisor import (
    RestartPolicy,
    ScorerFault,
    request_deadline,
    supervise_scorer,
)

START = Start(repo=".", contract="c", scorer=ScorerConfig(), sandbox=SandboxConfig())
READY = "import sys, json; sys.stdin.readline(); print(json.dumps({'answer': 'ready'}), flush=True)"
ANSWERS = READY + (
    "\nfor line in sys.stdin:\n"
    "    print(json.dumps({'answer': 'pong', 'id': json.loads(line)['id']}), flush=True)\n"
)
SILENT = READY + "\nsys.stdin.read()\n"
WAIT_S = 30.0
"""Far above what any of these takes (a second); only a broken supervisor waits this long."""
DIES = READY + "\nimport os; os._exit(3)\n"


def policy(**changes: Any) -> RestartPolicy:
    values = {"request_timeout_s": 30.0, "max_restarts": 3, "window_s": 60.0, "backoff_s": 0.05}
    return RestartPolicy(**(values | changes))


class Events(list[tuple[str, dict[str, Any]]]):
    """The supervisor's event sink, and a way to wait for an event (inside the loop)."""

    _wake: anyio.Event | None = None

    def __call__(self, event: str, message: str, fields: Mapping[str, Any]) -> None:
        self.append((event, {"message": message, **fields}))
        if self._wake is not None:
            self._wake.set()

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self]

    async def until(self, kind: str) -> None:
        with anyio.fail_after(WAIT_S):
            while kind not in self.kinds():
                self._wake = anyio.Event()
                await self._wake.wait()


def test_a_scorer_that_never_says_ready_is_one_error() -> None:
    async def scenario() -> None:
        async with supervise_scorer(
            [sys.executable, "-c", "print('hi')"], START, policy(), Events()
        ):
            raise AssertionError("started")

    with pytest.raises(ScorerUnavailable, match="the scorer did not start"):
        anyio.run(scenario)


def test_an_error_of_the_session_comes_out_as_itself() -> None:
    async def scenario() -> None:
        async with supervise_scorer([sys.executable, "-c", ANSWERS], START, policy(), Events()):
            raise ValueError("the app failed")

    with pytest.raises(ValueError, match="the app failed"):
        anyio.run(scenario)


def test_a_killed_scorer_fails_its_request_and_is_replaced() -> None:
    events = Events()

    async def scenario() -> None:
        argv = [sys.executable, "-c", SILENT]
        async with supervise_scorer(argv, START, policy(), events) as scorer:
            first = scorer.pid
            assert first is not None
            async with anyio.create_task_group() as tg:

                async def kill_soon() -> None:
                    await anyio.sleep(0.3)
                    os.kill(first, signal.SIGKILL)

                tg.start_soon(kill_soon)
                with pytest.raises(ScorerFault, match="was killed by signal 9"):
                    await scorer.request(Ping(id=UNNUMBERED))
            await events.until("scorer_restart")
            assert scorer.pid not in (None, first)

    anyio.run(scenario)
    assert events.kinds()[:2] == ["scorer_exit", "scorer_restart"]
    assert events[0][1]["exit_code"] == -signal.SIGKILL


def test_a_scorer_past_its_deadline_is_killed_and_replaced() -> None:
    events = Events()

    async def scenario() -> None:
        argv = [sys.executable, "-c", SILENT]
        async with supervise_scorer(argv, START, policy(request_timeout_s=0.5), events) as scorer:
            with pytest.raises(ScorerFault, match=r"did not answer within 0\.5 s"):
                await scorer.request(Ping(id=UNNUMBERED))
            await events.until("scorer_restart")

    anyio.run(scenario)
    assert events.kinds()[:3] == ["scorer_hung", "scorer_exit", "scorer_restart"]


def test_restarts_back_off_and_stop_at_the_limit() -> None:
    events = Events()

    async def scenario() -> None:
        argv = [sys.executable, "-c", DIES]
        async with supervise_scorer(argv, START, policy(max_restarts=3), events) as scorer:
            await events.until("scorer_down")
            with pytest.raises(ScorerFault, match="stays down"):
                await scorer.request(Ping(id=UNNUMBERED))

    anyio.run(scenario)
    assert events.kinds() == ["scorer_exit", "scorer_restart"] * 3 + ["scorer_exit", "scorer_down"]
    delays = [fields["delay_s"] for kind, fields in events if kind == "scorer_restart"]
    assert delays == [0.05, 0.1, 0.2]
    assert {fields["exit_code"] for kind, fields in events if kind == "scorer_exit"} == {3}


def test_a_healthy_scorer_answers() -> None:
    async def scenario() -> None:
        argv = [sys.executable, "-c", ANSWERS]
        async with supervise_scorer(argv, START, policy(), Events()) as scorer:
            assert await scorer.request(Ping(id=UNNUMBERED)) == Pong(id=1)

    anyio.run(scenario)


def test_the_derived_deadline_is_above_every_run_within_its_limits() -> None:
    config = ScorerConfig(jobs=2)
    # 3 seeds and the extra one x 2 trees on 2 workers: 4 waves of at most 600 s + 15 s,
    # plus 300 s.
    assert request_deadline(config, SandboxConfig(), seeds=3) == 300 + 4 * 615
    no_extra = config.model_copy(update={"extra_seeds": 0})
    assert request_deadline(no_extra, SandboxConfig(), seeds=3) == 300 + 3 * 615
    assert (
        request_deadline(config.model_copy(update={"request_timeout_s": 42.0}), SandboxConfig(), 3)
        == 42
    )
    # A freeze proposal (four runs of the sandbox's limit) when it is the longer.
    assert request_deadline(ScorerConfig(jobs=64), SandboxConfig(), seeds=1) == 300 + 4 * 315

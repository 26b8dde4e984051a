"""The hosted server's scorer queue: slots are shared round-robin between workspaces, and a
cancelled waiter neither keeps a slot nor loses one (server/_scorer_pool.py). In memory."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from patchwarden.server._scorer_pool import FairQueue, default_slots


async def _order(slots: int, requests: list[str]) -> list[str]:
    """Who got a slot, in order, when ``requests`` queue up (in that order) behind a holder
    of every slot."""
    queue = FairQueue(slots)
    served: list[str] = []
    release = anyio.Event()

    async def holder(started: anyio.Event) -> None:
        async with queue.turn("holder"):
            started.set()
            await release.wait()

    async def request(workspace: str, queued: anyio.Event) -> None:
        queued.set()
        async with queue.turn(workspace):
            served.append(workspace)
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        for _ in range(slots):
            started = anyio.Event()
            tg.start_soon(holder, started)
            await started.wait()
        for workspace in requests:
            queued = anyio.Event()
            tg.start_soon(request, workspace, queued)
            await queued.wait()
            await anyio.lowlevel.checkpoint()  # it is in the queue before the next one comes
        assert queue.waiting == len(requests)
        release.set()
    assert queue.busy == 0 and queue.waiting == 0
    return served


def test_slots_go_round_the_workspaces_that_wait() -> None:
    served = anyio.run(_order, 1, ["a", "a", "a", "a", "b", "c", "b"])
    assert served == ["a", "b", "c", "a", "b", "a", "a"]


def test_more_slots_serve_everyone_and_all_are_given_back() -> None:
    served = anyio.run(_order, 2, ["a", "a", "b"])
    assert sorted(served) == ["a", "a", "b"]


def test_a_cancelled_waiter_leaves_the_queue_and_the_slot_goes_on() -> None:
    async def scenario() -> list[str]:
        queue = FairQueue(1)
        served: list[str] = []
        release = anyio.Event()

        async def holder() -> None:
            async with queue.turn("holder"):
                await release.wait()

        async def request(workspace: str) -> None:
            async with queue.turn(workspace):
                served.append(workspace)

        async with anyio.create_task_group() as tg:
            tg.start_soon(holder)
            await anyio.sleep(0.01)
            with anyio.move_on_after(0.05):
                await request("impatient")  # waits, then is cancelled
            assert queue.waiting == 0
            tg.start_soon(request, "b")
            await anyio.sleep(0.01)
            release.set()
        assert queue.busy == 0
        return served

    assert anyio.run(scenario) == ["b"]


@pytest.mark.parametrize(
    ("cores", "workers", "slots"), [(2, 2, 1), (8, 2, 4), (3, 2, 2), (1, 4, 1)]
)
def test_default_slots_keep_every_core_busy(
    monkeypatch: pytest.MonkeyPatch, cores: int, workers: int, slots: int
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: cores)
    assert default_slots(workers) == slots

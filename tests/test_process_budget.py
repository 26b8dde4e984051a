"""One process budget per run (sandbox/_uids.py): a fork bomb in one run never fails another.

Real bubblewrap, real forks. The uid range is taken from the top of the uid space, where no
user of a test machine lives; the leases are machine-wide, as in production.
"""

from __future__ import annotations

import os
import textwrap
import threading
import time
from pathlib import Path

import pytest

from patchwarden.sandbox import LaunchSpec, Limits, ProcessResult, SandboxConfig, launch
from patchwarden.sandbox._uids import lease_uid

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.skipif(os.geteuid() != 0, reason="a uid per run needs root"),
]

LIMITS = Limits(wall_time_s=30, idle_time_s=30, memory_mb=512, processes=48)
UID_RANGE = (3_999_000, 3_999_007)
SHARED = SandboxConfig(limits=LIMITS)
PER_RUN = SandboxConfig(limits=LIMITS, uid_range=UID_RANGE)

BOMB = """
    import os, sys
    said = False
    while True:
        try:
            os.fork()
        except OSError:
            if not said:
                said = True
                sys.stdout.write("budget exhausted\\n")
                sys.stdout.flush()
    """
HONEST = """
    import os, time
    children = []
    for _ in range(20):
        pid = os.fork()
        if pid == 0:
            time.sleep(0.2)
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    print("forked", len(children), "as", os.getuid(), flush=True)
    """


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    tmp_path.chmod(0o755)
    return tmp_path


def _python(code: str, tree: Path) -> list[str]:
    return ["python3", "-c", textwrap.dedent(code)]


def honest_run_beside_a_fork_bomb(config: SandboxConfig, tree: Path) -> ProcessResult:
    """Start a fork bomb, wait until it has used up its budget, then run an honest program
    that needs 20 processes; return the honest run's result (the bomb is killed at 4 s)."""
    exhausted = threading.Event()
    bomb_result: list[ProcessResult] = []

    def watch(chunk: bytes) -> None:
        if b"budget exhausted" in chunk:
            exhausted.set()

    def bomb() -> None:
        spec = LaunchSpec(
            argv=_python(BOMB, tree),
            tree=tree,
            limits=LIMITS.model_copy(update={"wall_time_s": 4.0}),
        )
        bomb_result.append(launch(spec, config, on_output=watch))

    thread = threading.Thread(target=bomb)
    thread.start()
    try:
        assert exhausted.wait(20), "the fork bomb never reached its limit"
        return launch(LaunchSpec(argv=_python(HONEST, tree), tree=tree), config)
    finally:
        thread.join()
        assert bomb_result and bomb_result[0].timed_out


def test_a_fork_bomb_in_one_run_never_fails_another(tree: Path) -> None:
    honest = honest_run_beside_a_fork_bomb(PER_RUN, tree)
    assert honest.exit_code == 0, honest.stderr
    words = honest.stdout.split()
    assert words[:3] == ["forked", "20", "as"]
    assert UID_RANGE[0] <= int(words[3]) <= UID_RANGE[1]


def test_with_one_shared_uid_the_bomb_starves_the_honest_run(tree: Path) -> None:
    """The control: what the uid range prevents (so the test above can fail)."""
    honest = honest_run_beside_a_fork_bomb(SHARED, tree)
    assert honest.exit_code != 0
    assert "forked" not in honest.stdout
    assert "Resource temporarily unavailable" in honest.stderr, honest.stderr


def test_concurrent_leases_take_distinct_uids_and_wait_when_all_are_taken() -> None:
    config = SandboxConfig(uid_range=(3_999_100, 3_999_101))
    with lease_uid(config) as first, lease_uid(config) as second:
        assert {first, second} == {3_999_100, 3_999_101}
        got: list[tuple[int, float]] = []

        def third() -> None:
            with lease_uid(config) as uid:
                got.append((uid, time.monotonic()))

        waiter = threading.Thread(target=third)
        waiter.start()
        time.sleep(0.3)
        assert got == []  # every uid is taken: it waits
        released = time.monotonic()
    waiter.join(10)
    assert len(got) == 1 and got[0][0] in (first, second) and got[0][1] >= released


def test_a_writable_tree_is_handed_to_the_run_uid(tree: Path) -> None:
    from patchwarden.sandbox import prepare_writable_tree

    work = tree / "work"
    work.mkdir()
    (work / "old.txt").write_text("x")
    prepare_writable_tree(work, PER_RUN)
    result = launch(
        LaunchSpec(
            argv=_python("import os; open('new.txt', 'w').write('y'); print(os.getuid())", work),
            tree=work,
            tree_writable=True,
        ),
        PER_RUN,
    )
    assert result.exit_code == 0, result.stderr
    uid = int(result.stdout)
    assert UID_RANGE[0] <= uid <= UID_RANGE[1]
    assert {p.name: p.stat().st_uid for p in work.iterdir()} == {"old.txt": uid, "new.txt": uid}

"""The trusted runner: what a property that misbehaves yields. Never ``pass``.

Real bubblewrap and real pytest processes; each test here is one process.
"""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pytest

from patchwarden.sandbox import Limits, PropertyTarget, RunEntropy, SandboxConfig, run_properties

pytestmark = pytest.mark.bwrap

PROPS = textwrap.dedent(
    """
    import os, random, sys, time, unittest
    import pytest

    def test_ok(contract_seed):
        # The contract's seed is the property's; the hash seed is the run's own (its entropy).
        assert contract_seed == 29 and os.environ["PYTHONHASHSEED"] == "4242"

    def test_seeded(contract_seed):
        state = random.random()
        random.seed(777)  # the run's random seed, never the contract's
        assert state == random.random()

    def test_fails():
        assert 1 + 1 == 3

    def test_skip():
        pytest.skip("not today")

    @pytest.mark.xfail(reason="known")
    def test_xfail():
        assert False

    @pytest.mark.xfail(reason="known")
    def test_xpass():
        assert True

    @pytest.fixture
    def broken():
        raise RuntimeError("setup broke")

    def test_setup_error(broken):
        pass

    def test_sys_exit():
        sys.exit(0)

    def test_os_exit():
        os._exit(0)

    def test_hang():
        time.sleep(600)

    def test_pytest_exit():
        pytest.exit("stop here", returncode=0)

    def test_after_exit():
        pass


    class WindowTests(unittest.TestCase):
        def setUp(self):
            self.items = [1, 2, 3]

        def test_len(self):
            self.assertEqual(len(self.items), 3)

        def test_wrong(self):
            self.assertEqual(len(self.items), 4)


    class SubTests(unittest.TestCase):
        def test_thirty(self):
            for i in range(30):
                with self.subTest(i=i):
                    time.sleep(0.02)
    """
)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    root.chmod(0o755)  # the sandbox uid reads the tree through the bind mount
    (root / "tests").mkdir()
    (root / "tests" / "test_props.py").write_text(PROPS)
    return root


def line_of(fragment: str) -> int:
    """The 1-based line of ``fragment`` in the property file, for witness ids."""
    return next(n for n, line in enumerate(PROPS.splitlines(), 1) if fragment in line)


def target(name: str) -> PropertyTarget:
    return PropertyTarget(prop=f"prop.{name}", node_id=f"tests/test_props.py::test_{name}")


def statuses(run) -> dict[str, tuple[str, str]]:  # type: ignore[no-untyped-def]
    return {r.prop: (r.status, r.witness) for r in run.records}


def test_each_misbehaviour_in_one_process_is_a_fail(tree: Path) -> None:
    names = [
        "ok",
        "seeded",
        "fails",
        "skip",
        "xfail",
        "xpass",
        "setup_error",
        "sys_exit",
        "missing",
    ]
    entropy = RunEntropy(hash_seed=4242, random_seed=777)
    run = run_properties(tree, [target(n) for n in names], 29, SandboxConfig(), entropy=entropy)
    got = statuses(run)
    assert run.complete and run.missing == [] and run.problems == []
    # Misbehaving tests are data, not forgery: the channel, the status, the canaries hold.
    assert run.forged == []
    assert 10 <= (run.process.exit_code or 0) <= 100
    assert len(run.canaries) == 2 and not set(run.canaries) & set(got)
    assert got["prop.ok"] == ("pass", "")
    assert got["prop.seeded"] == ("pass", "")
    assert got["prop.fails"] == (
        "fail",
        f"prop.fails|AssertionError|tests/test_props.py:{line_of('1 + 1 == 3')}",
    )
    assert got["prop.skip"] == ("fail", "prop.skip|Skipped|call")
    assert got["prop.xfail"] == ("fail", "prop.xfail|XFailed|tests/test_props.py")
    assert got["prop.xpass"] == ("fail", "prop.xpass|XPassed|tests/test_props.py")
    assert got["prop.setup_error"] == (
        "fail",
        f"prop.setup_error|RuntimeError|setup:tests/test_props.py:{line_of('setup broke')}",
    )
    assert got["prop.sys_exit"] == (
        "fail",
        f"prop.sys_exit|SystemExit|tests/test_props.py:{line_of('sys.exit(0)')}",
    )
    assert got["prop.missing"] == ("fail", "prop.missing|NotRun|tests/test_props.py::test_missing")
    assert [r.prop for r in run.records] == [f"prop.{n}" for n in names]


def test_unittest_test_case_methods_run_as_properties(tree: Path) -> None:
    # The scorer blocks pytest's debugging plugin, whose options pytest's unittest support
    # reads on every TestCase item: unittest-style suites (more-itertools is one) failed on
    # both trees with "no attribute 'trace'" until the runner declared them.
    targets = [
        PropertyTarget(prop="prop.len", node_id="tests/test_props.py::WindowTests::test_len"),
        PropertyTarget(prop="prop.wrong", node_id="tests/test_props.py::WindowTests::test_wrong"),
    ]
    run = run_properties(tree, targets, 11, SandboxConfig())
    assert run.complete and run.forged == []
    got = statuses(run)
    assert got["prop.len"] == ("pass", "")
    assert got["prop.wrong"] == (
        "fail",
        f"prop.wrong|AssertionError|tests/test_props.py:{line_of('len(self.items), 4')}",
    )


def test_a_test_with_subtests_takes_its_own_time_once(tree: Path) -> None:
    """Each subtest reports: a property's time was the sum of the times from its start to
    each report (more-itertools' ``test_all_orderings``, 7,776 subtests, 100,772 s in a run
    of 1,474 s). It is the time from its start to its last report."""
    node = "tests/test_props.py::SubTests::test_thirty"
    started = time.monotonic()
    run = run_properties(tree, [PropertyTarget(prop="prop.sub", node_id=node)], 11, SandboxConfig())
    took = time.monotonic() - started
    assert [(r.prop, r.status) for r in run.records] == [("prop.sub", "pass")]
    assert 0.6 <= run.records[0].duration_s < took  # 30 sleeps of 0.02 s, inside the run


def test_os_exit_zero_leaves_rows_missing_not_passing(tree: Path) -> None:
    run = run_properties(tree, [target("ok"), target("os_exit")], 11, SandboxConfig())
    assert run.process.exit_code == 0
    assert not run.complete
    # Rows are written at session end, so an early exit leaves every row of
    # the run missing: the gate sees missing_seed, never a pass.
    assert run.missing == ["prop.ok", "prop.os_exit"]
    assert run.records == []


def test_hang_past_the_timeout_leaves_rows_missing(tree: Path) -> None:
    limits = Limits(wall_time_s=4, idle_time_s=4)
    run = run_properties(tree, [target("hang"), target("ok")], 11, SandboxConfig(), limits=limits)
    assert run.process.timed_out or run.process.idle_timed_out
    assert not run.complete
    assert run.missing == ["prop.hang", "prop.ok"]
    assert run.records == []


def test_pytest_exit_stops_the_canaries_too_so_the_run_is_forged(tree: Path) -> None:
    run = run_properties(tree, [target("pytest_exit"), target("after_exit")], 11, SandboxConfig())
    # The signer still authenticates what the runner saw (everything not run), but the
    # hidden canaries never ran: a session cut short by the code under test is not a result.
    assert not run.complete and run.records == []
    assert run.missing == ["prop.pytest_exit", "prop.after_exit"]
    canary_lines = [line for line in run.forged if line.startswith("canary ")]
    assert len(canary_lines) == 2 and all("|NotRun|" in line for line in canary_lines)

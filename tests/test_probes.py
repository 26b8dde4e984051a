"""The probes product code makes of its environment, measured in the product process and
compared parent against patch (docs/design/isolated-oracle.md, "Probes").

One real run (bubblewrap, the real oracle and product processes) of a product that probes
in many spellings and does honest work beside them: the probes are recorded with the
``file:line`` that made them, the honest work is not. The comparison itself is in-memory.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from patchwarden.sandbox import Limits, PropertyRun, PropertyTarget, SandboxConfig, run_properties
from patchwarden.sandbox._supervise import ProcessResult
from patchwarden.scorer.checks._check_probes import new_probes

PRODUCT = textwrap.dedent(
    """
    import json, os, pathlib, sys, tempfile, time, traceback


    def honest(n):
        data = json.loads(pathlib.Path(__file__).with_name("data.json").read_text())
        with tempfile.TemporaryDirectory() as scratch:
            pathlib.Path(scratch, "x").write_text("x")
        os.path.exists(os.path.join(os.path.dirname(__file__), "data.json"))
        import decimal, fractions  # an import reads the library's files: no probe
        return n + data["one"]


    def probing(n):
        open("/proc/self/status").read()
        pathlib.Path("/proc/%d/limits" % os.getpid()).read_text()
        os.path.exists(".git")
        started = time.perf_counter()
        os.getuid()
        os.environ.get("H" + "OME")
        traceback.format_stack()
        import resource
        return n + 1 + 0 * started
    """
)
PROPS = textwrap.dedent(
    """
    import shop

    def test_honest():
        assert shop.honest(1) == 2

    def test_probing():
        assert shop.probing(1) == 2
    """
)


@pytest.mark.bwrap
def test_the_product_process_records_what_product_code_probes_and_nothing_honest(
    tmp_path: Path,
) -> None:
    tmp_path.chmod(0o755)
    (tmp_path / "shop").mkdir(mode=0o755)
    (tmp_path / "shop" / "__init__.py").write_text(PRODUCT)
    (tmp_path / "shop" / "data.json").write_text('{"one": 1}')
    (tmp_path / "tests").mkdir(mode=0o755)
    (tmp_path / "tests" / "test_props.py").write_text(PROPS)
    targets = [PropertyTarget(f"p.{n}", f"tests/test_props.py::test_{n}") for n in ("honest",)]
    limits = Limits(wall_time_s=60, idle_time_s=15, memory_mb=1024, output_bytes=200_000)
    run = run_properties(tmp_path, targets, 3, SandboxConfig(), limits=limits)
    assert [(r.status, r.isolation) for r in run.records] == [("pass", "isolated")]
    assert run.probes == []
    targets.append(PropertyTarget("p.probing", "tests/test_props.py::test_probing"))
    run = run_properties(tmp_path, targets, 3, SandboxConfig(), limits=limits)
    assert [(r.status, r.isolation) for r in run.records] == [("pass", "isolated")] * 2

    def at(fragment: str) -> str:
        number = next(n for n, text in enumerate(PRODUCT.splitlines(), 1) if fragment in text)
        return f"from shop/__init__.py:{number} (probing)"

    assert sorted(run.probes) == sorted(
        [
            f"open /proc/self/status {at('/proc/self/status')}",
            f"open /proc/<pid>/limits {at('/limits')}",
            f"os.getpid {at('/limits')}",
            f"os.path.exists <tree>/.git {at('.git')}",
            f"time.perf_counter {at('perf_counter')}",
            f"os.getuid {at('getuid')}",
            f"os.environ HOME {at('OME')}",
            f"frame sys._getframe {at('format_stack')}",
            f"import resource {at('import resource')}",
        ]
    )


def _run(probes: list[str]) -> PropertyRun:
    empty = ProcessResult((), 0, None, "", "", False, False, False, False, 0.1, "none")
    return PropertyRun(3, [], [], True, [], [], empty, probes=probes)


def test_a_probe_only_the_patch_makes_is_named_with_where_it_was_made() -> None:
    shared = "time.perf_counter from shop/a.py:3 (f)"
    runs = {
        ("parent", 3): _run([shared, "os.getuid from shop/a.py:9 (g)"]),
        ("patch", 3): _run(
            [
                "time.perf_counter from shop/b.py:7 (h)",  # the parent reads the clock too
                "os.getuid from shop/a.py:12 (g)",
                "open /proc/self/status from shop/a.py:14 (g)",
            ]
        ),
        ("patch", 5): _run(["open /proc/self/status from shop/a.py:14 (g)"]),
    }
    assert new_probes(runs) == ["open /proc/self/status from shop/a.py:14 (g) (patch seed 3)"]
    assert new_probes({("parent", 3): runs[("parent", 3)]}) == []


STATEFUL = textwrap.dedent(
    """
    import os

    CALLS = [0]
    IMPORTED_IN = os.getpid()


    def bump():
        CALLS[0] += 1
        return CALLS[0], os.getpid() != IMPORTED_IN
    """
)
STATEFUL_PROPS = textwrap.dedent(
    """
    import shop

    def test_first():
        assert shop.bump() == (1, True)
        assert shop.bump() == (2, True)

    def test_second():
        assert shop.bump() == (1, True)
    """
)


@pytest.mark.bwrap
def test_each_property_starts_from_the_state_the_import_left(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    (tmp_path / "shop").mkdir(mode=0o755)
    (tmp_path / "shop" / "__init__.py").write_text(STATEFUL)
    (tmp_path / "tests").mkdir(mode=0o755)
    (tmp_path / "tests" / "test_props.py").write_text(STATEFUL_PROPS)
    targets = [
        PropertyTarget(f"p.{n}", f"tests/test_props.py::test_{n}") for n in ("first", "second")
    ]
    limits = Limits(wall_time_s=60, idle_time_s=15, memory_mb=1024, output_bytes=200_000)
    run = run_properties(tmp_path, targets, 3, SandboxConfig(), limits=limits)
    assert [(r.prop, r.status, r.isolation) for r in run.records] == [
        ("p.first", "pass", "isolated"),
        ("p.second", "pass", "isolated"),
    ]


KEPT = {
    "shop/__init__.py": "CALLS = [0]\n",
    "shop/extra.py": textwrap.dedent(
        """
        import os

        from shop import CALLS


        class Thing:
            def __init__(self):
                CALLS[0] += 1
                self.pid = os.getpid()

            def calls(self):
                return CALLS[0]
        """
    ),
    "tests/test_props.py": textwrap.dedent(
        """
        import pytest

        import shop

        HELD = {}


        @pytest.fixture(scope="module")
        def made():
            import shop.extra

            return shop.extra.Thing()


        def test_first(made):
            import shop.extra

            HELD["cls"] = shop.extra.Thing  # read during this property, kept past it
            assert made.calls() == 1
            assert HELD["cls"]().calls() == 2


        def test_second():
            assert shop.extra.Thing().calls() == 1  # a module first imported by test_first
            assert HELD["cls"]().calls() == 2  # a class read then, asked for again


        def test_third(made):
            assert made.calls() >= 1
        """
    ),
}


@pytest.mark.bwrap
def test_what_the_oracle_keeps_across_properties_is_found_again_or_refused(
    tmp_path: Path,
) -> None:
    """Each property's product process is forked from the state the import left: a module
    first imported during one property and a class read then are asked for again by name in
    the next; a product object made during an earlier property (a module-scoped fixture's)
    does not exist there, and the property runs in-process, saying why."""
    tmp_path.chmod(0o755)
    for name, text in KEPT.items():
        (tmp_path / name).parent.mkdir(mode=0o755, exist_ok=True)
        (tmp_path / name).write_text(text)
    targets = [
        PropertyTarget(f"p.{n}", f"tests/test_props.py::test_{n}")
        for n in ("first", "second", "third")
    ]
    limits = Limits(wall_time_s=60, idle_time_s=15, memory_mb=1024, output_bytes=200_000)
    run = run_properties(tmp_path, targets, 3, SandboxConfig(), limits=limits)
    assert [(r.prop, r.status, r.isolation) for r in run.records] == [
        ("p.first", "pass", "isolated"),
        ("p.second", "pass", "isolated"),
        (
            "p.third",
            "pass",
            "in-process: the property uses a product Thing made during an earlier test "
            "(each test meets the product as its import left it)",
        ),
    ]

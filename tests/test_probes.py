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
    import datetime, genericpath, json, os, pathlib, posix, stat, sys, tempfile, time
    import threading, traceback, types


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
        return n + 1 + 0 * started + len(more_spellings())


    def more_spellings():
        today = datetime.date.today(), datetime.datetime.now()
        posix.environ.get(b"PATH"), os.getenv("USER"), "TERM" in os.environ
        os.path.isdir("/etc"), time.monotonic_ns()
        remade = types.FunctionType(genericpath.isfile.__code__, {"os": os, "stat": stat})
        remade("/etc/hostname")  # globals of its own: the profile does not look it up
        threading.Thread(target=int).start()  # a thread counts while the process waits
        os.sysconf("SC_CHILD_MAX")  # the rlimit on processes, through libc
        try:
            pathlib.Path("/sys").stat()
        except OSError:  # no /sys in the sandbox: probed all the same
            pass
        return ()
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

    def at(fragment: str, function: str = "probing") -> str:
        number = next(n for n, text in enumerate(PRODUCT.splitlines(), 1) if fragment in text)
        return f"from shop/__init__.py:{number} ({function})"

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
            f"date.today {at('date.today', 'more_spellings')}",
            f"datetime.now {at('date.today', 'more_spellings')}",
            f"os.environ {at('posix.environ', 'more_spellings')}",
            f"os.environ USER {at('posix.environ', 'more_spellings')}",
            f"os.environ TERM {at('posix.environ', 'more_spellings')}",
            f"os.path.Path.stat /sys {at('/sys', 'more_spellings')}",
            f"os.path.isdir /etc {at('/etc', 'more_spellings')}",
            f"time.monotonic_ns {at('/etc', 'more_spellings')}",
            f"function.__new__ genericpath.isfile {at('remade =', 'more_spellings')}",
            f"thread {at('threading.Thread', 'more_spellings')}",
            f"os.sysconf {at('SC_CHILD_MAX', 'more_spellings')}",
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


def _three_properties(tmp_path: Path, files: dict[str, str]) -> PropertyRun:
    """``files`` written in a tree, and its tests/test_props.py's first, second and third
    tests run as three properties (isolated, seed 3)."""
    tmp_path.chmod(0o755)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    targets = [
        PropertyTarget(f"p.{n}", f"tests/test_props.py::test_{n}")
        for n in ("first", "second", "third")
    ]
    limits = Limits(wall_time_s=60, idle_time_s=15, memory_mb=1024, output_bytes=200_000)
    return run_properties(tmp_path, targets, 3, SandboxConfig(), limits=limits)


@pytest.mark.bwrap
def test_what_the_oracle_keeps_across_properties_is_found_again_or_refused(
    tmp_path: Path,
) -> None:
    """Each property's product process is forked from the state the import left: a module
    first imported during one property and a class read then are asked for again by name in
    the next; a product object made during an earlier property (a module-scoped fixture's)
    does not exist there, and the property runs in-process, saying why."""
    run = _three_properties(tmp_path, KEPT)
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


WRITER = textwrap.dedent(
    """
    import os
    import pathlib

    HERE = pathlib.Path(__file__).parent


    def write_everywhere():
        (HERE / "kept.txt").write_text("changed by a property")
        (HERE / "new.txt").write_text("new")
        (HERE / "gone.txt").unlink()
        os.mkdir(HERE / "made")
        (HERE / "made" / "inside.txt").write_text("x")
        with open("/tmp/.scratch-count", "ab") as f:
            f.write(b"x")
        with open(os.path.expanduser("~/.home-count"), "ab") as f:
            f.write(b"x")
        (HERE / "data" / "extra.txt").write_text("x")
        os.chmod(HERE / "data", 0)  # its new entry unseen until its mode is put back
        os.mkdir(HERE / "hidden")
        (HERE / "hidden" / "count.txt").write_text("x")
        os.chmod(HERE / "hidden", 0)
        os.chmod(HERE / "kept.txt", 0)


    def what_is_there():
        def read(path):
            try:
                with open(path, "rb") as f:
                    return f.read()
            except OSError:
                return None

        return (
            read(HERE / "kept.txt"),
            read(HERE / "new.txt"),
            read(HERE / "gone.txt"),
            read(HERE / "made" / "inside.txt"),
            read("/tmp/.scratch-count"),
            read(os.path.expanduser("~/.home-count")),
            read(HERE / "data" / "extra.txt"),
            os.path.exists(HERE / "hidden"),
        )
    """
)
WRITER_PROPS = textwrap.dedent(
    """
    import shop

    AS_IMPORTED = (b"as imported", None, b"to be removed", None, None, None, None, False)

    def test_first():
        assert shop.what_is_there() == AS_IMPORTED
        shop.write_everywhere()
        assert shop.what_is_there()[1:] != AS_IMPORTED[1:]

    def test_second():
        assert shop.what_is_there() == AS_IMPORTED
        shop.write_everywhere()

    def test_third():
        assert shop.what_is_there() == AS_IMPORTED
    """
)


@pytest.mark.bwrap
def test_what_a_property_writes_is_put_back_before_the_next(tmp_path: Path) -> None:
    """Files are state a fork does not reset: everything a property's process writes in its
    tree, /tmp or $HOME is put back as the import left it before the next property's process
    is forked, and a write in the tree is a probe (its time cannot be set back)."""
    files = {
        "shop/__init__.py": WRITER,
        "shop/kept.txt": "as imported",
        "shop/gone.txt": "to be removed",
        "shop/data/.keep": "",
        "tests/test_props.py": WRITER_PROPS,
    }
    run = _three_properties(tmp_path, files)
    assert [(r.prop, r.status, r.isolation) for r in run.records] == [
        ("p.first", "pass", "isolated"),
        ("p.second", "pass", "isolated"),
        ("p.third", "pass", "isolated"),
    ]

    def at(fragment: str, function: str = "write_everywhere") -> str:
        number = next(n for n, text in enumerate(WRITER.splitlines(), 1) if fragment in text)
        return f"from shop/__init__.py:{number} ({function})"

    home = "/home/sandbox/.home-count"  # $HOME is no scratch directory: a look there counts
    appended = at('.home-count"), "ab')
    assert sorted(set(run.probes)) == sorted(
        [
            f"open {home} {appended}",
            f"open {home} {at('open(path', 'read')}",
            f"os.environ HOME {appended}",
            f"os.environ HOME {at('read(os.path', 'what_is_there')}",
            f"write <tree>/shop/kept.txt {at('kept.txt')}",
            f"write <tree>/shop/new.txt {at('new.txt')}",
            f"write <tree>/shop/gone.txt {at('unlink')}",
            f"write <tree>/shop/made {at('os.mkdir')}",
            f"write <tree>/shop/made/inside.txt {at('inside.txt')}",
            "write <tree>/shop/data/extra.txt " + at('extra.txt").write'),
            "write <tree>/shop/data " + at('chmod(HERE / "data"'),
            "write <tree>/shop/hidden " + at('mkdir(HERE / "hidden'),
            f"write <tree>/shop/hidden/count.txt {at('count.txt')}",
            "write <tree>/shop/hidden " + at('chmod(HERE / "hidden'),
            "write <tree>/shop/kept.txt " + at('chmod(HERE / "kept'),
        ]
    )
    assert (tmp_path / "shop" / "kept.txt").read_text() == "as imported"  # the run's copy only


CROSSING = textwrap.dedent(
    """
    import mmap
    import os
    import threading

    READ, WRITE = os.pipe()
    SHARED = mmap.mmap(-1, 8)
    threading.Thread(target=threading.Event().wait, daemon=True).start()


    def bump():
        SHARED[0] += 1
        return SHARED[0]
    """
)


@pytest.mark.bwrap
def test_what_the_import_leaves_open_to_every_property_is_a_probe(tmp_path: Path) -> None:
    """A descriptor, shared memory or a thread the import left reaches every property's
    process (or runs beside them): no fork resets them, so each is measured where the
    properties' processes are forked, as a probe; a signal sent to the process the
    properties are forked from is never handled there."""
    tmp_path.chmod(0o755)
    (tmp_path / "shop").mkdir(mode=0o755)
    (tmp_path / "shop" / "__init__.py").write_text(CROSSING)
    (tmp_path / "tests").mkdir(mode=0o755)
    (tmp_path / "tests" / "test_props.py").write_text(
        "import shop\n\n"
        "def test_first():\n    assert shop.bump() == 1\n\n"
        "def test_second():\n    assert shop.bump() == 2  # shared: the measurement's case\n"
    )
    targets = [
        PropertyTarget(f"p.{n}", f"tests/test_props.py::test_{n}") for n in ("first", "second")
    ]
    limits = Limits(wall_time_s=60, idle_time_s=15, memory_mb=1024, output_bytes=200_000)
    run = run_properties(tmp_path, targets, 3, SandboxConfig(), limits=limits)
    assert [(r.prop, r.status) for r in run.records] == [
        ("p.first", "pass"),
        ("p.second", "pass"),
    ]
    assert sorted(set(run.probes)) == [
        "descriptor pipe from <the import>",
        "shared-memory anonymous memory from <the import>",
        "thread 1 running besides the main one from <the import>",
        "thread from shop/__init__.py:8 (<module>)",  # its start, where the import made it
    ]


@pytest.mark.bwrap
def test_what_the_sandbox_mounts_under_tmp_is_not_put_back(tmp_path: Path) -> None:
    """The put-back keeps to the file systems of its roots: a directory the sandbox mounts
    under /tmp (the interpreter's own when it sits under the host's /tmp, as in a fresh
    clone there; here an operator's writable path) is not the product's to have put back,
    and what the host or the oracle writes there meanwhile stays."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    tree = tmp_path / "tree"
    files = {
        "shop/__init__.py": "import os\n\n\ndef seen(path):\n    return os.listdir(path)\n",
        "tests/test_props.py": textwrap.dedent(
            f"""
            import pathlib

            import shop

            SHARED = pathlib.Path({str(shared)!r})

            def test_first():
                (SHARED / "from-the-oracle").write_text("x")  # not the product's write
                assert shop.seen(str(SHARED)) == ["from-the-oracle"]

            def test_second():
                assert shop.seen(str(SHARED)) == ["from-the-oracle"]

            def test_third():
                assert (SHARED / "from-the-oracle").read_text() == "x"
            """
        ),
    }
    tree.mkdir(mode=0o755)
    for name, text in files.items():
        (tree / name).parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        (tree / name).write_text(text)
    tree.chmod(0o755)
    targets = [
        PropertyTarget(f"p.{n}", f"tests/test_props.py::test_{n}")
        for n in ("first", "second", "third")
    ]
    limits = Limits(wall_time_s=60, idle_time_s=15, memory_mb=1024, output_bytes=200_000)
    config = SandboxConfig(writable_paths=(str(shared),))
    run = run_properties(tree, targets, 3, config, limits=limits)
    assert [(r.prop, r.status, r.isolation) for r in run.records] == [
        ("p.first", "pass", "isolated"),
        ("p.second", "pass", "isolated"),
        ("p.third", "pass", "isolated"),
    ]
    assert (shared / "from-the-oracle").read_text() == "x"

"""Unforgeable results: the authenticated channel, the audit hook, the canaries
(docs/design/runner.md).

The channel checks are pure (`verify_channel` on bytes); the rest runs the real reporter
under bubblewrap, a few sandboxed processes in all (docs/design/runner.md).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import textwrap
from pathlib import Path

import pytest

from patchwarden.sandbox import (
    ProcessResult,
    PropertyRun,
    PropertyTarget,
    SandboxConfig,
    run_properties,
)
from patchwarden.sandbox._channel import RunSecret, canary_source, new_secret, verify_channel

# -- the channel, on bytes -----------------------------------------------------------------------


def _line(key: bytes, body: dict[str, object]) -> bytes:
    text = json.dumps(body).encode()
    return hmac.new(key, text, hashlib.sha256).hexdigest().encode() + b" " + text + b"\n"


def _stream(secret: RunSecret, rows: list[dict[str, object]], *, key: bytes | None = None) -> bytes:
    key = key or secret.key
    lines = [_line(key, {"seq": n, "row": row}) for n, row in enumerate(rows)]
    lines.append(_line(key, {"seq": len(rows), "end": {"rows": len(rows), "shadowed": []}}))
    return b"".join(lines)


def _honest_rows(secret: RunSecret) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = [
        {"prop": "prop.p", "seed": 11, "status": "pass", "witness": ""}
    ]
    rows += [
        {"prop": c.prop, "seed": 11, "status": c.status, "witness": c.witness}
        for c in secret.canaries
    ]
    return rows


@pytest.fixture
def secret() -> RunSecret:
    return new_secret()


def test_an_authentic_channel_has_nothing_to_say(secret: RunSecret) -> None:
    reading = verify_channel(_stream(secret, _honest_rows(secret)), secret, secret.exit_status)
    assert reading.forged == []
    assert [r["prop"] for r in reading.rows] == ["prop.p", *(c.prop for c in secret.canaries)]
    assert reading.end == {"rows": 3, "shadowed": []}


def test_every_secret_is_new(secret: RunSecret) -> None:
    other = new_secret()
    assert other.key != secret.key and len(secret.key) == 32
    assert {c.prop for c in other.canaries}.isdisjoint(c.prop for c in secret.canaries)
    assert 10 <= secret.exit_status <= 100
    # The secret reaches the reporter on its own descriptor, never argv or the environment.
    assert secret.payload().startswith(secret.key + b"\n")


@pytest.mark.parametrize(
    ("tamper", "expected"),
    [
        (lambda s, b: b.replace(b'"pass"', b'"fail"', 1), "line 1 is not authenticated"),
        (lambda s, b: b'{"prop": "prop.p", "status": "pass"}\n' + b, "line 1 is not authenticated"),
        (lambda s, b: b + b"garbage\n", "line 5 is not authenticated"),
        (lambda s, b: b"".join(b.splitlines(keepends=True)[:-1]), "no authenticated end marker"),
        (lambda s, b: b.splitlines(keepends=True)[1] + b, "line 1 is out of sequence"),
        (lambda s, b: b + b.splitlines(keepends=True)[0], "line 5 comes after the end marker"),
        (lambda s, b: _stream(s, _honest_rows(s), key=b"k" * 32), "line 1 is not authenticated"),
    ],
    ids=["flipped", "unsigned", "appended", "no-end", "reordered", "after-end", "other-key"],
)
def test_a_tampered_channel_is_forged(secret: RunSecret, tamper, expected: str) -> None:  # type: ignore[no-untyped-def]
    raw = tamper(secret, _stream(secret, _honest_rows(secret)))
    reading = verify_channel(raw, secret, secret.exit_status)
    assert any(expected in line for line in reading.forged), reading.forged


def test_another_exit_status_is_forged(secret: RunSecret) -> None:
    reading = verify_channel(_stream(secret, _honest_rows(secret)), secret, 0)
    assert reading.forged == [
        f"the run ended with exit status 0, not the run's own status {secret.exit_status}"
    ]


def test_observations_are_collected_not_forged(secret: RunSecret) -> None:
    raw = b"observed: sys._getframe from /workspace/a.py (f)\n" + _stream(
        secret, _honest_rows(secret)
    )
    reading = verify_channel(raw + raw[:0], secret, secret.exit_status)
    assert reading.forged == []
    assert reading.observed == ["sys._getframe from /workspace/a.py (f)"]


def _run_observing(*observed: str) -> PropertyRun:
    process = ProcessResult(("python",), 0, None, "", "", False, False, False, False, 0.1, "none")
    return PropertyRun(11, [], [], True, [], [], process, observed=list(observed))


def test_the_scorer_rejects_introspection_in_code_the_patch_changed() -> None:
    from patchwarden.scorer.checks import SourceChange, forgeries

    project = "object.__getattr__ .tb_frame from /workspace/src/jinja2/debug.py:40 (rewrite)"
    patch = "sys._getframe from /workspace/orders/__init__.py:2 (_climb)"
    runs = {
        ("parent", 11): _run_observing(),
        ("patch", 11): _run_observing(project, patch),
    }
    climb = "def _climb():\n    return sys._getframe(3)\n"
    changed = [
        SourceChange(path="orders/__init__.py", parent=None, patch=climb),
        SourceChange(path="orders/total.py", parent="x = 1\n", patch="x = 2\n"),
    ]
    # The project's unchanged code may read frames (jinja2 does); the patch's may not.
    assert forgeries(runs, changed) == [f"patch seed 11: {patch}, in code the patch changed"]
    assert forgeries(runs, changed[1:]) == []


def test_a_frame_read_the_parent_made_on_the_same_line_is_the_projects_not_the_patchs() -> None:
    """An honest fix to a function that reads its caller's frame (boltons' namedtuple, a
    copy of the standard library's) is not a forgery: the parent's runs read it on a line
    of the same text. A read the patch adds to that function, or rewrites, still is."""
    from patchwarden.scorer.checks import SourceChange, forgeries

    parent_text = "def nt(name):\n    m = sys._getframe(1).f_globals\n    return m\n"
    fixed = "def nt(name):\n    if not name:\n        raise ValueError\n" + parent_text[14:]
    added = fixed.replace("    return m\n", "    up = sys._getframe(4)\n    return m\n")
    rewritten = fixed.replace("_getframe(1)", "_getframe(5)")
    read = "sys._getframe from /workspace/pkg/nt.py:{} (nt)"
    parent = {("parent", 11): _run_observing(read.format(2))}

    def forged(patch_text: str, *lines: int) -> list[str]:
        runs = {**parent, ("patch", 11): _run_observing(*(read.format(n) for n in lines))}
        return forgeries(
            runs, [SourceChange(path="pkg/nt.py", parent=parent_text, patch=patch_text)]
        )

    assert forged(fixed, 4) == []  # the same line, moved down by the fix
    assert forged(added, 4, 5) == [f"patch seed 11: {read.format(5)}, in code the patch changed"]
    assert forged(rewritten, 4) == [f"patch seed 11: {read.format(4)}, in code the patch changed"]
    assert forged(fixed, 40) == [  # a line the scorer cannot read is never excused
        f"patch seed 11: {read.format(40)}, in code the patch changed"
    ]
    # With a changed nt.py at the root too, /workspace/pkg/nt.py is pkg/nt.py's line.
    runs = {**parent, ("patch", 11): _run_observing(read.format(4))}
    other = SourceChange(path="nt.py", parent="a\nb\n", patch="a\nb\nc\nd\n")
    mine = SourceChange(path="pkg/nt.py", parent=parent_text, patch=fixed)
    assert forgeries(runs, [other, mine]) == []


def test_canaries_must_come_back_exactly(secret: RunSecret) -> None:
    rows = _honest_rows(secret)
    failing = secret.canaries[1]
    rows[2] = {**rows[2], "status": "pass", "witness": ""}
    reading = verify_channel(_stream(secret, rows[:2] + rows[2:]), secret, secret.exit_status)
    assert reading.forged == [
        f"canary {failing.prop}: pass, expected fail with witness {failing.witness}"
    ]
    reading = verify_channel(_stream(secret, rows[:1]), secret, secret.exit_status)
    assert [line.split(":")[1] for line in reading.forged] == [" 0 rows, expected 1"] * 2


def test_the_canary_witness_names_the_failing_line(secret: RunSecret) -> None:
    source = canary_source(secret).splitlines()
    line = int(secret.canaries[1].witness.rsplit(":", 1)[1])
    assert source[line - 1].strip() == "assert value < 0"


# -- the runner, in the sandbox ----------------------------------------------------------------

HONEST = textwrap.dedent(
    """
    import collections, dataclasses, enum, logging, traceback, typing

    def test_logging():
        logging.getLogger("orders").warning("honest code logs")

    def test_typing_and_namedtuple():
        T = typing.TypeVar("T")
        class Point(typing.NamedTuple):
            x: int
        assert collections.namedtuple("P", "x")(1).x == Point(1).x == 1 and T

    def test_enum_and_dataclass():
        Colour = enum.Enum("Colour", "RED GREEN")
        @dataclasses.dataclass
        class Item:
            n: int
        assert Item(1).n == Colour.RED.value

    def test_asyncio_run():
        import asyncio

        async def answer():
            await asyncio.sleep(0)
            return 42

        assert asyncio.run(answer()) == 42

    def test_formatting_a_traceback():
        try:
            raise ValueError("x")
        except ValueError:
            assert "ValueError" in traceback.format_exc()
            logging.getLogger("orders").exception("and logs it")
    """
)

FRAME_READS = {
    "frame_walk": "import sys; sys._getframe().f_back",
    "traceback_frame": "try:\n        raise ValueError\n    except ValueError as e:\n"
    "        e.__traceback__.tb_frame",
    "generator_frame": "g = (x for x in []); g.gi_frame",
    "inspect_frame": "import inspect; inspect.currentframe()",
    "walk_tb": "import traceback\n    try:\n        raise ValueError\n    except ValueError as e:\n"
    "        list(traceback.walk_tb(e.__traceback__))",
    "crafted_code": "(lambda: 1).__code__.replace(co_consts=(2,))",
    "marshal": "import marshal; marshal.loads(marshal.dumps(compile('1', 'x', 'eval')))",
}
PRIMITIVES = {
    "gc_walk": "import gc; gc.get_objects()",
    "other_threads": "import sys; sys._current_frames()",
    "ctypes_read": "import ctypes; ctypes.string_at(id(object()), 8)",
    "proc_fd": "import os; os.listdir('/proc/self/fd')",
    "proc_mem": "open('/proc/self/mem', 'rb')",
    "proc_mem_by_link": "import os; open('/dev/fd/../mem', 'rb')",
    "settrace": "import sys; sys.settrace(lambda *a: None)",
    "signal_handler": "import signal; signal.signal(signal.SIGALRM, lambda number, frame: None)",
    "fresh_signal_module": "import _imp, importlib.machinery as m\n"
    "    fresh = _imp.create_builtin(m.ModuleSpec('_signal', None))\n"
    "    fresh.signal(14, lambda number, frame: None)",
    "audit_hook": "import sys; sys.addaudithook(lambda *a: None)",
    # The hook bound what it calls before the tree was importable: replacing a module
    # attribute it once used neither hushes a refusal nor changes a decision.
    "hushed_refusal": "import contextlib, gc\n"
    "    original = contextlib.suppress\n"
    "    contextlib.suppress = None\n"
    "    try:\n"
    "        gc.get_referents(gc)\n"
    "    finally:\n"
    "        contextlib.suppress = original",
}
PROBES = HONEST + "".join(
    f"\ndef test_{name}():\n    {body}\n"
    for name, body in (*PRIMITIVES.items(), *FRAME_READS.items())
)


@pytest.fixture(scope="module")
def probe_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("probe-tree")
    root.chmod(0o755)
    (root / "tests").mkdir()
    (root / "tests" / "test_probe.py").write_text(PROBES)
    return root


def _targets(names: list[str]) -> list[PropertyTarget]:
    return [PropertyTarget(f"prop.{n}", f"tests/test_probe.py::test_{n}") for n in names]


HONEST_NAMES = re.findall(r"^def test_(\w+)", HONEST, flags=re.MULTILINE)


@pytest.fixture(scope="module")
def honest_run(probe_tree: Path) -> PropertyRun:
    return run_properties(probe_tree, _targets(HONEST_NAMES), 11, SandboxConfig())


@pytest.mark.bwrap
def test_honest_uses_of_frames_are_not_refused(honest_run: PropertyRun) -> None:
    assert honest_run.forged == []
    assert honest_run.complete
    assert {r.prop: r.status for r in honest_run.records} == {
        f"prop.{n}": "pass" for n in HONEST_NAMES
    }


def test_without_isolation_the_canaries_are_read_where_they_are(probe_tree: Path) -> None:
    """backend none (development only): no mount, the same checks."""
    run = run_properties(probe_tree, _targets(HONEST_NAMES[:1]), 11, SandboxConfig(backend="none"))
    assert run.forged == [] and [r.status for r in run.records] == ["pass"]


@pytest.mark.bwrap
def test_each_primitive_is_refused_and_recorded(probe_tree: Path) -> None:
    run = run_properties(probe_tree, _targets(list(PRIMITIVES)), 11, SandboxConfig())
    refusals = [
        (match.group(1), match.group(2))
        for line in run.forged
        if (match := re.search(r"refused: (\S+).* \((test_\w+)\)$", line))
    ]
    # Each refusal names the product code that asked, whatever trusted code it went through.
    assert sorted({test for _, test in refusals}) == sorted(f"test_{n}" for n in PRIMITIVES), (
        run.forged
    )
    events = {event for event, _ in refusals}
    assert {
        "gc.get_objects",
        "gc.get_referents",
        "sys._current_frames",
        "ctypes.string_at",
        "os.listdir",
        "open",
        "sys.settrace",
        "signal.signal",
        "sys.addaudithook",
    } <= events
    # Refused is not passed: every probe failed, and the run keeps no record at all.
    assert not run.complete and run.records == []


@pytest.mark.bwrap
def test_frame_reads_by_the_project_are_observed_not_refused(probe_tree: Path) -> None:
    """The project's own code may read frames and rename code objects (jinja2 fakes its
    template tracebacks so): written as observations, per site; the scorer rejects those in
    code the patch changed."""
    run = run_properties(probe_tree, _targets(list(FRAME_READS)), 11, SandboxConfig())
    assert run.forged == [] and [r.status for r in run.records] == ["pass"] * len(FRAME_READS)
    sites = sorted(line.rsplit("(", 1)[1].rstrip(")") for line in run.observed)
    assert sites == sorted(f"test_{name}" for name in FRAME_READS), run.observed
    assert all(line.endswith(f"({line.rsplit('(', 1)[1]}") for line in run.observed)
    assert any(".tb_frame from /workspace/tests/test_probe.py" in line for line in run.observed)
    assert any(line.startswith("code.__new__ from") for line in run.observed)
    assert any(line.startswith("marshal.loads from") for line in run.observed)


FORGE_EVERYWHERE = textwrap.dedent(
    """
    import json, os, sys

    REPLAY = {replay!r}

    def _plain_rows():
        args = sys.argv
        seed = int(args[args.index("--seed") + 1])
        targets = json.loads(args[args.index("--targets") + 1])
        rows = [{{"prop": p, "seed": seed, "status": "pass", "witness": ""}} for p, _ in targets]
        rows.append({{"__patchwarden_sentinel__": True, "seed": seed, "exitstatus": 0}})
        return "".join(json.dumps(r) + "\\n" for r in rows).encode()

    def _everywhere(data):
        for fd in range(3, 256):
            try:
                os.write(fd, data)
            except OSError:
                pass

    def test_write_plain_rows():
        _everywhere(_plain_rows())
        os._exit(0)

    def test_replay_an_honest_run():
        _everywhere(REPLAY.encode())
        os._exit(0)
    """
)
LENIENT_HYPOTHESIS = textwrap.dedent(
    """
    import hypothesis.core as _core
    from hypothesis import given, strategies as st

    # Patch what is reachable from module globals: every Hypothesis property now passes.
    _original = _core.StateForActualGivenExecution.execute_once

    def _lenient(self, *args, **kwargs):
        try:
            return _original(self, *args, **kwargs)
        except AssertionError:
            return None

    _core.StateForActualGivenExecution.execute_once = _lenient

    @given(st.integers())
    def test_fails(value):
        assert value != value
    """
)
NO_CONFIG_IN_GLOBALS = textwrap.dedent(
    """
    import collections, sys, types, weakref
    import _pytest.assertion.util, _pytest.debugging, pytest

    def test_pytest_keeps_no_config_where_product_code_can_find_it():
        assert getattr(_pytest.debugging.pytestPDB, "_config", None) is None
        assert getattr(_pytest.assertion.util, "_config", None) is None
        assert pytest.mark._config is None

    def _children(obj):
        if isinstance(obj, dict):
            yield from obj.values()
        elif isinstance(obj, (list, tuple, set, frozenset, collections.deque)):
            yield from obj
        elif isinstance(obj, weakref.ref):
            yield obj()
        else:
            namespace = getattr(obj, "__dict__", None)
            if isinstance(namespace, (dict, types.MappingProxyType)):
                yield from namespace.values()
            for name in ("__self__", "__func__", "__wrapped__", "__defaults__",
                         "__kwdefaults__", "func", "args", "keywords"):
                try:
                    yield object.__getattribute__(obj, name)
                except Exception:
                    pass
            if isinstance(obj, types.FunctionType) and obj.__closure__:
                for cell in obj.__closure__:
                    try:
                        yield cell.cell_contents
                    except ValueError:
                        pass

    def test_no_object_of_the_session_is_reachable_from_module_globals():
        from _pytest.config import Config
        from _pytest.main import Session
        from _pytest.nodes import Item
        wanted = (Config, Session, Item, sys.modules["__main__"].Reporter)
        seen, queue, found = set(), collections.deque(sys.modules.values()), []
        while queue:
            obj = queue.popleft()
            if id(obj) in seen or isinstance(obj, (str, bytes, int, float)):
                continue
            seen.add(id(obj))
            if isinstance(obj, wanted):
                found.append(type(obj).__name__)
            try:
                queue.extend(list(_children(obj)))
            except Exception:
                pass
        assert found == [] and len(seen) > 10000
    """
)


@pytest.fixture(scope="module")
def forger_tree(tmp_path_factory: pytest.TempPathFactory, honest_run: PropertyRun) -> Path:
    root = tmp_path_factory.mktemp("forger-tree")
    root.chmod(0o755)
    (root / "tests").mkdir()
    (root / "tests" / "test_forge.py").write_text(
        FORGE_EVERYWHERE.format(replay=honest_run.channel)
    )
    (root / "tests" / "test_lenient.py").write_text(LENIENT_HYPOTHESIS)
    (root / "tests" / "test_globals.py").write_text(NO_CONFIG_IN_GLOBALS)
    return root


@pytest.mark.bwrap
@pytest.mark.parametrize("attack", ["write_plain_rows", "replay_an_honest_run"])
def test_rows_written_by_product_code_are_forged(forger_tree: Path, attack: str) -> None:
    target = PropertyTarget("prop.p", f"tests/test_forge.py::test_{attack}")
    run = run_properties(forger_tree, [target], 11, SandboxConfig())
    assert not run.complete and run.records == [] and run.missing == ["prop.p"]
    assert run.process.exit_code == 0
    assert any(re.match(r"channel line 1 is not authenticated", line) for line in run.forged)
    assert "no authenticated end marker on the channel" in run.forged
    assert any(line.startswith("the run ended with exit status 0,") for line in run.forged)


@pytest.mark.bwrap
def test_a_patch_that_greens_every_hypothesis_property_turns_the_failing_canary_green(
    forger_tree: Path,
) -> None:
    targets = [
        PropertyTarget("prop.fails", "tests/test_lenient.py::test_fails"),
        PropertyTarget(
            "prop.globals",
            "tests/test_globals.py::test_pytest_keeps_no_config_where_product_code_can_find_it",
        ),
        PropertyTarget(
            "prop.reach",
            "tests/test_globals.py::test_no_object_of_the_session_is_reachable_from_module_globals",
        ),
    ]
    run = run_properties(forger_tree, targets, 11, SandboxConfig())
    # The channel itself is authentic (the runner believed what Hypothesis told it) ...
    assert not any("not authenticated" in line for line in run.forged)
    # ... but the hidden canary that must fail is a Hypothesis property too: it came back green.
    assert len(run.forged) == 1 and run.forged[0].startswith("canary canary.fail_")
    assert ": pass, expected fail with witness" in run.forged[0]
    assert run.records == []
    # And pytest's Config is in no module global where product code could pick it up
    # (the records are discarded, so read the session's own summary: 5 passed = the
    # greened property, the two globals tests, both canaries).
    assert "test_globals.py" not in run.process.stdout, run.process.stdout
    assert "5 passed" in run.process.stdout, run.process.stdout

"""The trusted reporting plugin and bootstrap, run INSIDE the sandbox.

This file is executed as a program read from stdin (``python -s -P - ...``) so
that nothing in the tree can shadow it: it never imports patchwarden. It
imports the test machinery (pytest, _pytest, pluggy, hypothesis) from the
scorer's interpreter *before* the tree is put on ``sys.path``, forces the
Hypothesis profile, seeds every source of randomness, and reports one record
per scheduled property. stdout/stderr never decide a status.

Arguments: ``--report-fd N --seed S --mode scorer|agent --targets JSON [--layout LAYOUT]
[--secret-fd M] [--spec-root DIR] -- [pytest args]`` where JSON is ``[[prop_id, node_id],
...]`` (agent mode: ``[]``), LAYOUT is ``{"roots": [...], "packages": [...]}``: the tree's
import roots, in sys.path order, and the project's own import names (sandbox/_layout.py),
and DIR, in scorer mode, the directory the node ids are relative to (default: the tree, the
working directory; another one holds tests kept apart from the tree).

Scorer mode (docs/design/runner.md, "Unforgeable results"): before anything of the tree is
importable,

- a signer thread reads the run's secret from ``--secret-fd`` (an HMAC key, the exit status
  the run must end with, the hidden canary properties) and closes the descriptor. The key
  and the status live only in that thread's locals, never in argv, the environment or a
  module global;
- the process becomes non-dumpable (no other process of the sandbox uid can open its
  memory, nor can it open its own ``/proc/self/mem``);
- an audit hook (PEP 578, it cannot be removed) refuses the primitives that reach the
  runner's memory or descriptors; each refusal is written to the result channel as an
  unauthenticated line, which makes the run ``forged``.

At the end the runner hands its rows to the signer, which writes each with a sequence
number and an HMAC-SHA256 under the key, then an end marker, and ends the process with the
run's own exit status. Agent mode writes plain records as each test finishes.
"""

import _thread
import contextlib
import json
import os
import random
import select
import signal
import sys
import time

SENTINEL = "__patchwarden_sentinel__"  # = _pytest_runner.SENTINEL (tests/test_reporter.py)
MACHINERY = ("pytest", "_pytest", "pluggy", "hypothesis")  # = _layout.TEST_MACHINERY
AGENT_TEXT_CHARS = 4000  # enough of a traceback to act on, bounded per test
SECRET_KEY_BYTES = 32  # the HMAC key comes first on the secret descriptor, then b"\n" + JSON
SIGNER_START_S = 30.0  # the signer reads a few hundred bytes; this only bounds a broken start
PARK_TIMEOUT_S = 60.0  # the signer ends the process in milliseconds; past this it is gone
REFUSALS_WRITTEN = 50  # refusals written to the channel; the rest are still refused
PATHS_UNDER_PROC = frozenset({"proc", "self", "thread-self", "fd", "fdinfo", "task", "map_files"})


def _parse_argv(argv):
    opts = {}
    rest = []
    i = 0
    while i < len(argv):
        if argv[i] == "--":
            rest = argv[i + 1 :]
            break
        opts[argv[i].lstrip("-")] = argv[i + 1]
        i += 2
    return opts, rest


OPTS, PYTEST_ARGS = _parse_argv(sys.argv[1:])
SEED = int(OPTS["seed"])
MODE = OPTS.get("mode", "scorer")
TARGETS = json.loads(OPTS.get("targets", "[]"))
TREE = os.getcwd()
LAYOUT = json.loads(OPTS.get("layout", '{"roots": ["."], "packages": []}'))
SPEC_ROOT = OPTS.get("spec-root", TREE)

# The channel: move it to a fresh descriptor so the number in argv is stale.
CHANNEL_FD = os.dup(int(OPTS["report-fd"]))
os.close(int(OPTS["report-fd"]))
_report = os.fdopen(CHANNEL_FD, "w", buffering=1, closefd=False) if MODE == "agent" else None

# Everything the runner relies on is imported from the interpreter BEFORE the
# tree is put on sys.path, so a module of the same name in the tree cannot
# take its place: the machinery, the Hypothesis pytest plugin we pass with
# -p, and the standard-library modules pytest imports lazily (pdb & co).
import _pytest._code.code  # noqa: E402
import _pytest.mark.structures  # noqa: E402
import _pytest.python  # noqa: E402
import _pytest.reports  # noqa: E402
import _pytest.runner  # noqa: E402
import pluggy  # noqa: E402
import pytest  # noqa: E402


def _hypothesis_on_demand():
    """Agent runs only: Hypothesis is imported when a test imports it, not before.

    Importing it costs more than a small unit-test suite takes to run, and the agent's
    loop runs such suites all the time. It still comes from the interpreter, never the
    tree: its top-level modules are located now, before the tree is on sys.path, and a
    finder first on sys.meta_path hands out those locations. The runner's profile is
    loaded the moment it is imported. Returns a stand-in for ``hypothesis.settings``
    that records the profile calls until then and forwards them after.
    """
    import importlib.abc
    import importlib.util

    class Deferred:
        real = None
        profile = None  # the register_profile arguments, once given
        loaded = False
        _profiles = {}

        @classmethod
        def register_profile(cls, *args, **kwargs):
            cls.profile = (args, kwargs)
            if cls.real is not None:
                cls.real.register_profile(*args, **kwargs)

        @classmethod
        def load_profile(cls, name):
            cls.loaded = True
            if cls.real is not None:
                cls.real.load_profile(name)

        @classmethod
        def attach(cls, real):
            cls.real = real
            cls._profiles = real._profiles
            if cls.profile is not None:
                real.register_profile(*cls.profile[0], **cls.profile[1])
                if cls.loaded:
                    real.load_profile(cls.profile[0][0])

    pinned = {}
    for name in ("hypothesis", "_hypothesis_pytestplugin", "_hypothesis_globals"):
        spec = importlib.util.find_spec(name)
        if spec is not None:
            pinned[name] = spec
    package = pinned.get("hypothesis")
    if package is not None and package.loader is not None:
        run_package = package.loader.exec_module

        def exec_module(module):
            run_package(module)
            Deferred.attach(module.settings)

        package.loader.exec_module = exec_module

    class Pinned(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            return pinned.get(name)

    sys.meta_path.insert(0, Pinned())
    return Deferred


if MODE == "scorer":
    # The plugin too: imported here, not later through pytest's loader, which would keep
    # the session on its module (__loader__.session).
    import _hypothesis_pytestplugin  # noqa: F401
    from hypothesis import Phase, settings

    # The explain phase traces the test with sys.settrace, which the scorer's runner
    # refuses (a trace function sees every frame); it only adds notes to a failure.
    SCORER_PROFILE = {"phases": tuple(phase for phase in Phase if phase != Phase.explain)}
else:
    settings = _hypothesis_on_demand()
    SCORER_PROFILE = {}

STDLIB_PRELOAD = (
    "pdb", "cmd", "code", "codeop", "bdb", "readline", "rlcompleter", "xml.dom",
    "unittest", "doctest", "difflib", "pprint", "inspect", "shlex", "fnmatch",
)  # fmt: skip
for _name in STDLIB_PRELOAD:
    with contextlib.suppress(ImportError):  # an interpreter built without it: nothing to shadow
        __import__(_name)

MACHINERY_FILES = {name: sys.modules[name].__file__ for name in MACHINERY if name in sys.modules}

settings.register_profile(
    "patchwarden",
    database=None,
    deadline=None,
    derandomize=False,
    print_blob=False,
    **SCORER_PROFILE,
)
settings.load_profile("patchwarden")
random.seed(SEED)


def _tree_paths():
    """The tree's import roots, then the tree itself: only directories inside the tree."""
    tree = os.path.realpath(TREE)
    paths = []
    for root in [*LAYOUT["roots"], "."]:
        path = os.path.normpath(os.path.join(TREE, root))
        real = os.path.realpath(path)
        if (real == tree or real.startswith(tree + os.sep)) and path not in paths:
            paths.append(path)
    return paths


def _watched():
    """Objects product code must not replace: the pytest and Hypothesis entry
    points the runner trusts, the reporter's own functions, random, os._exit.
    Compared by identity after collection and at the end (static lookups, so
    a descriptor cannot lie about what is stored)."""
    import inspect

    static = inspect.getattr_static
    main_module = sys.modules.get("__main__")
    spots = {
        "_pytest.python.Function.runtest": (_pytest.python.Function, "runtest"),
        "_pytest.python.pytest_pyfunc_call": (_pytest.python, "pytest_pyfunc_call"),
        "_pytest.runner.call_and_report": (_pytest.runner, "call_and_report"),
        "_pytest.runner.runtestprotocol": (_pytest.runner, "runtestprotocol"),
        "_pytest.runner.CallInfo.from_call": (_pytest.runner.CallInfo, "from_call"),
        "_pytest.runner.pytest_runtest_makereport": (_pytest.runner, "pytest_runtest_makereport"),
        "_pytest.reports.TestReport.from_item_and_call": (
            _pytest.reports.TestReport,
            "from_item_and_call",
        ),
        "pluggy.HookCaller.__call__": (pluggy.HookCaller, "__call__"),
        "pluggy.PluginManager._hookexec": (pluggy.PluginManager, "_hookexec"),
        "hypothesis.settings.load_profile": (settings, "load_profile"),
        "hypothesis.settings.register_profile": (settings, "register_profile"),
        "random.Random": (random, "Random"),
        "random.seed": (random, "seed"),
        "random.random": (random, "random"),
        "random.randint": (random, "randint"),
        "random.choice": (random, "choice"),
        "os._exit": (os, "_exit"),
        "json.dumps": (json, "dumps"),
        "__main__._emit": (main_module, "_emit"),
        "__main__.Reporter": (main_module, "Reporter"),
    }
    found = {}
    for name, (owner, attr) in spots.items():
        try:
            found[name] = static(owner, attr)
        except AttributeError:
            found[name] = None
    found["hypothesis profile"] = settings._profiles.get("patchwarden")
    return found


def _tampered(before):
    """Names of watched objects that changed, and tree modules posing as stdlib/machinery."""
    after = _watched()
    changed = sorted(name for name, value in before.items() if after.get(name) is not value)
    for name, module in list(sys.modules.items()):
        path = str(getattr(module, "__file__", None) or "")
        top = name.split(".", 1)[0]
        if not path.startswith(TREE + os.sep):
            continue
        if (
            top in sys.stdlib_module_names
            or name in STDLIB_BEFORE
            or top in MACHINERY
            or (top == "_hypothesis_pytestplugin")
        ):
            changed.append(f"module {name} loaded from the tree")
    return changed


def _foreign_project_modules():
    """Provenance: modules of the project's own packages that were NOT loaded from the tree,
    as (module, where it was loaded from, where the tree has it). One per package."""
    tree = os.path.realpath(TREE)
    found = {}
    for name, module in sorted(sys.modules.items()):
        owner = next((p for p in LAYOUT["packages"] if name == p or name.startswith(p + ".")), None)
        # A conftest is pytest's plugin of one directory, never the project's code: a
        # held-out directory's own conftest.py is rightly loaded from outside the tree.
        if owner is None or owner == "conftest" or owner in found or module is None:
            continue
        location = getattr(module, "__file__", None)
        paths = [location] if location else list(getattr(module, "__path__", None) or [])
        outside = [p for p in paths if not os.path.realpath(p).startswith(tree + os.sep)]
        if outside:
            expected = next(
                (
                    os.path.join(TREE, root, *owner.split("."))
                    for root in LAYOUT["roots"]
                    if os.path.exists(os.path.join(TREE, root, *owner.split(".")))
                    or os.path.exists(os.path.join(TREE, root, *owner.split(".")) + ".py")
                ),
                f"{TREE} (not found in the tree)",
            )
            found[owner] = (name, outside[0], expected)
    return list(found.values())


def _refuse_foreign_code(reporter, session):
    """A property that ran against a copy of the project from outside the tree measured the
    wrong code: no test runs, every property fails (scorer) or the run reports an error
    (agent), naming both paths. Never a pass."""
    foreign = _foreign_project_modules()
    if not foreign:
        return
    why = "; ".join(f"{name} from {path}, not {tree}" for name, path, tree in foreign)
    sys.stderr.write(f"patchwarden: provenance: {why}\n")
    if MODE == "scorer":
        for prop, _node in TARGETS:
            reporter.outcomes[prop] = ("fail", f"{prop}|ForeignModule|{why}", 0.0)
    else:
        _emit({"test": "<provenance>", "outcome": "error", "text": why, "duration_s": 0.0})
    # Nothing runs against the wrong code; the hidden canaries (no project code) still do.
    session.items[:] = [
        item
        for item in session.items
        if (str(getattr(item, "path", "")), item.name) in reporter.by_location
    ]


def _emit(obj):
    """Agent mode only: one plain record (the scorer's rows go through the signer)."""
    _report.write(json.dumps(obj, sort_keys=True) + "\n")
    _report.flush()


def _relpath(path):
    path = str(path)
    if path.startswith(TREE + os.sep):
        return path[len(TREE) + 1 :]
    return os.path.basename(path)


_MISSING = object()


def _assertion_id(excinfo, test_file):
    """file:line of the failing frame in the spec file, else the last tree frame."""
    return _traceback_id(excinfo.tb, test_file)


def _traceback_id(tb, test_file):
    fallback = "?"
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    for filename, lineno in reversed(frames):
        if os.path.abspath(filename) == test_file:
            return f"{_relpath(filename)}:{lineno}"
        if fallback == "?" and filename.startswith(TREE + os.sep):
            fallback = f"{_relpath(filename)}:{lineno}"
    return fallback


class Reporter:
    """Collects one outcome per scheduled node id; never trusts the exit code."""

    def __init__(self, canaries=()):
        self.watched = None  # taken once the reporter's own module is complete
        self.tampered = []
        self.fingerprints = {}  # prop -> the Hypothesis settings its test ran with
        self.by_node = {node: prop for prop, node in TARGETS}
        # Hidden canaries live outside the tree; matched by file and function name.
        self.canaries = [(prop, path, name) for prop, path, name in canaries]
        self.by_location = {(path, name): prop for prop, path, name in self.canaries}
        self.outcomes = {}  # scorer: prop -> (status, witness, duration); agent: node id -> ...
        self.started = {}
        self.raised = {}  # prop -> witness of what the test function itself raised
        self.seen_tampered = set()
        self.module_globals = {}  # property module name -> (module, {global: value})

    def pytest_addoption(self, parser):
        # pytest's unittest support asks for --pdb and --trace on every TestCase item
        # (_pytest.unittest, _pytest.debugging.maybe_wrap_pytest_function_for_tracing);
        # the debugging plugin declares them, and the scorer blocks that plugin, so without
        # these every unittest-style property failed on both trees. Declared off.
        if MODE == "scorer":
            parser.addoption("--pdb", dest="usepdb", action="store_true", default=False)
            parser.addoption("--trace", dest="trace", action="store_true", default=False)

    def _prop_of(self, item):
        """The property a collected item checks: its node id, a parametrized case of it,
        or a canary (by file and function)."""
        nodeid = item.nodeid
        prop = self.by_node.get(nodeid)
        if prop is None and "[" in nodeid:
            prop = self.by_node.get(nodeid.split("[", 1)[0])
        if prop is None and self.by_location:
            prop = self.by_location.get((str(getattr(item, "path", "")), item.name))
        return prop

    def pytest_collection_modifyitems(self, session, config, items):
        if MODE != "scorer":
            return
        # Select here, not with node ids on the command line: one unknown id
        # there would abort the whole session; here it just never runs.
        keep = [item for item in items if self._prop_of(item) is not None]
        dropped = [item for item in items if self._prop_of(item) is None]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = keep

    @pytest.fixture
    def contract_seed(self):
        return SEED

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config):
        if MODE == "scorer":
            # pytest.mark keeps the Config for marker checks; from a module global product
            # code would reach every object of the session, this runner's included.
            _pytest.mark.structures.MARK_GEN._config = None

    def pytest_collection_finish(self, session):
        # Product code has been imported by now (test modules import it).
        self._note_tampered("after collection")
        _refuse_foreign_code(self, session)
        if MODE == "scorer":
            for item in session.items:
                module = getattr(item, "module", None)
                if module is not None and module.__name__ not in self.module_globals:
                    self.module_globals[module.__name__] = (module, dict(vars(module)))

    def _note_tampered(self, when):
        """Watched objects replaced, and property-module globals rebound, since the start."""
        found = list(_tampered(self.watched))
        for name, (module, before) in self.module_globals.items():
            now = vars(module)
            found += [
                f"global {key} of the property module {name}"
                for key, value in before.items()
                if now.get(key, _MISSING) is not value
            ]
        for name in found:
            if name not in self.seen_tampered:
                self.seen_tampered.add(name)
                self.tampered.append(f"{name} ({when})")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item):
        prop = self._prop_of(item)
        if prop is None or MODE != "scorer":
            return
        # @settings(...) may sit outside @given (on the test) or inside (on the inner
        # test); either was built from the default profile of the moment it ran.
        test = getattr(item, "obj", None)
        inner = getattr(getattr(test, "hypothesis", None), "inner_test", None)
        chosen = (
            getattr(test, "_hypothesis_internal_use_settings", None)
            or getattr(inner, "_hypothesis_internal_use_settings", None)
            or settings.default
        )
        self.fingerprints[prop] = _fingerprint(chosen)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        # Re-applied before every test: product code imported at collection
        # cannot leave a weaker profile or a fixed random state behind.
        settings.load_profile("patchwarden")
        random.seed(SEED)
        self.started[item.nodeid] = time.monotonic()
        if MODE == "scorer":
            # Checked before every test too: a replacement made while one test ran and
            # undone before the session ends still shows.
            self._note_tampered(f"before {item.nodeid}")

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        # What the test function itself did, seen as it happens: an exception raised here
        # is a fail whatever report objects say about it afterwards.
        try:
            return (yield)
        except BaseException as exc:
            prop = self._prop_of(pyfuncitem) if MODE == "scorer" else None
            if prop is not None and prop not in self.raised:
                test_file = os.path.abspath(str(pyfuncitem.path))
                where = _traceback_id(exc.__traceback__, test_file)
                self.raised[prop] = f"{prop}|{type(exc).__name__}|{where}"
            raise

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if MODE == "agent":
            return report
        prop = self._prop_of(item)
        if prop is None:
            return report
        test_file = os.path.abspath(str(item.path))
        previous = self.outcomes.get(prop)
        if previous and previous[0] == "fail":
            return report  # the first failure (setup, call, teardown) is the witness
        if report.skipped and hasattr(report, "wasxfail"):
            witness = f"{prop}|XFailed|{_relpath(test_file)}"
            self._record(item, prop, "fail", witness)
        elif report.skipped:
            self._record(item, prop, "fail", f"{prop}|Skipped|{report.when}")
        elif report.failed:
            if call.excinfo is not None:
                exc_type = call.excinfo.type.__name__
                where = _assertion_id(call.excinfo, test_file)
            else:
                exc_type, where = "Failed", report.when
            if hasattr(report, "wasxfail"):
                exc_type = "XPassedStrict"
            prefix = "" if report.when == "call" else f"{report.when}:"
            self._record(item, prop, "fail", f"{prop}|{exc_type}|{prefix}{where}")
        elif report.passed and hasattr(report, "wasxfail"):
            self._record(item, prop, "fail", f"{prop}|XPassed|{_relpath(test_file)}")
        elif report.passed and report.when == "call":
            self._record(item, prop, "pass", "")
        return report

    def _record(self, item, prop, status, witness):
        if status == "pass" and prop in self.raised:
            # The report says passed, but the test function raised: something between
            # the test and its report changed the outcome.
            self.tampered.append(f"the report of {prop} said passed after the test raised")
            status, witness = "fail", self.raised[prop]
        duration = round(time.monotonic() - self.started.get(item.nodeid, time.monotonic()), 6)
        previous = self.outcomes.get(prop)
        if previous is not None:
            duration = round(previous[2] + duration, 6)
            if previous[0] == "fail":
                status, witness = previous[0], previous[1]
        self.outcomes[prop] = (status, witness, duration)

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logfinish(self, nodeid, location):
        if MODE == "agent" and nodeid in self.outcomes:
            self._emit_agent(nodeid)

    def pytest_runtest_logreport(self, report):
        if MODE != "agent":
            return
        if report.when == "call" or report.outcome != "passed":
            outcome = report.outcome
            if hasattr(report, "wasxfail"):
                outcome = "xfailed" if report.skipped else "xpassed"
            elif report.when != "call" and report.failed:
                outcome = "error"
            previous = self.outcomes.get(report.nodeid)
            if previous is None or previous[0] == "passed":
                text = report.longreprtext[-AGENT_TEXT_CHARS:] if report.failed else ""
                self.outcomes[report.nodeid] = (outcome, text, round(report.duration, 6))

    def _emit_agent(self, nodeid):
        outcome, text, duration = self.outcomes.pop(nodeid)
        _emit({"test": nodeid, "outcome": outcome, "text": text, "duration_s": duration})

    def pytest_sessionfinish(self, session, exitstatus):
        if MODE != "agent":
            return  # the scorer's rows are built after the session (scorer_payload)
        for node in list(self.outcomes):
            self._emit_agent(node)
        _emit({SENTINEL: True, "seed": SEED, "exitstatus": int(exitstatus), "shadowed": []})

    def scorer_payload(self, exitstatus):
        """Every scheduled property's row in contract order, the canaries after them, and
        what was tampered with: what the signer authenticates. Built once, after the
        session: a process that dies, is killed or leaves early has no rows at all."""
        schedule = [(prop, node) for node, prop in self.by_node.items()]
        schedule += [(prop, f"{path}::{name}") for prop, path, name in self.canaries]
        rows = []
        for prop, node in schedule:
            # Scheduled but never reported (not collected, or the session stopped first)
            # is a fail, never a pass.
            status, witness, duration = self.outcomes.get(
                prop, ("fail", f"{prop}|NotRun|{node}", 0.0)
            )
            rows.append(
                {
                    "prop": prop,
                    "seed": SEED,
                    "status": status,
                    "witness": witness,
                    "duration_s": duration,
                    "settings": self.fingerprints.get(prop, ""),
                }
            )
        self._note_tampered("at the end")
        shadowed = _machinery_shadowed() + self.tampered
        return {"rows": rows, "end": {"exitstatus": int(exitstatus), "shadowed": shadowed}}


def _machinery_shadowed():
    shadowed = sorted(
        name
        for name, path in MACHINERY_FILES.items()
        if path is None
        or path.startswith(TREE + os.sep)
        or sys.modules.get(name) is None
        or getattr(sys.modules[name], "__file__", None) != path
    )
    custom = sys.modules.get("sitecustomize") or sys.modules.get("usercustomize")
    if custom is not None and str(getattr(custom, "__file__", "")).startswith(TREE + os.sep):
        shadowed.append("sitecustomize")
    return shadowed


def _fingerprint(chosen):
    """The settings a Hypothesis test runs with, as text the scorer compares
    between parent and patch (the test files are the same; the settings must be)."""
    keys = (
        "max_examples",
        "derandomize",
        "database",
        "deadline",
        "phases",
        "suppress_health_check",
        "stateful_step_count",
        "report_multiple_bugs",
    )
    return ";".join(f"{k}={getattr(chosen, k, None)!r}" for k in keys)


def _quiet_signals():
    """No Python signal handler may run once the session is over: a handler receives the
    frame it interrupts, and the rows are being handed to the signer."""
    for number in signal.valid_signals():
        with contextlib.suppress(OSError, ValueError, TypeError):
            if callable(signal.getsignal(number)):
                signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())


def _test_path(node):
    """A target's file as a pytest argument: relative to the tree (the working directory),
    or absolute under the spec root kept apart from it."""
    path = node.split("::", 1)[0]
    return path if SPEC_ROOT == TREE else os.path.join(SPEC_ROOT, path)


def main():
    basetemp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "pw-basetemp")
    ini = os.path.join(os.environ.get("TMPDIR", "/tmp"), "pw-pytest.ini")
    args = list(PYTEST_ARGS)
    if MODE == "scorer":
        with open(ini, "w") as handle:
            handle.write("[pytest]\naddopts =\nxfail_strict = false\n")
        args = [
            "-c",
            ini,
            "--rootdir",
            SPEC_ROOT,
            "--confcutdir",
            SPEC_ROOT,
            "-p",
            "no:cacheprovider",
            # Both keep pytest's Config in a module global while a test runs (pytestPDB,
            # _pytest.assertion.util): from there product code could reach every object of
            # the session, the runner's included. Witnesses do not depend on them.
            "-p",
            "no:debugging",
            "-p",
            "no:assertion",
            "-p",
            "_hypothesis_pytestplugin",
            "--basetemp",
            basetemp,
            f"--hypothesis-seed={SEED}",
            # A module that fails to import leaves its properties not run (a fail); the
            # others, and the canaries, still run.
            "--continue-on-collection-errors",
            "-q",
            "--tb=short",
            "-o",
            "console_output_style=classic",
            "--no-header",
            *sorted({_test_path(node) for _, node in TARGETS}),
            # The canaries last: whatever product code changes during the session, they
            # are collected and run after it.
            *dict.fromkeys(path for _, path, _ in CANARIES),
        ]
    reporter = Reporter(CANARIES)
    reporter.watched = _watched()
    code = pytest.main(args, plugins=[reporter])
    if MODE == "agent":
        _report.close()
        sys.exit(int(code))
    _quiet_signals()
    payload = reporter.scorer_payload(int(code))  # noqa: F841 (the signer reads this frame)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os.write(_END_REQUEST, b"G")
    # The signer writes the rows and ends the process with the run's status; this frame
    # must stay the top of the main thread meanwhile (the signer checks it).
    select.select([_PARK], [], [], PARK_TIMEOUT_S)
    os._exit(1)  # the signer never came: no end marker, a wrong status, the run is forged


# -- scorer mode: the signer and the audit hook (docs/design/runner.md) -------------------------


def _signer(secret_fd, end_fd, channel_fd, ready, canaries_out, main_ident, main_code, top_code):
    """The signer thread. Reads the run's secret, then waits for the runner's end request;
    authenticates the runner's rows and ends the process with the run's exit status.

    Everything it uses is bound to a local before the tree is importable, so replacing a
    module attribute later changes nothing here. The key and the exit status exist only in
    this frame, which is the outermost frame of its thread: no signal handler runs here
    (they run on the main thread), and the audit hook refuses every way to reach another
    thread's frame (sys._current_frames, gc, tracing, ctypes) to everyone but this frame.
    """
    import _hashlib
    import _json
    import math
    import types

    read, write, close, exit_now = os.read, os.write, os.close, os._exit
    frames_of = sys._current_frames
    digest = _hashlib.hmac_digest
    quote = _json.encode_basestring_ascii
    frame_type, type_, sorted_, finite = types.FrameType, type, sorted, math.isfinite
    str_, int_, float_, bool_, list_, tuple_, dict_ = str, int, float, bool, list, tuple, dict
    int_repr, float_repr, hexlify, encode = int.__repr__, float.__repr__, bytes.hex, str.encode
    join_text, join_bytes, items, get = str.join, bytes.join, dict.items, dict.get
    enumerate_, len_, os_error, suppress = enumerate, len, OSError, contextlib.suppress
    any_error = BaseException

    def say(text):
        """An unauthenticated line on the channel: the host treats the run as forged."""
        with suppress(os_error):
            write(channel_fd, b"signer: " + text + b"\n")

    def canon(value):
        """JSON text of the runner's rows using only functions bound above."""
        kind = type_(value)
        if kind is str_:
            return quote(value)
        if kind is bool_:
            return "true" if value else "false"
        if kind is int_:
            return int_repr(value)
        if kind is float_:
            return float_repr(value) if finite(value) else "0.0"
        if value is None:
            return "null"
        if kind is list_ or kind is tuple_:
            return "[" + join_text(",", [canon(v) for v in value]) + "]"
        if kind is dict_:
            pairs = [(k, v) for k, v in items(value) if type_(k) is str_]
            body = [quote(k) + ":" + canon(v) for k, v in sorted_(pairs)]
            return "{" + join_text(",", body) + "}"
        return quote("<unserializable>")

    try:
        raw = b""
        while chunk := read(secret_fd, 4096):
            raw += chunk
        close(secret_fd)
        key = raw[:SECRET_KEY_BYTES]
        spec = json.loads(raw[SECRET_KEY_BYTES + 1 :])
        exit_status = int_(spec["exit"])
        canaries_out.extend(tuple_(c) for c in spec["canaries"])
        del raw, spec
    except Exception:
        say(b"the run's secret could not be read")
        return
    finally:
        ready.release()

    def line(body):
        data = encode(canon(body), "ascii")
        return encode(hexlify(digest(key, data, "sha256")), "ascii") + b" " + data + b"\n"

    noticed = set()  # say each kind of trouble once, however often it happens

    def once(text):
        if text not in noticed:
            noticed.add(text)
            say(text)

    try:
        while True:
            request = read(end_fd, 1)
            if request == b"":
                say(b"the end request pipe closed before the runner asked")
                return
            if request != b"G":
                once(b"unexpected byte on the end request pipe")
                continue
            top = get(frames_of(), main_ident)
            if (
                type_(top) is not frame_type
                or top.f_code is not main_code
                or top.f_back is None
                or top.f_back.f_code is not top_code
                or top.f_back.f_back is not None
            ):
                once(b"the end was requested while the runner was not at its end")
                continue
            payload = get(top.f_locals, "payload")
            break
        rows = get(payload, "rows") if type_(payload) is dict_ else None
        end = get(payload, "end") if type_(payload) is dict_ else None
        if type_(rows) is not list_ or type_(end) is not dict_:
            say(b"the runner's rows are malformed")
            return
        lines = [line({"seq": seq, "row": row}) for seq, row in enumerate_(rows)]
        end_body = dict_(end)
        end_body["rows"] = len_(lines)
        lines.append(line({"seq": len_(lines), "end": end_body}))
        data = join_bytes(b"", lines)
        while data:
            data = data[write(channel_fd, data) :]
    except any_error:
        say(b"failed while signing")
        return
    exit_now(exit_status)


def _arm(channel_fd, signer_ident, signer_code, interpreter_dirs):
    """Install the audit hook (PEP 578; nothing removes it). See docs/design/runner.md,
    "Out of reach", for each rule and each exception to it.

    The hook reads frames only inside a per-thread window in which it calls nothing but C
    functions and frame attributes, so no other code runs there; its own frame reads are
    the only events let through unchecked, and only inside that window. Whatever may run
    other code (reading a path object, checking a module's file, installing a guarded
    signal handler) happens outside the window, where every event is judged in full.
    """
    import _imp
    import _signal
    import gc
    import importlib._bootstrap
    import importlib._bootstrap_external
    import importlib.machinery
    import importlib.util
    import inspect
    import logging
    import marshal
    import pathlib
    import stat
    import traceback
    import types

    import hypothesis.internal.entropy
    import hypothesis.internal.reflection

    # Bound once, here: product code that later replaces a module attribute changes
    # nothing the hook calls.
    getframe, get_ident, write, audit = sys._getframe, _thread.get_ident, os.write, sys.audit
    code_type, function_type = types.CodeType, types.FunctionType
    lstat, readlink, getcwd, is_link = os.lstat, os.readlink, os.getcwd, stat.S_ISLNK
    stat_, pure_str = os.stat, pathlib.PurePath.__str__
    pure_types = (pathlib.PosixPath, pathlib.PurePosixPath)
    open_fd, read_fd, close_fd, compile_, loads = os.open, os.read, os.close, compile, marshal.loads
    cache_from_source, magic = importlib.util.cache_from_source, importlib.util.MAGIC_NUMBER
    fix_filename, module_spec = _imp._fix_co_filename, importlib.machinery.ModuleSpec
    from_bytes, spec_attrs = int.from_bytes, vars(importlib.machinery.ModuleSpec)
    refused_error, type_, str_, bytes_, int_, id_ = RuntimeError, type, str, bytes, int, id
    join_text, join_bytes, isinstance_, len_, vars_ = str.join, bytes.join, isinstance, len, vars
    set_, frozenset_, list_, memoryview_ = set, frozenset, list, memoryview
    os_error, value_error, suppress, read_only = (
        OSError,
        ValueError,
        contextlib.suppress,
        os.O_RDONLY,
    )
    bad_code = (OSError, SyntaxError, ValueError, EOFError, TypeError)
    proc_words, refusals_written = PATHS_UNDER_PROC, REFUSALS_WRITTEN

    def codes_in(roots):
        """Every code object reachable from ``roots`` through constants (nested functions,
        lambdas, comprehensions), by id; kept alive so no id is ever reused."""
        found, todo = {}, list_(roots)
        while todo:
            code = todo.pop()
            if id_(code) in found:
                continue
            found[id_(code)] = code
            todo.extend(c for c in code.co_consts if type_(c) is code_type)
        return found

    # Trusted code: every function that exists now, before the tree is importable (the
    # machinery, the standard library, this runner), and modules imported later from the
    # interpreter's read-only directories once their code is verified against the file.
    kept = codes_in(f.__code__ for f in gc.get_objects() if type_(f) is function_type)
    trusted = frozenset(kept)

    def code_id(obj):
        """The id of a function's (or a property's getter's) code; None if it has none."""
        target = getattr(obj, "fget", None) or obj
        code = getattr(target, "__code__", None)
        return id_(code) if type_(code) is code_type else None

    def nested_id(function, name):
        """The id of the code of a function defined inside ``function``."""
        inner = [c for c in codes_in([function.__code__]).values() if c.co_name == name]
        return id_(inner[0]) if len(inner) == 1 else None

    def ids(*candidates):
        return frozenset_(c for c in candidates if c is not None)

    # Trusted functions that hand a frame (or a traceback's frame) to their caller: the
    # caller decides. See docs/design/runner.md for the list and why.
    passthrough = ids(
        *map(
            code_id,
            (
                inspect.currentframe,
                inspect.stack,
                inspect.trace,
                inspect.getouterframes,
                inspect.getinnerframes,
                logging.currentframe,
                traceback.walk_stack,
                traceback.walk_tb,
                _pytest._code.code.TracebackEntry.frame,
            ),
        )
    )
    compile_bytecode = importlib._bootstrap_external._compile_bytecode.__code__
    frames_removed = importlib._bootstrap._call_with_frames_removed.__code__
    # Trusted code that edits code objects: only their names, flags and line numbers.
    code_editors = ids(
        code_id(types.coroutine),
        nested_id(hypothesis.internal.reflection.impersonate, "accept"),
    )
    # A Python signal handler receives the frame it interrupts, and CPython raises no audit
    # event when one is installed. _signal.signal and _imp.create_builtin (which could make
    # a fresh _signal module) are replaced by guards that ask this hook; the originals stay
    # in this closure only. A handler that runs no Python code (SIG_DFL, SIG_IGN,
    # default_int_handler) is installed; any other is refused.
    original_signal, original_create = _signal.signal, _imp.create_builtin
    getsignal, quiet_handler = _signal.getsignal, _signal.default_int_handler

    def guarded_signal(signalnum, handler, /):
        previous = getsignal(signalnum)
        audit("patchwarden.signal", signalnum, handler)
        return previous

    def guarded_create_builtin(spec, /):
        made = []
        audit("patchwarden.create_builtin", spec, made)
        return made[0]

    guard_codes = ids(code_id(guarded_signal), code_id(guarded_create_builtin))
    # Primitives that reach another thread's frames or the process's memory: only the
    # named callers may use them (an empty set: nobody once the tree is importable).
    critical = {
        "sys._current_frames": frozenset(),
        "sys._current_exceptions": frozenset(),
        "gc.get_objects": frozenset(),
        "gc.get_referents": frozenset(),
        "gc.get_referrers": ids(code_id(hypothesis.internal.entropy.register_random)),
        "sys.settrace": frozenset(),
        "sys.setprofile": frozenset(),
        "sys.addaudithook": frozenset(),
        "sys.monitoring.register_callback": frozenset(),
        "code.__new__": code_editors,
        "object.__setattr__": code_editors,
        "marshal.loads": frozenset({id_(compile_bytecode)}),
        "marshal.load": frozenset(),
        **{name: frozenset() for name in CTYPES_EVENTS},
        "ctypes.*": frozenset(),
    }
    # Code surgery and bytecode can read any memory, but the project's own code may need
    # them (jinja2 renames code objects to fake its template tracebacks): observed, not
    # refused, like frame reads; the scorer rejects them in code the patch changed.
    observed_only = {
        "code.__new__": "",
        "object.__setattr__": " .__code__",
        "marshal.loads": "",
        "marshal.load": "",
    }
    frame_attrs = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_code"})
    path_events = frozenset({"open", "os.listdir", "os.scandir", "os.chdir", "os.symlink"})
    forbidden_modules = frozenset(
        {"_testcapi", "_testinternalcapi", "_testbuffer", "_ctypes_test", "_xxsubinterpreters"}
    )
    guard_events = frozenset({"patchwarden.signal", "patchwarden.create_builtin"})
    watched = frozenset(
        {
            *critical,
            *path_events,
            *guard_events,
            "sys._getframe",
            "function.__new__",
            "object.__getattr__",
            "exec",
            "import",
        }
    )
    frame_reads = frozenset({"sys._getframe", "object.__getattr__"})
    window = set()  # threads whose hook is reading frames (nothing but C runs there)
    written = 0
    observed = set()  # sites already written as observed (one line per site and run)

    # -- inside the window: frames only ---------------------------------------------------

    def is_trusted(frame):
        return id_(frame.f_code) in trusted

    def caller_trusted(frame):
        while frame is not None and id_(frame.f_code) in passthrough:
            frame = frame.f_back
        return frame is None or is_trusted(frame)

    def stack_trusted(frame):
        while frame is not None:
            if not is_trusted(frame):
                return False
            frame = frame.f_back
        return True

    def asker(frame):
        """The first untrusted frame from ``frame`` up: the code that asked."""
        asked = frame
        while asked is not None and is_trusted(asked):
            asked = asked.f_back
        return asked or frame

    def where(frame):
        asked = asker(frame)
        if asked is None:
            return "no Python caller"
        code = asked.f_code
        return f"{code.co_filename}:{asked.f_lineno} ({code.co_name})"

    def site(frame):
        """Where an observation was made (file:line (function)): the scorer compares it,
        with the line's text, to the parent's observations."""
        return where(frame)

    def judge(event, facts, frame):
        """What to do: None (let it happen), ("refuse", detail, where) or another action
        carried out outside the window. ``event`` and ``facts`` were reduced to plain str,
        int, bool and code objects before the window opened (see ``facts_of``)."""
        if event in guard_events:
            if frame is None or id_(frame.f_code) not in guard_codes:
                return ("refuse", " not from its guard", where(frame))
            if event == "patchwarden.create_builtin" or facts:
                return (event,)
            return ("refuse", " with a Python handler", where(frame.f_back))
        if get_ident() == signer_ident:
            # The signer's thread: only the signer's own outermost frame may use anything.
            if frame is not None and frame.f_code is signer_code and frame.f_back is None:
                return None
            return ("refuse", " on the signer's thread", where(frame))
        if event in critical:
            if frame is not None and id_(frame.f_code) in critical[event]:
                if frame.f_code is compile_bytecode:
                    seen = f"{event} of bytecode that is not the interpreter's from {site(frame)}"
                    return ("check_pyc", frame.f_locals.get("bytecode_path"), seen)
                return None
            if event in observed_only:
                return ("observe", f"{event}{observed_only[event]} from {site(frame)}")
            return ("refuse", "", where(frame))
        if event in frame_reads:
            if caller_trusted(frame):
                return None
            # The project's own code may read frames (jinja2 rewrites its tracebacks): the
            # read is observed, not refused, and the scorer compares it with the parent's.
            detail = f" .{facts}" if facts else ""
            return ("observe", f"{event}{detail} from {site(frame)}")
        if event == "function.__new__" or event == "exec":
            if facts is not None and id_(facts) in trusted and not caller_trusted(frame):
                return ("observe", f"{event} of trusted code from {site(frame)}")
            if event == "exec" and facts is not None and frame is not None:
                return ("check_module",) if frame.f_code is frames_removed else None
            return None
        if event in path_events:
            if facts is not None and not stack_trusted(frame):
                return ("refuse", f" {facts!r}", where(frame))
            return None
        if event == "import" and facts in forbidden_modules:
            return ("refuse", f" {facts}", where(frame))
        return None

    # -- outside the window -------------------------------------------------------------

    shown_as = {"patchwarden.signal": "signal.signal", "patchwarden.create_builtin": "_imp"}

    def refuse(event, detail, asked):
        nonlocal written
        event = shown_as.get(event, event)
        if written < refusals_written:
            written += 1
            text = f"refused: {event}{detail} from {asked}\n"
            with suppress(os_error):
                write(channel_fd, text.encode("utf-8", "replace"))
        raise refused_error(f"patchwarden: {event} is refused in the scorer's runner")

    def text_of(path):
        kind = type_(path)
        if kind is str_ or isinstance_(path, str_):
            return join_text("", (path,))
        if kind is bytes_ or isinstance_(path, bytes_):
            return join_bytes(b"", (path,)).decode("utf-8", "surrogateescape")
        if kind in pure_types:
            return pure_str(path)
        return None  # a descriptor, or an object whose path we cannot read without running it

    def resolve(path):
        """``path`` with every symbolic link followed (os.path.realpath, on bound functions)."""
        result, pending, hops = "", path.split("/")[::-1], 0
        while pending:
            name = pending.pop()
            if name in ("", "."):
                continue
            if name == "..":
                result = result.rsplit("/", 1)[0]
                continue
            candidate = result + "/" + name
            try:
                is_symlink = is_link(lstat(candidate).st_mode)
            except os_error:
                is_symlink = False
            if not is_symlink or hops > 40:
                result = candidate
                continue
            hops += 1
            target = readlink(candidate)
            if target.startswith("/"):
                result = ""
            pending.extend(target.split("/")[::-1])
        return result or "/"

    def under_proc(path):
        """The text of ``path`` if it leads into a process's /proc entries (its memory,
        descriptors, ...), else None."""
        text = text_of(path)
        if not text:
            return None
        parts = text.split("/")
        if "mem" in parts or (not text.startswith("/") and proc_words & set_(parts)):
            return text
        absolute = text if text.startswith("/") else getcwd() + "/" + text
        real = resolve(absolute).split("/")
        if len_(real) < 3 or real[1] != "proc":
            return None
        return text if real[2] in ("self", "thread-self") or real[2].isdigit() else None

    def file_bytes(path):
        fd = open_fd(path, read_only)
        try:
            chunks = []
            while chunk := read_fd(fd, 1 << 20):
                chunks.append(chunk)
            return join_bytes(b"", chunks)
        finally:
            close_fd(fd)

    def pyc_matches(path, data):
        """marshal.loads in importlib: is ``data`` the interpreter's own cached bytecode?"""
        if type_(path) is not str_ or not path.startswith(interpreter_dirs):
            return False
        # Only immutable data: what is compared is what marshal reads.
        if type_(data) is memoryview_ and type_(data.obj) is bytes_:
            data = bytes_(data)
        return type_(data) is bytes_ and data == file_bytes(path)[16:]

    def genuine_module_code(path):
        """The code importlib would build from ``path``: the cached bytecode when it is
        current (same checks as importlib), else a fresh compile of the source."""
        source = file_bytes(path)
        try:
            cached = file_bytes(cache_from_source(path))
            st = stat_(path)
            stamp = (int_(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF)
            header = (from_bytes(cached[8:12], "little"), from_bytes(cached[12:16], "little"))
            if cached[:4] == magic and cached[4:8] == b"\0\0\0\0" and header == stamp:
                code = loads(cached[16:])
                fix_filename(code, path)
                return code
        except bad_code:
            pass
        return compile_(source, path, "exec", dont_inherit=True)

    def trust_module(code):
        """A module importlib executes from the interpreter's directories: trust its
        functions if its code is exactly what the file holds."""
        nonlocal trusted
        path = code.co_filename
        if code.co_name != "<module>" or type_(path) is not str_:
            return
        if not path.startswith(interpreter_dirs):
            return
        try:
            genuine = genuine_module_code(path)
        except bad_code:
            return
        if genuine == code:
            found = codes_in([code])
            kept.update(found)
            trusted = trusted | frozenset_(found)

    def plain_spec(spec):
        """A ModuleSpec whose name C reads without running any other code."""
        return (
            type_(spec) is module_spec
            and "name" not in spec_attrs
            and type_(vars_(spec).get("name")) is str_
        )

    def disarm(module):
        """A builtin module made anew has fresh functions: guard them too."""
        namespace = vars_(module)
        name = namespace.get("__name__")
        for attr, original, guard in (
            ("signal", original_signal, guarded_signal),
            ("create_builtin", original_create, guarded_create_builtin),
        ):
            value = namespace.get(attr)
            if name == original.__self__.__name__ and type_(value) is type_(original):
                namespace[attr] = guard

    def observe(text):
        if text in observed or len_(observed) >= refusals_written:
            return
        observed.add(text)
        with suppress(os_error):
            write(channel_fd, f"observed: {text}\n".encode("utf-8", "replace"))

    def carry_out(event, args, action):
        kind = action[0]
        if kind == "refuse":
            refuse(event, action[1], action[2])
        elif kind == "observe":
            observe(action[1])
        elif kind == "check_pyc":
            if not pyc_matches(action[1], args[0]):
                observe(action[2])
        elif kind == "check_module":
            trust_module(args[0])
        elif kind == "patchwarden.signal":
            original_signal(args[0], args[1])
        elif kind == "patchwarden.create_builtin":
            if not plain_spec(args[0]):
                refuse(event, " for a spec that is not a plain ModuleSpec", "importlib")
            module = original_create(args[0])
            disarm(module)
            args[1].append(module)

    # The hook's own check of a module's cached bytecode unmarshals it too.
    critical["marshal.loads"] |= {id_(genuine_module_code.__code__)}

    def plain(value):
        """``value`` as an exact str when it is a str of any kind, else None."""
        return join_text("", (value,)) if isinstance_(value, str_) else None

    def facts_of(event, args):
        """What ``judge`` needs from the event's arguments, reduced here (outside the
        window) to values whose comparison runs no other code."""
        if event in path_events:
            return under_proc(args[0])
        if event == "object.__getattr__":
            return plain(args[1])
        if event == "function.__new__" or event == "exec":
            return args[0] if type_(args[0]) is code_type else None
        if event == "import":
            return plain(args[0])
        if event == "patchwarden.signal":
            return type_(args[1]) is int_ or args[1] is quiet_handler
        return None

    def hook(event, args):
        if event not in watched and event[:7] != "ctypes.":
            return
        event = plain(event)
        if event == "object.__getattr__" and plain(args[1]) not in frame_attrs:
            return
        if event == "object.__setattr__" and plain(args[1]) != "__code__":
            return
        if event not in critical and event[:7] == "ctypes.":
            event = "ctypes.*"  # judged as critical, nobody allowed
        thread = get_ident()
        if thread in window:
            return  # the hook's own frame reads: nothing else runs in the window
        facts = facts_of(event, args)
        window.add(thread)
        try:
            try:
                frame = getframe(1)
            except value_error:  # called from C with no Python frame on this thread
                frame = None
            action = judge(event, facts, frame)
        finally:
            window.discard(thread)
        if action is not None:
            carry_out(event, args, action)

    sys.addaudithook(hook)
    guards = {original_signal: guarded_signal, original_create: guarded_create_builtin}
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if type_(namespace) is not dict:
            continue
        for name, value in list(namespace.items()):
            if value is original_signal or value is original_create:
                namespace[name] = guards[value]


CTYPES_EVENTS = (
    "ctypes.addressof", "ctypes.call_function", "ctypes.cdata", "ctypes.cdata/buffer",
    "ctypes.create_string_buffer", "ctypes.create_unicode_buffer", "ctypes.dlopen",
    "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.get_errno", "ctypes.get_last_error",
    "ctypes.PyObj_FromPtr", "ctypes.seh_exception", "ctypes.set_errno",
    "ctypes.set_exception", "ctypes.set_last_error", "ctypes.string_at", "ctypes.wstring_at",
)  # fmt: skip


def _undumpable():
    """prctl(PR_SET_DUMPABLE, 0): /proc/<pid>/mem and friends of this process belong to root
    from now on, so neither it nor any other process of the sandbox uid can open them."""
    import ctypes

    pr_set_dumpable = 4
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(pr_set_dumpable, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def _interpreter_dirs():
    """The read-only directories the interpreter imports from (sys.path before the tree).

    Read-only is what counts, not where: a runtime mounted under /tmp (a virtualenv in a
    checkout there) is a read-only bind like /usr, while a directory this process may write
    (the tmpfs /tmp, the home) could hold bytecode that product code planted."""
    dirs = []
    for entry in sys.path:
        if not entry or not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry)
        if real == TREE or real.startswith(TREE + os.sep) or not os.path.isdir(real):
            continue
        if os.access(real, os.W_OK):
            continue
        dirs.append(real.rstrip("/") + "/")
    return tuple(dirs)


STDLIB_BEFORE = {
    name: getattr(module, "__file__", None) for name, module in list(sys.modules.items())
}
CANARIES = []
if MODE == "scorer":
    # Before anything of the tree is importable: the signer takes the secret, the process
    # becomes non-dumpable, the audit hook goes in.
    _undumpable()
    # asyncio.run installs its own SIGINT handler only over Python's default one; nobody
    # interrupts a scorer run from a keyboard.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    _END_FROM_SIGNER, _END_REQUEST = os.pipe()
    _PARK, _PARK_WRITE = os.pipe()
    _ready = _thread.allocate_lock()
    _ready.acquire()
    _canaries = []
    _SIGNER = _thread.start_new_thread(
        _signer,
        (
            int(OPTS["secret-fd"]),
            _END_FROM_SIGNER,
            CHANNEL_FD,
            _ready,
            _canaries,
            _thread.get_ident(),
            main.__code__,
            sys._getframe().f_code,
        ),
    )
    if not _ready.acquire(timeout=SIGNER_START_S):
        os._exit(1)
    CANARIES = [tuple(c) for c in _canaries]
    del _ready, _canaries
    _arm(CHANNEL_FD, _SIGNER, _signer.__code__, _interpreter_dirs())
# The project's code comes from the tree, ahead of anything the interpreter has installed.
sys.path[0:0] = _tree_paths()
main()

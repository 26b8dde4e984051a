"""The trusted reporting plugin and bootstrap, run INSIDE the sandbox.

This file is executed as a program read from stdin (``python -s -P - ...``) so
that nothing in the tree can shadow it: it never imports patchwarden. It
imports the test machinery (pytest, _pytest, pluggy, hypothesis) from the
scorer's interpreter *before* the tree is put on ``sys.path``, forces the
Hypothesis profile, seeds every source of randomness, and writes one JSON
record per scheduled property to an inherited file descriptor, then a
sentinel. stdout/stderr and the exit code never decide a status.

Arguments: ``--report-fd N --seed S --mode scorer|agent --targets JSON [--layout LAYOUT]
[--spec-root DIR] -- [pytest args]`` where JSON is ``[[prop_id, node_id], ...]`` (agent
mode: ``[]``), LAYOUT is ``{"roots": [...], "packages": [...]}``: the tree's import roots,
in sys.path order, and the project's own import names (sandbox/_layout.py), and DIR, in
scorer mode, the directory the node ids are relative to (default: the tree, the working
directory; another one holds tests kept apart from the tree).
"""

import contextlib
import json
import os
import random
import sys
import time

SENTINEL = "__patchwarden_sentinel__"
MACHINERY = ("pytest", "_pytest", "pluggy", "hypothesis")
AGENT_TEXT_CHARS = 4000  # enough of a traceback to act on, bounded per test


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
_report = os.fdopen(os.dup(int(OPTS["report-fd"])), "w", buffering=1)
os.close(int(OPTS["report-fd"]))

# Everything the runner relies on is imported from the interpreter BEFORE the
# tree is put on sys.path, so a module of the same name in the tree cannot
# take its place: the machinery, the Hypothesis pytest plugin we pass with
# -p, and the standard-library modules pytest imports lazily (pdb & co).
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
    from hypothesis import settings
else:
    settings = _hypothesis_on_demand()

STDLIB_PRELOAD = (
    "pdb", "cmd", "code", "codeop", "bdb", "readline", "rlcompleter", "xml.dom",
    "unittest", "doctest", "difflib", "pprint", "inspect", "shlex", "fnmatch",
)  # fmt: skip
for _name in STDLIB_PRELOAD:
    with contextlib.suppress(ImportError):  # an interpreter built without it: nothing to shadow
        __import__(_name)

MACHINERY_FILES = {name: sys.modules[name].__file__ for name in MACHINERY if name in sys.modules}

settings.register_profile(
    "patchwarden", database=None, deadline=None, derandomize=False, print_blob=False
)
settings.load_profile("patchwarden")
random.seed(SEED)
STDLIB_BEFORE = {
    name: getattr(module, "__file__", None) for name, module in list(sys.modules.items())
}


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


# The project's code comes from the tree, ahead of anything the interpreter has installed.
sys.path[0:0] = _tree_paths()


def _watched():
    """Objects product code must not replace: the pytest and Hypothesis entry
    points the runner trusts, the reporter's own functions, random, os._exit.
    Compared by identity after collection and at the end (static lookups, so
    a descriptor cannot lie about what is stored)."""
    import inspect

    static = inspect.getattr_static
    main = sys.modules.get("__main__")
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
        "__main__._emit": (main, "_emit"),
        "__main__.Reporter": (main, "Reporter"),
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
    session.items[:] = []  # nothing runs against the wrong code


def _emit(obj):
    _report.write(json.dumps(obj, sort_keys=True) + "\n")
    _report.flush()


def _relpath(path):
    path = str(path)
    if path.startswith(TREE + os.sep):
        return path[len(TREE) + 1 :]
    return os.path.basename(path)


def _assertion_id(excinfo, test_file):
    """file:line of the failing frame in the spec file, else the last tree frame."""
    fallback = "?"
    tb = excinfo.tb
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

    def __init__(self):
        self.watched = None  # taken once the reporter's own module is complete
        self.tampered = []
        self.fingerprints = {}  # prop -> the Hypothesis settings its test ran with
        self.by_node = {node: prop for prop, node in TARGETS}
        self.outcomes = {}  # scorer: prop -> (status, witness, duration); agent: node id -> ...
        self.started = {}

    def _prop_of(self, nodeid):
        """The property a collected item checks: its node id, or a parametrized case of it."""
        prop = self.by_node.get(nodeid)
        if prop is None and "[" in nodeid:
            prop = self.by_node.get(nodeid.split("[", 1)[0])
        return prop

    def pytest_collection_modifyitems(self, session, config, items):
        if MODE != "scorer":
            return
        # Select here, not with node ids on the command line: one unknown id
        # there would abort the whole session; here it just never runs.
        keep = [item for item in items if self._prop_of(item.nodeid) is not None]
        dropped = [item for item in items if self._prop_of(item.nodeid) is None]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = keep

    @pytest.fixture
    def contract_seed(self):
        return SEED

    def pytest_collection_finish(self, session):
        # Product code has been imported by now (test modules import it).
        self.tampered += [f"{n} (after collection)" for n in _tampered(self.watched)]
        _refuse_foreign_code(self, session)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item):
        prop = self._prop_of(item.nodeid)
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

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if MODE == "agent":
            return report
        prop = self._prop_of(item.nodeid)
        if prop is None:
            return report
        test_file = os.path.abspath(str(item.path))
        previous = self.outcomes.get(prop)
        if previous and previous[0] == "fail":
            return report  # the first failure (setup, call, teardown) is the witness
        if report.skipped and hasattr(report, "wasxfail"):
            witness = f"{prop}|XFailed|{_relpath(test_file)}"
            self._record(item, "fail", witness)
        elif report.skipped:
            self._record(item, "fail", f"{prop}|Skipped|{report.when}")
        elif report.failed:
            if call.excinfo is not None:
                exc_type = call.excinfo.type.__name__
                where = _assertion_id(call.excinfo, test_file)
            else:
                exc_type, where = "Failed", report.when
            if hasattr(report, "wasxfail"):
                exc_type = "XPassedStrict"
            prefix = "" if report.when == "call" else f"{report.when}:"
            self._record(item, "fail", f"{prop}|{exc_type}|{prefix}{where}")
        elif report.passed and hasattr(report, "wasxfail"):
            self._record(item, "fail", f"{prop}|XPassed|{_relpath(test_file)}")
        elif report.passed and report.when == "call":
            self._record(item, "pass", "")
        return report

    def _record(self, item, status, witness):
        prop = self._prop_of(item.nodeid)
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
        for node in list(self.outcomes) if MODE == "agent" else []:
            self._emit_agent(node)
        for node, prop in self.by_node.items() if MODE == "scorer" else ():
            # Written once, at the end, in schedule order: a process that dies
            # early leaves every row missing. Scheduled but never reported (not
            # collected, or the session stopped first) is a fail, never a pass.
            status, witness, duration = self.outcomes.get(
                prop, ("fail", f"{prop}|NotRun|{node}", 0.0)
            )
            _emit(
                {
                    "prop": prop,
                    "seed": SEED,
                    "status": status,
                    "witness": witness,
                    "duration_s": duration,
                    "settings": self.fingerprints.get(prop, ""),
                }
            )
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
        if MODE == "scorer":
            shadowed += self.tampered + [f"{n} (at the end)" for n in _tampered(self.watched)]
        _emit({SENTINEL: True, "seed": SEED, "exitstatus": int(exitstatus), "shadowed": shadowed})


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
            "-p",
            "_hypothesis_pytestplugin",
            "--basetemp",
            basetemp,
            f"--hypothesis-seed={SEED}",
            "-q",
            "--tb=short",
            "-o",
            "console_output_style=classic",
            "--no-header",
            *sorted({_test_path(node) for _, node in TARGETS}),
        ]
    reporter = Reporter()
    reporter.watched = _watched()
    code = pytest.main(args, plugins=[reporter])
    _report.close()
    sys.exit(int(code))


main()

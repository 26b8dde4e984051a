"""The trusted reporting plugin and bootstrap, run INSIDE the sandbox.

This file is executed as a program read from stdin (``python -s -P - ...``) so
that nothing in the tree can shadow it: it never imports patchwarden. It
imports the test machinery (pytest, _pytest, pluggy, hypothesis) from the
scorer's interpreter *before* the tree is put on ``sys.path``, forces the
Hypothesis profile, seeds every source of randomness, and reports one record
per scheduled property. stdout/stderr never decide a status.

Arguments: ``--report-fd N --seed S --mode scorer|agent --targets JSON [--layout LAYOUT]
[--pytest WORLD] [--secret-fd M] [--random-seed R] [--spec-root DIR] -- [pytest args]``
where JSON is ``[[prop_id, node_id], ...]`` (agent mode: ``[]``); R is what ``random`` is
seeded with (a scored run's secret draw, sandbox/_entropy.py; default the contract's seed S,
the properties' Hypothesis seed); LAYOUT is ``{"roots": [...], "packages": [...]}``: the
tree's import roots, in sys.path order, and the project's own import names
(sandbox/_layout.py); DIR, in scorer mode, is the directory the node ids are relative to
(default: the tree, the working directory; another one holds tests kept apart from the
tree); WORLD is the project's pytest configuration as the run applies it
(sandbox/_pytest_runner.py ``pytest_world``): ``{"ini": {...}, "addopts": [...], "profile":
NAME|null, "rootdir": DIR, "plugins": [...], "plugin_modules": [...]}``.

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

from __future__ import annotations

import contextlib
import json
import os
import random
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._paths import tree_paths

SENTINEL = "__patchwarden_sentinel__"  # = _pytest_runner.SENTINEL (tests/test_reporter.py)
MACHINERY = ("pytest", "_pytest", "pluggy", "hypothesis")  # = _layout.TEST_MACHINERY
AGENT_TEXT_CHARS = 2000  # per failure and form: = FAILURE_TEXT_CHARS of the run_tests tool
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
# A scored run's random state comes from the scorer's secret, never from the contract's seed:
# product code that falls back in-process must not recognise Random(S) (sandbox/_entropy.py).
RANDOM_SEED = int(OPTS.get("random-seed", SEED))
MODE = OPTS.get("mode", "scorer")
TARGETS = json.loads(OPTS.get("targets", "[]"))
TREE = os.getcwd()
LAYOUT = json.loads(OPTS.get("layout", '{"roots": ["."], "packages": []}'))
SPEC_ROOT = OPTS.get("spec-root", TREE)
PYTEST_WORLD = json.loads(
    OPTS.get(
        "pytest",
        '{"ini": {}, "addopts": [], "profile": null, "rootdir": ".", '
        '"plugins": [], "plugin_modules": []}',
    )
)

# The channel: move it to a fresh descriptor so the number in argv is stale.
CHANNEL_FD = os.dup(int(OPTS["report-fd"]))
os.close(int(OPTS["report-fd"]))
_report: Any = os.fdopen(CHANNEL_FD, "w", buffering=1, closefd=False) if MODE == "agent" else None

# Everything the runner relies on is imported from the interpreter BEFORE the
# tree is put on sys.path, so a module of the same name in the tree cannot
# take its place: the machinery, the Hypothesis pytest plugin we pass with
# -p, and the standard-library modules pytest imports lazily (pdb & co).


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
        _profiles: dict[str, Any] = {}

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

        package.loader.exec_module = exec_module  # type: ignore[method-assign]

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
    SCORER_PROFILE: dict[str, Any] = {
        "phases": tuple(phase for phase in Phase if phase != Phase.explain)
    }
else:
    settings = _hypothesis_on_demand()  # type: ignore[misc]
    SCORER_PROFILE = {}  # the agent's runs keep Hypothesis' own phases

STDLIB_PRELOAD = (
    "pdb", "cmd", "code", "codeop", "bdb", "readline", "rlcompleter", "xml.dom",
    "unittest", "doctest", "difflib", "pprint", "inspect", "shlex", "fnmatch",
)  # fmt: skip
for _name in STDLIB_PRELOAD:
    with contextlib.suppress(ImportError):  # an interpreter built without it: nothing to shadow
        __import__(_name)

# The env's pytest plugins the run loads (by entry point, with -p): imported here, from the
# interpreter, so a module of the same name in the tree cannot take their place. They are
# test machinery, trusted as pytest is (docs/design/runner.md).
for _name in PYTEST_WORLD["plugin_modules"]:
    # A plugin that does not import is pytest's to report: it loads it again, by entry
    # point, and stops the session naming it (the run's output says why).
    with contextlib.suppress(Exception):
        __import__(_name)
PLUGIN_TOPS = frozenset(
    name.split(".", 1)[0] for name in PYTEST_WORLD["plugin_modules"] if name in sys.modules
)

MACHINERY_FILES = {
    name: sys.modules[name].__file__
    for name in (*MACHINERY, *sorted(PLUGIN_TOPS))
    if name in sys.modules
}

FORCED_PROFILE: dict[str, Any] = {
    "database": None,
    "deadline": None,
    "derandomize": False,
    "print_blob": False,
}
"""What the runner's profile forces whatever the project's profile says: no example database
(a run must not depend on what an earlier one saved), no deadline (the sandbox's timing is
not the code's; the run's own limits bound a slow test), the contract's seed (derandomize
would ignore it), no reproduction blobs (output only)."""
settings.register_profile("patchwarden", **FORCED_PROFILE, **SCORER_PROFILE)
settings.load_profile("patchwarden")
random.seed(RANDOM_SEED)


def _tree_paths():
    """The tree's import roots, then the tree itself (``tree_paths``)."""
    return tree_paths(TREE, LAYOUT["roots"])

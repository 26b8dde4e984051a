"""Inside the oracle: what the reporter checks about its own process (docs/design/runner.md).

Identity of the watched objects, modules posing as the standard library or the machinery,
the provenance of the project's modules, witnesses from tracebacks, the settings
fingerprint. Part of the program concatenated by sandbox/_inside (``program``).
"""

from __future__ import annotations

import json
import os
import random
import sys
from typing import TYPE_CHECKING

import _pytest.python
import _pytest.reports
import _pytest.runner
import pluggy

if TYPE_CHECKING:
    from hypothesis import settings

    from ._boot import (
        LAYOUT,
        MACHINERY,
        MACHINERY_FILES,
        MODE,
        PLUGIN_TOPS,
        TARGETS,
        TREE,
        _report,
    )
    from ._start import STDLIB_BEFORE


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
            or top in PLUGIN_TOPS
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

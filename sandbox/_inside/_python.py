"""The agent's ``run_python``, INSIDE the sandbox: a snippet or a script of the tree, with the
tree's code importable as the agent's test runs import it.

A program of its own (``RUN_PYTHON`` in sandbox/_inside), handed to ``python -s -P -`` on
stdin by sandbox/_python_runner.py, which appends the one call that runs it: ``main(CODE)``
with the snippet as a string literal, or ``main(None)`` for a script. It holds no channel
and no secret: what it prints is the agent's own output, and its exit status is the
snippet's. Arguments: ``--layout LAYOUT [--script PATH] -- [args]`` (LAYOUT as the runner's:
``{"roots": [...], "packages": [...]}``, sandbox/_layout.py; PATH relative to the tree).

Like ``python -c CODE args`` and ``python PATH args``: ``sys.argv`` is ``["-c", *args]`` or
``[PATH, *args]``, the module runs as ``__main__``, and a script's directory comes first on
``sys.path``; then the tree's import roots and the tree itself (``tree_paths``), before
anything of the interpreter's. An uncaught exception prints its traceback without this
program's own frames and ends the process with status 1. The few standard-library modules
this program imports first (json, linecache, runpy, traceback and what they import) stay the
interpreter's, as they do for the agent's tests: a tree module of the same name is not seen.
"""

from __future__ import annotations

import builtins
import json
import linecache
import os
import runpy
import sys
import traceback
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._paths import tree_paths

SNIPPET_FILE = "<run_python>"
"""The file name of a snippet in its tracebacks (its lines are shown from linecache)."""


def _split_argv(argv):
    opts, i = {}, 0
    while i < len(argv) and argv[i] != "--":
        opts[argv[i].lstrip("-")] = argv[i + 1]
        i += 2
    return opts, argv[i + 1 :]


def _own_frame(frame):
    """A frame of this program or of runpy, left out of the snippet's traceback."""
    name = frame.f_code.co_filename
    return name == "<stdin>" or name == getattr(runpy, "__file__", None)


def _report(exc: BaseException) -> None:
    tb = exc.__traceback__
    while tb is not None and _own_frame(tb.tb_frame):
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb)
    sys.stderr.flush()


def main(code) -> None:
    opts, args = _split_argv(sys.argv[1:])
    layout = json.loads(opts.get("layout", '{"roots": ["."], "packages": []}'))
    tree = os.getcwd()
    paths = tree_paths(tree, layout["roots"])
    try:
        if code is not None:
            sys.argv = ["-c", *args]
            sys.path[0:0] = paths
            lines = code.splitlines(keepends=True)
            linecache.cache[SNIPPET_FILE] = (len(code), None, lines, SNIPPET_FILE)
            module = types.ModuleType("__main__")
            module.__builtins__ = builtins  # type: ignore[attr-defined]
            sys.modules["__main__"] = module
            exec(compile(code, SNIPPET_FILE, "exec"), module.__dict__)
        else:
            script = os.path.join(tree, opts["script"])
            sys.argv = [opts["script"], *args]
            sys.path[0:0] = [os.path.dirname(script), *paths]
            runpy.run_path(script, run_name="__main__")
    except SystemExit:
        raise
    except BaseException as exc:  # the snippet's own failure: shown as python shows it
        _report(exc)
        sys.exit(1)

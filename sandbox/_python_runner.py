"""The agent's ``run_python``: a snippet, or a script of the tree, in the agent's sandbox.

The same sandbox as the agent's test runs (``run_agent_tests``): the tree writable, the
contract paths read-only, ``.git`` covered, no network, the operator's limits and the
environment of every runner process; the project's code importable from the tree by its
import layout (sandbox/_layout.py), as the agent's tests import it. The program
(``RUN_PYTHON`` of sandbox/_inside) comes on stdin, so nothing in the tree can shadow it,
followed by the one call that runs the snippet, which travels as a string literal (no
descriptor, no argv: the command line is visible to every process inside).

What the snippet prints and how it ends are the agent's own: the result is the process's
(``ProcessResult``), nothing is read from a channel, and nothing here decides a verdict.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from patchwarden._treepaths import normal_tree_path

from ._argv import LaunchSpec
from ._config import Limits, SandboxConfig
from ._inside import RUN_PYTHON, program
from ._launch import launch
from ._layout import ImportLayout
from ._product import runner_env
from ._pytest_runner import layout_for
from ._runtime import python_runtime
from ._supervise import ProcessResult

RUN_PYTHON_SOURCE = program(RUN_PYTHON)


def run_agent_python(
    tree: Path,
    seed: int,
    config: SandboxConfig,
    *,
    code: str | None = None,
    script: str | None = None,
    args: Sequence[str] = (),
    contract_paths: Sequence[str] = (),
    limits: Limits | None = None,
    cancel: threading.Event | None = None,
    on_output: Callable[[bytes], None] | None = None,
    layout: ImportLayout | None = None,
) -> ProcessResult:
    """Run ``code`` (like ``python -c``) or the tree's ``script`` (like ``python PATH``) with
    ``args``; exactly one of the two. ValueError for a script path that is not a tree path or
    an argument with a NUL; every outcome of the run itself is the ProcessResult."""
    if (code is None) == (script is None):
        raise ValueError("run_agent_python takes exactly one of code and script")
    if any("\0" in arg for arg in args):
        raise ValueError("an argument must not contain a NUL character")
    layout = layout if layout is not None else layout_for(tree, config)
    options = ["--layout", json.dumps(layout.to_json())]
    if script is not None:
        options += ["--script", normal_tree_path(script, "script")]
    call = f"\nmain({code!r})\n" if code is not None else "\nmain(None)\n"
    spec = LaunchSpec(
        argv=[python_runtime(config).executable, "-s", "-P", "-", *options, "--", *args],
        tree=tree,
        tree_writable=True,
        contract_paths=contract_paths,
        env=runner_env(seed),
        limits=limits,
        # repr() escapes whatever is not printable (lone surrogates too): plain UTF-8.
        stdin=(RUN_PYTHON_SOURCE + call).encode("utf-8"),
    )
    return launch(spec, config, cancel=cancel, on_output=on_output)

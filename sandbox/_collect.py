"""Collect tests the way the scorer's runs will see them, without running any.

``collect_tests(tree, files, config, layout=...)`` starts one sandboxed ``pytest
--collect-only`` over ``files`` with the trusted runner's profile (its own ini holding the
project's ini keys as the runs keep them, ``--rootdir`` and ``--confcutdir`` at the tree,
plugin autoload off, Hypothesis' plugin and the env's plugins the runs load, the addopts the
scorer's runs keep: ``pytest_world``) and the project's import layout, and returns every
collected node id and every collection error.
``contract check`` and ``serve`` use it to find a property whose test id does not exist
before any verdict depends on it. The program comes on stdin and imports the test machinery
before the tree is on sys.path, like the reporter (docs/design/runner.md); its result travels
through a pipe the caller opened, never through stdout. It puts the tree's import roots on
sys.path exactly as the reporter's ``_tree_paths`` does (a program read from stdin can import
nothing of ours, so the few lines are repeated; the adoption tests run both on src layouts).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ._argv import LaunchSpec
from ._config import Limits, SandboxConfig
from ._launch import launch
from ._layout import ImportLayout
from ._pytest_runner import pytest_world
from ._runtime import python_runtime
from ._supervise import ProcessResult

CHANNEL_KEY = "__patchwarden_collection__"
ERROR_TEXT_CHARS = 2000
"""Enough of a collection error's text to show its last lines (the exception)."""
CHANNEL_MAX_BYTES = 8 * 1024 * 1024

IGNORED_WARNING = (
    "ignore:Module already imported so cannot be rewritten:pytest.PytestAssertRewriteWarning"
)
"""The plugins are imported before the tree is on sys.path, as the reporter does (its
``ALREADY_IMPORTED``, sandbox/_inside/_session.py)."""

COLLECT_PROGRAM = f"""
import json, os, sys
argv = sys.argv[1:]
fd, layout, world, files = int(argv[0]), json.loads(argv[1]), json.loads(argv[2]), argv[3:]
channel = os.fdopen(os.dup(fd), "w")
os.close(fd)
import _pytest.python, pluggy, pytest
import _hypothesis_pytestplugin
for name in world["plugin_modules"]:
    try:
        __import__(name)
    except Exception:
        pass  # pytest names the plugin again when it loads it
TREE = os.getcwd()
tree = os.path.realpath(TREE)
paths = []
for root in [*layout["roots"], "."]:
    path = os.path.normpath(os.path.join(TREE, root))
    real = os.path.realpath(path)
    if (real == tree or real.startswith(tree + os.sep)) and path not in paths:
        paths.append(path)
sys.path[0:0] = paths
tmp = os.environ.get("TMPDIR", "/tmp")
ini = os.path.join(tmp, "pw-collect.toml")
with open(ini, "w") as handle:
    handle.write("[tool.pytest.ini_options]\\naddopts = \\"\\"\\n")
    for key, value in world["ini"].items():
        handle.write(f"{{json.dumps(key)}} = {{json.dumps(value)}}\\n")


NATURAL = (str, int, float, bool, bytes, complex, type(None))


def _named_by_place(value):
    # pytest names a case by its value when it is one of these, else by its place
    # (``expected0``): the place of a set's element is the hash seed's choice
    return not isinstance(value, NATURAL)


class Collector:
    items = None
    errors = []
    unordered = []

    def pytest_generate_tests(self, metafunc):
        for mark in metafunc.definition.iter_markers(name="parametrize"):
            values = mark.args[1] if len(mark.args) > 1 else mark.kwargs.get("argvalues")
            if mark.kwargs.get("ids") is not None or not isinstance(values, (set, frozenset)):
                continue
            cases = [v if isinstance(v, (tuple, list)) else (v,) for v in values]
            if any(_named_by_place(v) for case in cases for v in case):
                self.unordered.append(metafunc.definition.nodeid)

    def pytest_collectreport(self, report):
        if report.failed:
            self.errors.append([report.nodeid, str(report.longreprtext)[-{ERROR_TEXT_CHARS}:]])

    def pytest_collection_finish(self, session):
        self.items = [item.nodeid for item in session.items]


collector = Collector()
code = pytest.main(
    ["-c", ini, "--rootdir", TREE, "--confcutdir", TREE, "-p", "no:cacheprovider",
     "-p", "_hypothesis_pytestplugin", "-W", {IGNORED_WARNING!r},
     *[arg for name in world["plugins"] for arg in ("-p", name)], *world["addopts"],
     "--basetemp", os.path.join(tmp, "pw-basetemp"), "--collect-only", "-q", "--no-header",
     *files],
    plugins=[collector],
)
channel.write(json.dumps({{{CHANNEL_KEY!r}: collector.items, "errors": collector.errors,
                          "unordered": collector.unordered, "exit_code": int(code)}}) + "\\n")
channel.close()
sys.exit(int(code))
"""


@dataclass(frozen=True)
class Collected:
    """What ``pytest --collect-only`` found in a tree."""

    node_ids: list[str] | None
    """Every collected node id; None when the channel said nothing (the process died)."""
    errors: list[tuple[str, str]]
    """(collector node id, the end of its error text) for each collection error."""
    process: ProcessResult
    unordered: list[str] = field(default_factory=list)
    """Tests parametrized over a set whose case ids name a case by its place (``expected0``):
    the hash seed orders a set, and each scored run has its own (docs/design/runner.md)."""


def collect_tests(
    tree: Path,
    files: Sequence[str],
    config: SandboxConfig,
    *,
    layout: ImportLayout,
    contract_paths: Sequence[str] = (),
    limits: Limits | None = None,
) -> Collected:
    """Collect the tests in ``files`` (tree-relative) of ``tree``, mounted read-only."""
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    collected = bytearray()

    def drain() -> None:
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            while block := pipe.read(65536):
                if len(collected) + len(block) <= CHANNEL_MAX_BYTES:
                    collected.extend(block)

    reader = threading.Thread(target=drain, name="patchwarden-collect", daemon=True)
    reader.start()
    try:
        spec = LaunchSpec(
            argv=[
                python_runtime(config).executable,
                "-s",
                "-P",
                "-",
                str(write_end),
                json.dumps(layout.to_json()),
                json.dumps(pytest_world(config, layout, "scorer")[0]),
                *files,
            ],
            tree=tree,
            tree_writable=False,
            contract_paths=contract_paths,
            env={"PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            pass_fds=(write_end,),
            limits=limits,
            stdin=COLLECT_PROGRAM.encode(),
        )
        process = launch(spec, config)
    finally:
        os.close(write_end)
        reader.join()
    return _parse(bytes(collected), process)


def _parse(raw: bytes, process: ProcessResult) -> Collected:
    lines = raw.decode("utf-8", "replace").splitlines()
    message: object = None
    if len(lines) == 1:
        try:
            message = json.loads(lines[0])
        except json.JSONDecodeError:
            message = None
    if not isinstance(message, dict):
        return Collected(node_ids=None, errors=[], process=process)
    found = message.get(CHANNEL_KEY)
    node_ids = found if isinstance(found, list) and all(isinstance(n, str) for n in found) else None
    errors = [
        (str(e[0]), str(e[1]))
        for e in message.get("errors", [])
        if isinstance(e, list) and len(e) == 2
    ]
    found = message.get("unordered")
    unordered = [str(n) for n in found] if isinstance(found, list) else []
    return Collected(node_ids=node_ids, errors=errors, process=process, unordered=unordered)

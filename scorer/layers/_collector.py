"""``pytest --collect-only -q`` for one node id, sandboxed, counted through a private channel.

The count travels like the runner's results: a descriptor the scorer opened
outside the tree, written by a plugin loaded from the scorer's interpreter
before the tree is importable; stdout (which product code imported during
collection can print anything to) is kept for reviewers and never counted.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from patchwarden.sandbox import (
    LaunchSpec,
    ProcessResult,
    SandboxConfig,
    launch,
    layout_for,
    python_runtime,
)

CHANNEL_KEY = "__patchwarden_collected__"

# Executed as ``python -s -P -c SOURCE FD NODE_ID ROOTS`` in the tree, ROOTS the tree's
# import roots as JSON (sandbox/_layout.py). Kept free of patchwarden imports, like the
# runner's reporter, so the tree cannot shadow it.
COLLECTOR_SOURCE = f"""
import json, os, sys
fd = int(sys.argv[1])
node_id = sys.argv[2]
roots = json.loads(sys.argv[3])
channel = os.fdopen(os.dup(fd), "w")
os.close(fd)
import pytest
sys.path[0:0] = [os.path.normpath(os.path.join(os.getcwd(), root)) for root in roots]


class Collector:
    items = None

    def pytest_collection_finish(self, session):
        self.items = [item.nodeid for item in session.items]


collector = Collector()
code = pytest.main(
    ["--collect-only", "-q", "-p", "no:cacheprovider", node_id], plugins=[collector]
)
channel.write(json.dumps({{{CHANNEL_KEY!r}: collector.items, "exit_code": int(code)}}) + "\\n")
channel.close()
sys.exit(int(code))
"""


@dataclass(frozen=True)
class Collection:
    """What ``pytest --collect-only`` found for one node id."""

    node_ids: list[str] | None
    """Collected node ids; None when the channel said nothing (the process died)."""
    process: ProcessResult

    @property
    def count(self) -> int:
        return len(self.node_ids or [])


def collect_node_id(
    tree: Path,
    node_id: str,
    config: SandboxConfig,
    *,
    contract_paths: Sequence[str] = (),
) -> Collection:
    """Collect ``node_id`` in ``tree`` (mounted read-only) with the project's configuration."""
    with tempfile.TemporaryFile(mode="w+b") as channel:
        os.set_inheritable(channel.fileno(), True)
        spec = LaunchSpec(
            argv=[
                python_runtime(config).executable,
                "-s",
                "-P",
                "-c",
                COLLECTOR_SOURCE,
                str(channel.fileno()),
                node_id,
                json.dumps(list(layout_for(tree, config).roots)),
            ],
            tree=tree,
            tree_writable=False,
            contract_paths=contract_paths,
            env={"PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            pass_fds=(channel.fileno(),),
        )
        process = launch(spec, config)
        channel.seek(0)
        raw = channel.read().decode("utf-8", "replace")
    node_ids: list[str] | None = None
    lines = raw.splitlines()
    if len(lines) == 1:
        try:
            message = json.loads(lines[0])
        except (ValueError, RecursionError):  # product code may write anything here
            message = None
        if isinstance(message, dict):
            found = message.get(CHANNEL_KEY)
            if isinstance(found, list) and all(isinstance(n, str) for n in found):
                node_ids = found
    return Collection(node_ids=node_ids, process=process)

"""The agent-facing MCP tools (docs/clients.md): names, arguments and results are stable.

One module a tool (``_get_contract.py`` ... ``_request_freeze.py``), each declaring its
``TOOL``: name, description, argument and result models, annotations, the arguments the audit
log elides, and an async handler ``run(session, args, progress)`` that a test can call
without an MCP server. ``_registry.TOOLS`` lists them in order; ``register_tools`` adapts each
to the SDK. Every tool returns a structured result and turns a refusal (bad path, protected
file, no match, limit reached) into a tool error with a message the agent can act on; the
server keeps serving. File tools go through the one path policy (server/_paths.py); git work
through the workspace (server/_workspace.py); verdicts come from the scorer child
(server/_scorer_client.py) as a summary only.
"""

from __future__ import annotations

from ._base import (
    EDITS_WORKTREE,
    READ_ONLY,
    REPLACES_IN_WORKTREE,
    RUNS,
    NoArgs,
    Progress,
    Tool,
    ToolArgs,
)
from ._register import register_tools
from ._registry import ELIDED_ARGUMENTS, TOOLS, instructions, tool_named
from ._session import Scorer, Session

__all__ = [
    "EDITS_WORKTREE",
    "ELIDED_ARGUMENTS",
    "READ_ONLY",
    "REPLACES_IN_WORKTREE",
    "RUNS",
    "TOOLS",
    "NoArgs",
    "Progress",
    "Scorer",
    "Session",
    "Tool",
    "ToolArgs",
    "instructions",
    "register_tools",
    "tool_named",
]

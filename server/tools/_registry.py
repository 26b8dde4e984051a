"""The MCP tools, in the order the client lists them, and what is derived from that list.

Adding a tool is one module beside this one (its ``TOOL``), one line in ``TOOLS``, one row in
docs/clients.md and one test in tests/test_server_tools.py (docs/architecture.md, "How to add
an MCP tool"). The agent's instructions and the audit log's elided arguments are read from
here, never listed again.
"""

from __future__ import annotations

from typing import Any

from . import (
    _apply_patch,
    _diff,
    _edit_file,
    _get_contract,
    _get_verdict,
    _list_files,
    _read_file,
    _request_freeze,
    _run_python,
    _run_tests,
    _search_text,
    _submit_patch,
    _write_file,
)
from ._base import Tool

TOOLS: tuple[Tool[Any, Any], ...] = (
    _get_contract.TOOL,
    _list_files.TOOL,
    _search_text.TOOL,
    _read_file.TOOL,
    _write_file.TOOL,
    _edit_file.TOOL,
    _apply_patch.TOOL,
    _diff.TOOL,
    _run_tests.TOOL,
    _run_python.TOOL,
    _submit_patch.TOOL,
    _get_verdict.TOOL,
    _request_freeze.TOOL,
)

ELIDED_ARGUMENTS: frozenset[str] = frozenset().union(*(tool.elided for tool in TOOLS))
"""Argument names the audit log replaces by their length, whichever tool (or none) they
were sent to: a call that never reaches a tool is logged too."""

_PREAMBLE = """\
You work on a repository through patchwarden, in your own git worktree at a fixed base commit.
Read the contract first: its paths are read-only to you, and every patch you submit is scored
by a separate scorer that runs the contract's property checks on the base and on your patch.

The workflow: search for the code (search_text, list_files), read it (read_file), reproduce
the bug with run_python (a few lines that import the project's code) or with a test
(write_file, run_tests), edit (edit_file, apply_patch), run the tests again (run_tests),
submit (submit_patch), and, when the answer is pending, poll for the verdict (get_verdict).

The tools:
"""
_CLOSING = "\nSubmissions are limited; run the tests before you submit."


def instructions(tools: tuple[Tool[Any, Any], ...] = TOOLS) -> str:
    """The agent's instructions: what the session is, then each tool and when to use it."""
    listed = "".join(f"- {tool.name}: {tool.use}\n" for tool in tools)
    return _PREAMBLE + listed + _CLOSING


def tool_named(name: str) -> Tool[Any, Any]:
    """The registered tool called ``name``; KeyError if there is none."""
    for tool in TOOLS:
        if tool.name == name:
            return tool
    raise KeyError(name)

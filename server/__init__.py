"""The agent-facing zone: the MCP server, its workspace and path policy, the CLI.

Imports the scorer and the sandbox through their facades; nothing imports it.
"""

from __future__ import annotations

from ._errors import ScorerUnavailable, ToolInputError

__all__ = ["ScorerUnavailable", "ToolInputError"]

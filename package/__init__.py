"""patchwarden: trustworthy verdicts on patches written by coding agents.

The distribution installs one import name, ``patchwarden``, with four zones
(see docs/architecture.md):

    patchwarden.server    agent-facing: the MCP server, its workspace, the CLI
    patchwarden.scorer    trusted: contract, gate, checks, scoring; never imports server
    patchwarden.sandbox   isolation: bubblewrap launches, the trusted pytest runner
    patchwarden.configs   operator configuration profiles and their JSON Schema

The error tree every zone builds on lives here (:mod:`patchwarden._errors`).
"""

from __future__ import annotations

from ._errors import ConfigError, GitError, InputError, PatchwardenError

__all__ = ["ConfigError", "GitError", "InputError", "PatchwardenError"]

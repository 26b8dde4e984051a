"""The server's branch of the error tree (drawn whole in patchwarden._errors)."""

from __future__ import annotations

from patchwarden._errors import PatchwardenError


class ToolInputError(PatchwardenError):
    """An agent's tool call is refused (bad path, protected file, ...)."""


class ScorerUnavailable(PatchwardenError):
    """The scorer process is gone, hung or answered out of protocol."""


__all__ = ["ScorerUnavailable", "ToolInputError"]

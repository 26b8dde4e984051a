"""The scorer's branch of the error tree (drawn whole in patchwarden._errors)."""

from __future__ import annotations

from patchwarden._errors import ConfigError, GitError, InputError, PatchwardenError, one_line


class ContractError(PatchwardenError):
    """The contract is malformed or does not fit the repository."""


__all__ = [
    "ConfigError",
    "ContractError",
    "GitError",
    "InputError",
    "PatchwardenError",
    "one_line",
]

"""The scorer's branch of the error tree (drawn whole in patchwarden._errors)."""

from __future__ import annotations

from patchwarden._errors import ConfigError, GitError, InputError, PatchwardenError, one_line


class ContractError(PatchwardenError):
    """The contract is malformed or does not fit the repository."""


class HeldOutError(ContractError):
    """The operator's held-out properties cannot be used. Its message names held-out files,
    so it goes to the operator, never to the agent."""


__all__ = [
    "ConfigError",
    "ContractError",
    "GitError",
    "HeldOutError",
    "InputError",
    "PatchwardenError",
    "one_line",
]

"""The sandbox's branch of the error tree (drawn whole in patchwarden._errors)."""

from __future__ import annotations

from patchwarden._errors import ConfigError, GitError, InputError, PatchwardenError


class SandboxError(PatchwardenError):
    """Isolation cannot be provided; nothing may run."""


class RunTimeout(SandboxError, TimeoutError):
    """A sandboxed process went past its wall-clock limit."""


__all__ = [
    "ConfigError",
    "GitError",
    "InputError",
    "PatchwardenError",
    "RunTimeout",
    "SandboxError",
]

"""The exception tree shared by every patchwarden package.

    PatchwardenError            root; .where names the file/line/argv it is about
    +-- ConfigError             operator configuration is unusable
    +-- SandboxError            isolation cannot be provided (no bubblewrap, ...)
    |   +-- RunTimeout          (also a TimeoutError)
    +-- InputError              a file we were given is malformed (scorer)
    +-- ContractError           the contract is malformed or inconsistent (scorer)
    +-- ToolInputError          an agent's tool arguments are refused (server)

A red test is never an exception: it is data (a RunResult / a row).
"""

from __future__ import annotations


class PatchwardenError(Exception):
    """Root of all errors patchwarden raises on purpose.

    The message is one line and names what went wrong and where.
    """

    def __init__(self, message: str, *, where: str | None = None) -> None:
        self.message = message
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class ConfigError(PatchwardenError):
    """The operator configuration cannot be used."""


class SandboxError(PatchwardenError):
    """Isolation cannot be provided; nothing may run."""


class RunTimeout(SandboxError, TimeoutError):
    """A sandboxed process went past its wall-clock limit."""


class InputError(PatchwardenError):
    """An input file (JSONL rows, a manifest, ...) is malformed."""


class ContractError(PatchwardenError):
    """The contract is malformed or does not fit the repository."""


class ToolInputError(PatchwardenError):
    """An agent's tool call is refused (bad path, protected file, ...)."""

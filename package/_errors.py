"""The exception tree of patchwarden, drawn whole; each zone defines its own branch.

    PatchwardenError              root (here); .where names the file:line, path or argv it is about
    +-- ConfigError               operator configuration is unusable (here)
    +-- InputError                a file or argument we were given is malformed (here)
    +-- GitError                  a git operation failed (here: every zone runs git)
    +-- SandboxError              isolation cannot be provided (patchwarden.sandbox)
    |   +-- RunTimeout            (also a TimeoutError)
    +-- ContractError             the contract is malformed or unfit (patchwarden.scorer)
    |   +-- HeldOutError          the operator's held-out properties are unusable (never shown
    |                             to the agent)
    +-- ScorerUnavailable         the scorer process is gone or did not answer (patchwarden.server)
    +-- ToolInputError            an agent's tool arguments are refused (patchwarden.server)

Every PatchwardenError is an *expected* failure: the command line prints its one
line and exits 2. Anything else is a bug and exits 70 (see docs/design/errors.md).
A red test is never an exception: it is data (a ProcessResult, a row).
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


class InputError(PatchwardenError):
    """An input file (JSONL rows, a manifest, a request, ...) is malformed."""


class GitError(PatchwardenError):
    """A git command failed; the message names the command and the repository."""

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

LINE_BREAKS = str.maketrans({c: repr(c)[1:-1] for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})
"""Every character str.splitlines() breaks at, and its escape."""


def one_line(text: str) -> str:
    """``text`` with its line breaks written as escapes: a key, a path or a value quoted in
    a message can hold one (the fuzzing found ``"\\n": null`` in a JSON object)."""
    return text.translate(LINE_BREAKS)


class PatchwardenError(Exception):
    """Root of all errors patchwarden raises on purpose.

    The message is one line and names what went wrong and where: whatever the parts quote,
    their line breaks are escaped here.
    """

    def __init__(self, message: str, *, where: str | None = None) -> None:
        self.message = one_line(message)
        self.where = None if where is None else one_line(where)
        super().__init__(f"{self.where}: {self.message}" if self.where else self.message)


class ConfigError(PatchwardenError):
    """The operator configuration cannot be used."""


class InputError(PatchwardenError):
    """An input file (JSONL rows, a manifest, a request, ...) is malformed."""


class GitError(PatchwardenError):
    """A git command failed; the message names the command and the repository."""

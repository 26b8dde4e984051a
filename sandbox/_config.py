"""Operator configuration of the sandbox: which backend, what is mounted, which limits.

The models are frozen and reject unknown keys, so a typo in the operator's YAML is an error,
not a silently ignored setting. The attribute docstrings become the JSON Schema descriptions
(`SandboxConfig.model_json_schema()`).
"""

from __future__ import annotations

import posixpath
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveFloat,
    PositiveInt,
    ValidationError,
    field_validator,
)

from ._errors import ConfigError

NOBODY_UID = 65534
"""The uid sandboxed processes run as when patchwarden runs as root and none is configured."""

MAX_UID_RANGE = 65536
"""More uids than any machine runs sandboxes at once; a bigger range is a typo."""

_MODEL_CONFIG = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class Limits(BaseModel):
    """Resource limits for one sandboxed process tree."""

    model_config = _MODEL_CONFIG

    wall_time_s: PositiveFloat = 300
    """Wall-clock seconds before the whole process tree is killed."""

    idle_time_s: PositiveFloat = 120
    """Seconds without any output (stdout or stderr) before the whole process tree is killed."""

    call_timeout_s: PositiveFloat | None = None
    """Isolated scorer runs: seconds one call into the product process may take before it
    fails as ``ProductHung`` (a test that loops forever in product code ends there, and the
    run goes on with a new product process). Default: 0.75 of ``idle_time_s``."""

    test_timeout_s: PositiveFloat | None = None
    """Isolated scorer runs: seconds one test may run before its next call into the product
    fails as ``ProductHung``. It ends a test that drives product code forever in short calls
    (``list()`` of an endless generator: no one call is slow); the product process is kept,
    it is not hung, unless product code goes on calling the test's code past the deadline (a
    retry loop that takes the failure for one more attempt): then it is ended, and the next
    test gets a new one. ``task from-fix`` sets it to its ``--test-timeout``. Default: none."""

    cpu_s: PositiveInt = 300
    """CPU seconds per process (RLIMIT_CPU)."""

    memory_mb: PositiveInt = 4096
    """Address space per process in MiB (RLIMIT_AS)."""

    processes: PositiveInt = 512
    """Processes and threads the sandbox uid may have at once (RLIMIT_NPROC)."""

    file_size_mb: PositiveInt = 256
    """Largest file a process may write, in MiB (RLIMIT_FSIZE)."""

    output_bytes: PositiveInt = 1_000_000
    """Bytes of stdout and of stderr kept each; the rest is read and discarded."""

    tmpfs_mb: PositiveInt = 512
    """Size of the private /tmp and of $HOME inside the sandbox, each, in MiB (they live
    in the host's memory, so a run cannot fill it)."""


class SandboxConfig(BaseModel):
    """How processes started for the agent and the scorer are isolated."""

    model_config = _MODEL_CONFIG

    backend: Literal["bubblewrap", "none"] = "bubblewrap"
    """`bubblewrap` isolates every run; `none` runs without isolation (development only, and
    prints a warning on every run)."""

    python: str | None = None
    """Python interpreter used inside the sandbox (absolute path or a name on PATH); its
    installation is mounted read-only. Default: the interpreter running patchwarden."""

    pythonpath: tuple[str, ...] = ()
    """Extra host directories mounted read-only at the same path, for the caller to put on
    sys.path."""

    writable_paths: tuple[str, ...] = ()
    """Extra host paths mounted read-write at the same path."""

    readonly_paths: tuple[str, ...] = ()
    """Extra host paths mounted read-only at the same path."""

    hidden_paths: tuple[str, ...] = ()
    """Host paths covered with an empty filesystem, even when under a mounted directory."""

    env_allow: tuple[str, ...] = ("LANG", "LC_ALL", "TZ")
    """Environment variables copied into the sandbox from patchwarden's environment, if set.
    Everything else is cleared."""

    network: bool = False
    """Share the host network. Off by default: no network, no abstract Unix sockets."""

    run_as_uid: int | None = Field(default=None, ge=1)
    """Uid (and gid) the sandboxed process runs as when patchwarden runs as root. Default
    65534 (nobody). Never 0: the process limit is not enforced for root."""

    uid_range: tuple[int, int] | None = None
    """When patchwarden runs as root: the first and last uid (inclusive) of a range reserved
    for sandboxed runs, e.g. [100000, 100063]. Each concurrent run takes a free uid of the
    range for its whole life, so RLIMIT_NPROC is one budget per run and a fork bomb in one
    run cannot starve another. The uids must belong to no user or process of the host. Give
    at least as many uids as runs may happen at once (a run waits for a free one). Null: every
    run shares the budget of run_as_uid (`patchwarden doctor` says so)."""

    limits: Limits = Limits()
    """Resource limits; each run may lower or raise them."""

    oracle: Literal["isolated", "in-process"] = "isolated"
    """Scorer runs: `isolated` runs the product in a sandboxed process of its own and the
    properties in another, with only data between them (docs/design/isolated-oracle.md); a
    property that cannot run so runs in-process and the `isolation` check says so.
    `in-process` runs every property in the process that imports the product."""

    import_roots: tuple[str, ...] | None = None
    """Directories of the project's tree (relative to its root) that hold its importable code,
    in sys.path order; the tree itself always follows, and all of them come before the
    interpreter's own paths. None: read from the project (its pytest `pythonpath`, the
    packaging metadata in pyproject.toml or setup.cfg, or the src/<package> convention)."""

    @field_validator("import_roots")
    @classmethod
    def _tree_relative_paths(cls, roots: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for root in roots or ():
            pure = posixpath.normpath(root) if root else ""
            if not root or posixpath.isabs(root) or pure == ".." or pure.startswith("../"):
                raise ValueError(f"{root!r} must be a directory relative to the tree, inside it")
        return roots

    @field_validator("pythonpath", "writable_paths", "readonly_paths", "hidden_paths")
    @classmethod
    def _absolute_normal_paths(cls, paths: tuple[str, ...]) -> tuple[str, ...]:
        for path in paths:
            if (
                not posixpath.isabs(path)
                or ".." in path.split("/")
                or posixpath.normpath(path) == "/"
            ):
                raise ValueError(f"{path!r} must be an absolute path without '..', not '/'")
        return paths

    @field_validator("uid_range")
    @classmethod
    def _uid_range(cls, value: tuple[int, int] | None) -> tuple[int, int] | None:
        if value is None:
            return None
        first, last = value
        if first < 1 or last < first:
            raise ValueError(f"[{first}, {last}] must be [first, last] with 1 <= first <= last")
        if last - first >= MAX_UID_RANGE:
            raise ValueError(f"[{first}, {last}] holds more than {MAX_UID_RANGE} uids")
        return value

    @field_validator("env_allow")
    @classmethod
    def _variable_names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            if not name or "=" in name or "\0" in name:
                raise ValueError(f"{name!r} is not an environment variable name")
        return names

    @property
    def sandbox_uid(self) -> int:
        """The uid used when dropping privileges (run_as_uid, or nobody)."""
        return NOBODY_UID if self.run_as_uid is None else self.run_as_uid

    def run_uids(self) -> range:
        """The uids a run may take: the operator's range, or the one sandbox uid."""
        if self.uid_range is None:
            return range(self.sandbox_uid, self.sandbox_uid + 1)
        return range(self.uid_range[0], self.uid_range[1] + 1)


def parse_sandbox_config(data: Any, *, where: str | None = None) -> SandboxConfig:
    """Validate operator data (e.g. the `sandbox:` mapping of the YAML config).

    Raises ConfigError with one line naming the offending key.
    """
    try:
        return SandboxConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc), where=where) from None


def describe_validation_error(exc: ValidationError) -> str:
    """One line naming each offending key, e.g. `limits.cpu_s: unknown key`."""
    return "; ".join(_describe_one(error) for error in exc.errors())


def _describe_one(error: Any) -> str:
    location = ".".join(str(part) for part in error["loc"]) or "(top level)"
    if error["type"] == "extra_forbidden":
        return f"{location}: unknown key"
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{location}: {message}, got {error['input']!r}"

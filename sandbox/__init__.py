"""Isolated runs of untrusted code: one command under bubblewrap, supervised and limited.

launch(LaunchSpec, SandboxConfig) -> ProcessResult    the only way to start one
check_sandbox / require_sandbox                        does isolation work here?
"""

from __future__ import annotations

from ._config import Limits, SandboxConfig, describe_validation_error, parse_sandbox_config
from ._doctor import DoctorCheck, check_sandbox, require_sandbox
from ._errors import ConfigError, GitError, InputError, PatchwardenError, RunTimeout, SandboxError
from ._launch import (
    NONE_BACKEND_WARNING,
    TREE_MOUNT,
    LaunchSpec,
    ProcessResult,
    build_bwrap_argv,
    launch,
    mounted_host_paths,
    prepare_writable_tree,
    python_runtime,
    tree_path_inside,
)
from ._pytest_runner import (
    AgentRun,
    PropertyRecord,
    PropertyRun,
    PropertyTarget,
    TestOutcome,
    run_agent_tests,
    run_properties,
)
from ._worktree import fetch_commits, open_worktree, parent_of, resolve_commit, scratch_clone

__all__ = [
    "NONE_BACKEND_WARNING",
    "TREE_MOUNT",
    "AgentRun",
    "ConfigError",
    "DoctorCheck",
    "GitError",
    "InputError",
    "LaunchSpec",
    "Limits",
    "PatchwardenError",
    "ProcessResult",
    "PropertyRecord",
    "PropertyRun",
    "PropertyTarget",
    "RunTimeout",
    "SandboxConfig",
    "SandboxError",
    "TestOutcome",
    "build_bwrap_argv",
    "check_sandbox",
    "describe_validation_error",
    "fetch_commits",
    "launch",
    "mounted_host_paths",
    "open_worktree",
    "parent_of",
    "parse_sandbox_config",
    "prepare_writable_tree",
    "python_runtime",
    "require_sandbox",
    "resolve_commit",
    "run_agent_tests",
    "run_properties",
    "scratch_clone",
    "tree_path_inside",
]

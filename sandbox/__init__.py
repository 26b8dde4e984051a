"""Isolation: one command under bubblewrap, supervised and limited; git; the trusted runner.

launch(LaunchSpec, SandboxConfig) -> ProcessResult    the only way to start one
RUNNERS / runner_named                                 the property runners by name
check_sandbox / require_sandbox                        does isolation work here?
"""

from __future__ import annotations

from ._argv import (
    NONE_BACKEND_WARNING,
    TREE_MOUNT,
    LaunchSpec,
    build_bwrap_argv,
    drops_privileges,
)
from ._collect import Collected, collect_tests
from ._config import Limits, SandboxConfig, describe_validation_error, parse_sandbox_config
from ._ctest_runner import list_ctest_tests, run_agent_ctest
from ._doctor import DoctorCheck, check_interpreter, check_sandbox, require_sandbox
from ._entropy import HASH_SEED_RANGE, RunEntropy
from ._env import BuiltEnv, Declarations, build_env, own_metadata_name, read_declarations
from ._errors import ConfigError, GitError, InputError, PatchwardenError, RunTimeout, SandboxError
from ._git import (
    HOOKLESS,
    DiffEntry,
    blob_id_at,
    bundle_commits,
    changed_paths,
    diff_changes,
    empty_clone,
    fetch_commits,
    fetch_from_url,
    file_at,
    first_parent,
    git_errors,
    git_message,
    open_repo,
    open_worktree,
    parent_of,
    repo_root,
    resolve_commit,
    run_git,
    scratch_clone,
    working_files,
)
from ._launch import launch, mounted_host_paths, prepare_writable_tree, tree_path_inside
from ._layout import (
    MACHINERY_NAMES,
    TEST_MACHINERY,
    ImportLayout,
    detect_layout,
    pytest_config_at,
)
from ._pytest_config import PytestConfig, plugin_args
from ._pytest_runner import (
    AgentRun,
    PropertyRecord,
    PropertyRun,
    PropertyTarget,
    TestOutcome,
    configuration_line,
    configuration_problems,
    layout_for,
    run_agent_tests,
    run_properties,
)
from ._python_runner import run_agent_python
from ._runners import (
    DEFAULT_RUNNER,
    DEFAULT_SEED_ENV,
    RUNNERS,
    Runner,
    RunRequest,
    env_name_problem,
    runner_named,
)
from ._runtime import pytest_entry_points, python_runtime
from ._supervise import ProcessResult
from ._syntax import parse_python
from ._trees import default_trees_dir, new_tree_parent, trees_dir

__all__ = [
    "DEFAULT_RUNNER",
    "DEFAULT_SEED_ENV",
    "HASH_SEED_RANGE",
    "HOOKLESS",
    "MACHINERY_NAMES",
    "NONE_BACKEND_WARNING",
    "RUNNERS",
    "TEST_MACHINERY",
    "TREE_MOUNT",
    "AgentRun",
    "BuiltEnv",
    "Collected",
    "ConfigError",
    "Declarations",
    "DiffEntry",
    "DoctorCheck",
    "GitError",
    "ImportLayout",
    "InputError",
    "LaunchSpec",
    "Limits",
    "PatchwardenError",
    "ProcessResult",
    "PropertyRecord",
    "PropertyRun",
    "PropertyTarget",
    "PytestConfig",
    "RunEntropy",
    "RunRequest",
    "RunTimeout",
    "Runner",
    "SandboxConfig",
    "SandboxError",
    "TestOutcome",
    "blob_id_at",
    "build_bwrap_argv",
    "build_env",
    "bundle_commits",
    "changed_paths",
    "check_interpreter",
    "check_sandbox",
    "collect_tests",
    "configuration_line",
    "configuration_problems",
    "default_trees_dir",
    "describe_validation_error",
    "detect_layout",
    "diff_changes",
    "drops_privileges",
    "empty_clone",
    "env_name_problem",
    "fetch_commits",
    "fetch_from_url",
    "file_at",
    "first_parent",
    "git_errors",
    "git_message",
    "launch",
    "layout_for",
    "list_ctest_tests",
    "mounted_host_paths",
    "new_tree_parent",
    "open_repo",
    "open_worktree",
    "own_metadata_name",
    "parent_of",
    "parse_python",
    "parse_sandbox_config",
    "plugin_args",
    "prepare_writable_tree",
    "pytest_config_at",
    "pytest_entry_points",
    "python_runtime",
    "read_declarations",
    "repo_root",
    "require_sandbox",
    "resolve_commit",
    "run_agent_ctest",
    "run_agent_python",
    "run_agent_tests",
    "run_git",
    "run_properties",
    "runner_named",
    "scratch_clone",
    "tree_path_inside",
    "trees_dir",
    "working_files",
]

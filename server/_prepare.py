"""The checks ``serve`` makes before the first MCP message, and the settings they give.

What is cheap is checked here: the configuration, the base commit, the contract, the sweep
records, the held-out properties and the directories; a failure is one line and exit 2 (the
CLI's job) and nothing is served. This module does not import the MCP SDK: ``serve`` runs
it, then answers discovery (server/_front.py) while the SDK loads (docs/clients.md,
"Start-up").
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from patchwarden._hostpaths import is_within
from patchwarden.sandbox import (
    ConfigError,
    SandboxConfig,
    drops_privileges,
    mounted_host_paths,
    require_sandbox,
    resolve_commit,
)
from patchwarden.scorer import (
    Contract,
    ContractError,
    HeldOut,
    base_is_broken,
    load_held_out,
    read_contract_at,
    read_only_paths_at,
    read_quarantine_at,
    require_test_ids,
)
from patchwarden.scorer.protocol import Start

from ._workspace import private_dir, repo_toplevel
from .config import AgentConfig, OperatorConfig, load_config

Transport = Literal["stdio", "http"]


def default_server_state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "patchwarden" / "server"


@dataclass(frozen=True)
class ServeOptions:
    """``patchwarden serve`` flags; None keeps the configuration's value."""

    config_path: Path | None = None
    repo: Path | None = None
    base: str | None = None
    contract: str | None = None
    log_dir: Path | None = None
    transport: Transport = "stdio"
    held_out: Path | None = None
    """Replaces ``scorer.held_out_dir`` (a hosted workspace's own)."""


@dataclass(frozen=True)
class Setup:
    """Everything checked before the session starts."""

    config: OperatorConfig
    config_path: Path | None
    repo: Path
    base: str
    contract: Contract
    contract_file: str | None
    contract_arg: str
    quarantined: list[str]
    read_only: list[str]
    """Contract paths, the manifest's fixtures included."""
    log_dir: Path
    scorer_state: Path
    server_state: Path
    agent_sandbox: SandboxConfig
    held_out: HeldOut | None = None
    """The operator's held-out properties, checked at start-up; the agent never sees them."""


def apply_overrides(config: OperatorConfig, options: ServeOptions) -> OperatorConfig:
    agent: dict[str, Any] = {}
    if options.repo is not None:
        agent["repo"] = str(options.repo)
    if options.base is not None:
        agent["base"] = options.base
    if options.contract is not None:
        agent["contract"] = options.contract
    scorer: dict[str, Any] = {}
    if options.log_dir is not None:
        scorer["log_dir"] = str(options.log_dir)
    if options.held_out is not None:
        scorer["held_out_dir"] = str(options.held_out)
    return config.model_copy(
        update={
            "agent": AgentConfig.model_validate({**config.agent.model_dump(), **agent}),
            "scorer": config.scorer.model_copy(update=scorer),
        }
    )


def hide_secret_dirs(config: SandboxConfig, secret_dirs: Sequence[Path]) -> SandboxConfig:
    """``config`` with every secret directory (server and scorer state, logs) that a mount
    would show (system, interpreter or operator paths) covered; used for the agent's runs
    and the scorer's. A directory no mount shows is left alone: covering it would create its
    path inside the sandbox."""
    mounted = [Path(p) for p in mounted_host_paths(config)]
    hidden = [str(d) for d in secret_dirs if any(is_within(d, m) for m in mounted)]
    if not hidden:
        return config
    return config.model_copy(update={"hidden_paths": (*config.hidden_paths, *hidden)})


def prepare(options: ServeOptions) -> Setup:
    """Validate the configuration, the sandbox, the repository, the base and the contract."""
    config = apply_overrides(load_config(options.config_path), options)
    repo = repo_toplevel(Path(config.agent.repo).resolve())
    base = resolve_commit(repo, config.agent.base)
    contract, contract_file = read_contract_at(repo, base, config.agent.contract)
    if not contract.properties:
        raise ContractError("the contract lists no properties", where=config.agent.contract)
    try:
        broken = base_is_broken(repo, base, config.scorer, contract=contract)
    except OSError as exc:
        raise ConfigError(
            f"cannot read the sweep records: {exc.strerror}", where=str(exc.filename)
        ) from None
    if broken and not config.agent.waive_broken_base:
        raise ConfigError(
            f"the base is broken ({'; '.join(broken[:3])}): fix it, or set "
            "agent.waive_broken_base to start anyway",
            where=base[:12],
        )
    quarantined = read_quarantine_at(repo, base, contract)
    read_only = read_only_paths_at(repo, base, contract, contract_file)
    log_dir = Path(config.scorer.log_dir).resolve()
    scorer_state = Path(config.scorer.state_dir).resolve()
    server_state = default_server_state_dir().resolve()
    for name, path in (("log directory", log_dir), ("scorer state directory", scorer_state)):
        if is_within(path, server_state) or is_within(server_state, path):
            raise ConfigError(
                f"the {name} must be apart from the server state directory {server_state}",
                where=str(path),
            )
    if is_within(log_dir, scorer_state) or is_within(scorer_state, log_dir):
        raise ConfigError(
            "the log directory and the scorer state directory must be apart", where=str(log_dir)
        )
    held_out = _held_out_at_start(config, repo, contract, [server_state, scorer_state])
    try:
        private_dir(server_state)
        private_dir(scorer_state)
        log_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot create directory: {exc.strerror}", where=str(exc.filename)
        ) from None
    return Setup(
        config=config,
        config_path=options.config_path.resolve() if options.config_path else None,
        repo=repo,
        base=base,
        contract=contract,
        contract_file=contract_file,
        contract_arg=config.agent.contract,
        quarantined=quarantined,
        read_only=read_only,
        log_dir=log_dir,
        scorer_state=scorer_state,
        server_state=server_state,
        agent_sandbox=hide_secret_dirs(
            config.sandbox, [server_state, scorer_state, log_dir, *_held_out_dirs(held_out)]
        ),
        held_out=held_out,
    )


def finish_setup_checks(setup: Setup) -> None:
    """The slow checks, run while the session is already served (the tools wait for them):
    the sandbox works as configured, and every property's test exists on the base before an
    agent works towards it (a misspelt id would otherwise fail on both sides and reject
    every patch as uniform_fail)."""
    require_sandbox(setup.config.sandbox)
    require_test_ids(
        setup.repo,
        setup.base,
        setup.contract_arg,
        setup.config.scorer,
        hide_secret_dirs(
            setup.config.sandbox, [setup.server_state, setup.scorer_state, setup.log_dir]
        ),
    )


def _held_out_at_start(
    config: OperatorConfig, repo: Path, contract: Contract, apart_from: Sequence[Path]
) -> HeldOut | None:
    """The held-out properties, checked before anything is served: a problem refuses the
    session (one line, exit 2). They must lie outside the repository and apart from every
    directory the agent's worktree can be in."""
    if not config.scorer.held_out_dir:
        return None
    held_out = load_held_out(
        Path(config.scorer.held_out_dir),
        contract,
        repo=repo,
        other_uid=drops_privileges(config.sandbox),
    )
    worktrees = [*apart_from]
    if config.agent.worktree_dir:
        worktrees.append(Path(config.agent.worktree_dir).resolve())
    for directory in worktrees:
        if is_within(held_out.directory, directory) or is_within(directory, held_out.directory):
            raise ConfigError(
                f"the held-out directory must be apart from {directory}",
                where=str(held_out.directory),
            )
    return held_out


def _held_out_dirs(held_out: HeldOut | None) -> list[Path]:
    return [] if held_out is None else [held_out.directory]


def scorer_start(setup: Setup) -> Start:
    """The scorer child's settings: the operator's, with the log directory resolved and every
    secret directory hidden from its sandboxed runs as from the agent's."""
    resolved: dict[str, object] = {"log_dir": str(setup.log_dir)}
    if setup.held_out is not None:
        resolved["held_out_dir"] = str(setup.held_out.directory)
    scorer = setup.config.scorer.model_copy(update=resolved)
    secret = [
        setup.scorer_state,
        setup.log_dir,
        setup.server_state,
        *_held_out_dirs(setup.held_out),
    ]
    return Start(
        repo=str(setup.repo),
        contract=setup.contract_arg,
        scorer=scorer,
        sandbox=hide_secret_dirs(setup.config.sandbox, secret),
    )


def protected_for_agent(setup: Setup) -> list[str]:
    """Globs the server refuses to write besides the contract paths.

    When the operator makes test tampering a reject, writing a protected path
    can only produce a rejected patch, so it is refused up front. Otherwise
    (the default, ``review``) the agent may add or change tests, e.g. a
    regression test: the scorer restores those paths from the parent before
    its runs and the scorecard shows the change to a reviewer.
    """
    if setup.config.scorer.test_tampering == "reject":
        return list(setup.config.scorer.protected_paths)
    return []

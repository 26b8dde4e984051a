"""``patchwarden serve``: set up one agent session and serve it over MCP.

What is cheap is checked before the first MCP message: the configuration, the base
commit, the contract, the sweep records, the held-out properties and the directories. Any
failure there is one line and exit 2 (the CLI's job); nothing is served. What takes
seconds runs while the session is already served (server/_startup.py): the worktree's
checkout, the sandbox probe, the collection of every property's test on the base (a
missing id makes the session unusable) and the scorer child becoming ready; the first tool
call waits for it, and a failure there fails every tool call with that one line. On exit
the scorer is stopped and the worktree removed (the patch commits stay under
``refs/patchwarden/`` for reviewers).
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
import signal
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.abc
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

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

from ._audit import AuditLog, AuditMiddleware
from ._paths import PathPolicy
from ._scorer_client import scorer_argv
from ._startup import (
    START_AT_LATEST_S,
    Readiness,
    ReadyGate,
    SetupStep,
    finish_setup,
    say,
)
from ._supervisor import RestartPolicy, ScorerSupervisor
from ._workspace import Workspace, planned_workspace, private_dir, repo_toplevel
from .config import AgentConfig, OperatorConfig, load_config
from .tools import Scorer, Session, instructions, register_tools

Transport = Literal["stdio", "http"]
INSTRUCTIONS = instructions()
"""What the agent is told when it connects: the session, then each tool and when to use it."""


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


def build_app(
    session: Session, audit: AuditLog, readiness: Readiness | None = None
) -> MCPServer[Any]:
    """The MCP server of one session; with ``readiness``, tool calls wait for the set-up."""
    gate = [] if readiness is None else [ReadyGate(readiness)]
    app: MCPServer[Any] = MCPServer(
        "patchwarden",
        title="patchwarden",
        instructions=INSTRUCTIONS,
        version=_version(),
        middleware=[AuditMiddleware(audit), *gate],
        lifespan=lambda _: scoring_in_background(session),
    )
    register_tools(app, session)
    return app


@contextlib.asynccontextmanager
async def scoring_in_background(session: Session) -> AsyncIterator[dict[str, Any]]:
    """While the server serves, submissions are scored apart from the calls that made them
    (server/tools/_submit_patch.py). When it stops (the client went away), a scoring under
    way is waited for, so the scorer can record its verdict before it is stopped."""
    async with anyio.create_task_group() as background:
        session.background = background
        try:
            yield {}
        finally:
            session.background = None
            with anyio.CancelScope(shield=True):
                for submission in session.submitted:
                    await submission.done.wait()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("patchwarden")
    except PackageNotFoundError:
        return "0"


def run_serve(options: ServeOptions) -> None:
    """Blocks until the client disconnects (stdio) or the process is interrupted (http).
    Exit code 2 when the set-up failed after serving began (its line is on stderr already)."""
    setup = prepare(options)
    with planned_workspace(
        setup.repo,
        setup.base,
        setup.server_state,
        worktree_dir=Path(setup.config.agent.worktree_dir)
        if setup.config.agent.worktree_dir
        else None,
        must_stay_outside=[setup.log_dir, setup.scorer_state],
    ) as workspace:
        failed = anyio.run(_serve, setup, workspace, options.transport)
    if failed is not None:
        sys.exit(2)


async def _serve(setup: Setup, workspace: Workspace, transport: Transport) -> str | None:
    """Serve until the client leaves; the set-up's error line, None when it held."""
    audit = AuditLog(setup.log_dir, workspace.session_id)
    policy = RestartPolicy.of(setup.config.scorer, setup.config.sandbox, len(setup.contract.seeds))

    def on_event(event: str, message: str, fields: Mapping[str, Any]) -> None:
        say(message)
        audit.event(event, message, fields)

    scorer = ScorerSupervisor(scorer_argv(), scorer_start(setup), policy, on_event)
    readiness = Readiness()
    app = build_app(_session(setup, workspace, scorer), audit, readiness)

    async def run_scorer() -> None:
        await scorer.start()
        readiness_steps.start_soon(scorer.watch)

    def failed(line: str) -> None:
        print(f"patchwarden: error: {line}", file=sys.stderr, flush=True)
        audit.event("setup_failed", line, {})

    async with anyio.create_task_group() as readiness_steps:
        steps: list[SetupStep] = [
            lambda: anyio.to_thread.run_sync(workspace.create),
            lambda: anyio.to_thread.run_sync(finish_setup_checks, setup),
            run_scorer,
        ]
        readiness_steps.start_soon(
            partial(
                finish_setup,
                steps,
                readiness,
                failed,
                start_at_latest_s=0 if transport == "http" else START_AT_LATEST_S,
            )
        )
        readiness_steps.start_soon(_announce, setup, workspace, readiness, transport)
        try:
            if transport == "http":  # uvicorn handles SIGINT and SIGTERM itself
                await _serve_http(app, setup.config.agent.http_token, setup.config.agent.http_port)
            else:
                await readiness_steps.start(_stop_on_signal, scorer, workspace)
                await app.run_stdio_async()
            # A client that left early (or a trial run with stdin closed) still learns
            # whether the set-up holds: its steps are bounded, and the exit code says it.
            await readiness.wait()
        finally:
            with anyio.CancelScope(shield=True):
                await scorer.aclose()
            readiness_steps.cancel_scope.cancel()
    return readiness.error


async def _announce(
    setup: Setup, workspace: Workspace, readiness: Readiness, transport: Transport
) -> None:
    if await readiness.wait() is None:
        say(
            f"serving {setup.repo} at base {setup.base[:12]} over {transport}; "
            f"worktree {workspace.tree}; logs in {setup.log_dir}"
        )


async def _stop_on_signal(
    scorer: ScorerSupervisor,
    workspace: Workspace,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """On SIGTERM or SIGHUP: stop the scorer, remove the worktree, exit.

    The SDK reads stdin in a worker thread that no cancellation interrupts
    while the client keeps the pipe open, so an orderly unwinding could wait
    forever; the session is torn down here instead. A client that closes
    stdin ends the session the ordinary way.
    """
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:
        task_status.started()
        async for signum in signals:
            say(f"{signal.Signals(signum).name}: stopping the session")
            await scorer.aclose()
            await anyio.to_thread.run_sync(workspace.remove)
            os._exit(0)


def _session(setup: Setup, workspace: Workspace, scorer: Scorer) -> Session:
    policy = PathPolicy(
        workspace.tree,
        read_only=setup.read_only,
        protected=protected_for_agent(setup),
        max_file_bytes=setup.config.agent.max_file_bytes,
    )
    return Session(
        workspace=workspace,
        policy=policy,
        contract=setup.contract,
        contract_file=setup.contract_file,
        quarantined=setup.quarantined,
        sandbox=setup.agent_sandbox,
        scorer=scorer,
        max_submissions=setup.config.agent.max_submissions,
        uncounted_faults=setup.config.agent.uncounted_faults,
        max_wait_s=setup.config.agent.max_wait_s,
    )


# -- streamable HTTP ----------------------------------------------------------


class BearerAuth:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="patchwarden"'),
                        ],
                    }
                )
                await send(
                    {
                        "type": "http.response.body",
                        "body": b'{"error": "missing or wrong bearer token"}',
                    }
                )
                return
        await self.app(scope, receive, send)


def loopback_security(port: int) -> TransportSecuritySettings:
    """Host and Origin must name this loopback port (against DNS rebinding)."""
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"127.0.0.1:{port}", f"localhost:{port}"],
        allowed_origins=[f"http://127.0.0.1:{port}", f"http://localhost:{port}"],
    )


def http_app(app: MCPServer[Any], token: str, port: int) -> BearerAuth:
    security = loopback_security(port)
    return BearerAuth(app.streamable_http_app(transport_security=security, host="127.0.0.1"), token)


async def _serve_http(app: MCPServer[Any], token: str | None, port: int) -> None:
    import uvicorn

    if token is None:
        token = secrets.token_urlsafe(32)
        print(f"patchwarden: http bearer token: {token}", file=sys.stderr, flush=True)
    say(f"listening on http://127.0.0.1:{port}/mcp")
    server = uvicorn.Server(
        uvicorn.Config(
            http_app(app, token, port),
            host="127.0.0.1",
            port=port,
            log_level="warning",
        )
    )
    await server.serve()

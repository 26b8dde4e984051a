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
from collections.abc import AsyncIterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

from ._audit import AuditLog, AuditMiddleware
from ._front import Front
from ._paths import PathPolicy
from ._prepare import (
    Setup,
    Transport,
    finish_setup_checks,
    protected_for_agent,
    scorer_start,
)
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
from ._workspace import Workspace, planned_workspace
from .tools import Scorer, Session, instructions, register_tools

INSTRUCTIONS = instructions()
"""What the agent is told when it connects: the session, then each tool and when to use it."""


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


def run_serve(setup: Setup, transport: Transport, front: Front | None = None) -> None:
    """Blocks until the client disconnects (stdio) or the process is interrupted (http).
    Exit code 2 when the set-up failed after serving began (its line is on stderr already).
    ``front``: the stdio front answering discovery while this module loaded (server/_front.py)."""
    with planned_workspace(
        setup.repo,
        setup.base,
        setup.server_state,
        worktree_dir=Path(setup.config.agent.worktree_dir)
        if setup.config.agent.worktree_dir
        else None,
        must_stay_outside=[setup.log_dir, setup.scorer_state],
    ) as workspace:
        try:
            failed = anyio.run(_serve, setup, workspace, transport, front)
        finally:
            if front is not None:
                front.close()
    if failed is not None:
        sys.exit(2)


async def _serve(
    setup: Setup, workspace: Workspace, transport: Transport, front: Front | None
) -> str | None:
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
                if front is not None:
                    front.serving()
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

"""``serve --transport http --hosted``: one HTTP server, many agent workspaces.

The operator (with the operator token) creates workspaces; each is what one ``serve``
process is otherwise: its own worktree at its base, its own contract, audit log and
submission limit. An agent reaches its workspace at its own address with its own token
and nothing else (docs/clients.md, "Hosted workspaces"; docs/threat-model.md):

    POST   /workspaces          {"repo", "base", "contract"?, "held_out"?}
                                -> 201 {"id", "mcp_url", "token"}
    GET    /workspaces          -> 200 {"workspaces": [{"id", "repo", "base", "mcp_url",
                                        "ready", "error", "submissions_left"}]}
    DELETE /workspaces/<id>     -> 200 {"id", "deleted": true} (worktree removed, verdicts kept)
    *      /workspaces/<id>/mcp the workspace's MCP endpoint (streamable HTTP)

Every request must name this loopback host and port (``Host``, and ``Origin`` when sent:
421 and 403 otherwise, as the SDK answers). The operator routes need ``Authorization:
Bearer <operator token>``; a workspace's endpoint needs that workspace's token. Any other
token, or none, gets 401 with the same body whether or not the workspace exists, so ids
cannot be probed. Tokens are compared with ``hmac.compare_digest`` and never printed or
logged. Scoring goes through one queue for the server (server/_scorer_pool.py).
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from patchwarden._errors import PatchwardenError, one_line
from patchwarden.sandbox import ConfigError

from ._app import _session, build_app, loopback_security, scoring_in_background
from ._audit import AuditLog
from ._prepare import ServeOptions, Setup, finish_setup_checks, prepare, scorer_start
from ._scorer_client import scorer_argv
from ._scorer_pool import PooledScorer, ScorerPool, default_slots
from ._startup import Readiness, SetupStep, finish_setup, say
from ._supervisor import RestartPolicy
from ._workspace import Workspace, planned_workspace
from .config import load_config
from .tools import Session

OPERATOR_TOKEN_ENV = "PATCHWARDEN_OPERATOR_TOKEN"
MIN_TOKEN_CHARS = 16
MAX_BODY_BYTES = 64 * 1024
WORKSPACE = re.compile(r"^/workspaces/([0-9a-f]{12})(/mcp)?/?$")
UNAUTHORIZED = b'{"error": "missing or wrong bearer token"}'


def operator_token(token_file: Path | None) -> str:
    """The operator token: the file's first line, else $PATCHWARDEN_OPERATOR_TOKEN."""
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(
                f"cannot read the operator token: {exc.strerror}", where=str(token_file)
            ) from None
        where = str(token_file)
    else:
        token = os.environ.get(OPERATOR_TOKEN_ENV, "").strip()
        where = OPERATOR_TOKEN_ENV
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"hosted mode needs an operator token of at least {MIN_TOKEN_CHARS} characters "
            f"(--operator-token-file or ${OPERATOR_TOKEN_ENV})",
            where=where,
        )
    return token


class WorkspaceRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    repo: str = Field(min_length=1, max_length=4096)
    base: str = Field(min_length=1, max_length=1000)
    contract: str | None = Field(default=None, min_length=1, max_length=4096)
    held_out: str | None = Field(default=None, min_length=1, max_length=4096)


@dataclass
class Hosted:
    """One workspace of the hosted server."""

    id: str
    token: str
    mcp_url: str
    setup: Setup
    workspace: Workspace
    session: Session
    audit: AuditLog
    app: MCPServer[Any]
    asgi: Any
    readiness: Readiness
    key: str
    stack: contextlib.ExitStack
    stop: anyio.Event = field(default_factory=anyio.Event)
    gone: anyio.Event = field(default_factory=anyio.Event)


class HostedServer:
    """The workspaces, the scorer pool and the ASGI application that routes to them."""

    def __init__(
        self,
        config_path: Path | None,
        token: str,
        port: int,
        tg: anyio.abc.TaskGroup,
        slots: int | None = None,
    ) -> None:
        self.config_path = config_path
        self._operator = f"Bearer {token}".encode()
        self._decoy = secrets.token_urlsafe(32)  # compared against for an unknown id
        self.port = port
        self._tg = tg
        config = load_config(config_path)
        self.pool = ScorerPool(
            scorer_argv(),
            slots or default_slots(config.scorer.worker_count()),
            self._event,
            tg,
        )
        self.security = loopback_security(port)
        self.workspaces: dict[str, Hosted] = {}

    def _event(self, event: str, message: str, fields: Mapping[str, Any]) -> None:
        say(message)

    # -- workspaces -------------------------------------------------------------------

    async def create(self, request: WorkspaceRequest) -> Hosted:
        """Check the workspace's set-up cheaply (a ConfigError refuses it), serve it, and
        finish the set-up in the background (its tools wait for it)."""
        workspace_id = secrets.token_hex(6)
        options = ServeOptions(
            config_path=self.config_path,
            repo=Path(request.repo),
            base=request.base,
            contract=request.contract,
            held_out=Path(request.held_out) if request.held_out else None,
            transport="http",
        )
        setup = await anyio.to_thread.run_sync(prepare, options)
        stack = contextlib.ExitStack()
        workspace = await anyio.to_thread.run_sync(
            lambda: stack.enter_context(
                planned_workspace(
                    setup.repo,
                    setup.base,
                    setup.server_state,
                    session_id=workspace_id,
                    must_stay_outside=[setup.log_dir, setup.scorer_state],
                )
            )
        )
        policy = RestartPolicy.of(
            setup.config.scorer, setup.config.sandbox, len(setup.contract.seeds)
        )
        key = self.pool.join(scorer_start(setup), policy)
        try:
            hosted = self._hosted(workspace_id, setup, workspace, key, stack)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.pool.leave(key)
                await anyio.to_thread.run_sync(stack.close)
            raise
        audit = hosted.audit

        def failed(line: str) -> None:
            say(f"workspace {workspace_id}: error: {line}")
            audit.event("setup_failed", line, {})

        steps: list[SetupStep] = [
            lambda: anyio.to_thread.run_sync(workspace.create),
            lambda: anyio.to_thread.run_sync(finish_setup_checks, setup),
            lambda: self.pool.ready(key),
        ]
        await self._tg.start(self._run, hosted, steps, failed)
        self.workspaces[workspace_id] = hosted
        say(f"workspace {workspace_id}: {setup.repo} at base {setup.base[:12]}")
        return hosted

    def _hosted(
        self,
        workspace_id: str,
        setup: Setup,
        workspace: Workspace,
        key: str,
        stack: contextlib.ExitStack,
    ) -> Hosted:
        audit = AuditLog(setup.log_dir / "workspaces" / workspace_id, workspace_id)
        readiness = Readiness()
        session = _session(setup, workspace, PooledScorer(self.pool, key, workspace_id))
        app = build_app(session, audit, readiness)
        return Hosted(
            id=workspace_id,
            token=secrets.token_urlsafe(32),
            mcp_url=f"http://127.0.0.1:{self.port}/workspaces/{workspace_id}/mcp",
            setup=setup,
            workspace=workspace,
            session=session,
            audit=audit,
            app=app,
            asgi=app.streamable_http_app(transport_security=self.security, host="127.0.0.1"),
            readiness=readiness,
            key=key,
            stack=stack,
        )

    async def _run(
        self,
        hosted: Hosted,
        steps: list[SetupStep],
        failed: Any,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """The workspace's life: its MCP endpoint and set-up until it is deleted; then its
        worktree removed and its share of the pool given back."""
        try:
            async with (
                hosted.app.session_manager.run(),
                scoring_in_background(hosted.session),
                anyio.create_task_group() as tg,
            ):
                tg.start_soon(
                    lambda: finish_setup(steps, hosted.readiness, failed, start_at_latest_s=0)
                )
                task_status.started()
                await hosted.stop.wait()
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(hosted.stack.close)
                await self.pool.leave(hosted.key)
                hosted.gone.set()

    async def delete(self, workspace_id: str) -> bool:
        hosted = self.workspaces.pop(workspace_id, None)
        if hosted is None:
            return False
        hosted.stop.set()
        await hosted.gone.wait()
        say(f"workspace {workspace_id}: deleted")
        return True

    async def aclose(self) -> None:
        for workspace_id in list(self.workspaces):
            await self.delete(workspace_id)
        await self.pool.aclose()

    def listing(self) -> list[dict[str, Any]]:
        return [
            {
                "id": h.id,
                "repo": str(h.setup.repo),
                "base": h.setup.base,
                "mcp_url": h.mcp_url,
                "ready": h.readiness.done and h.readiness.error is None,
                "error": h.readiness.error,
                "submissions_left": h.session.submissions_left,
            }
            for h in self.workspaces.values()
        ]

    # -- HTTP -------------------------------------------------------------------------

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = {k.lower(): v for k, v in scope.get("headers") or []}
        refusal = self._host_refusal(headers)
        if refusal is not None:
            await _send(send, *refusal)
            return
        path, method = scope["path"], scope["method"]
        given = headers.get(b"authorization", b"")
        matched = WORKSPACE.match(path)
        if matched and matched.group(2):
            hosted = self.workspaces.get(matched.group(1))
            token = hosted.token if hosted is not None else self._decoy
            if not hmac.compare_digest(given, f"Bearer {token}".encode()) or hosted is None:
                await _unauthorized(send)
                return
            inner = {**scope, "path": "/mcp", "raw_path": b"/mcp", "root_path": ""}
            await hosted.asgi(inner, receive, send)
            return
        if path.rstrip("/") != "/workspaces" and not matched:
            await _send(send, 404, {"error": "not found"})
            return
        if not hmac.compare_digest(given, self._operator):
            await _unauthorized(send)
            return
        if matched and method == "DELETE":
            deleted = await self.delete(matched.group(1))
            await _send(
                send,
                *((200, {"id": matched.group(1), "deleted": True}) if deleted else _NOT_FOUND),
            )
        elif not matched and method == "GET":
            await _send(send, 200, {"workspaces": self.listing()})
        elif not matched and method == "POST":
            await _send(send, *await self._post(receive))
        else:
            await _send(send, 405, {"error": f"{method} is not allowed here"})

    def _host_refusal(self, headers: dict[bytes, bytes]) -> tuple[int, dict[str, str]] | None:
        host = headers.get(b"host", b"").decode("latin-1")
        if host not in (self.security.allowed_hosts or []):
            return 421, {"error": "invalid Host header"}
        origin = headers.get(b"origin")
        if origin is not None and origin.decode("latin-1") not in (
            self.security.allowed_origins or []
        ):
            return 403, {"error": "invalid Origin header"}
        return None

    async def _post(self, receive: Any) -> tuple[int, dict[str, Any]]:
        body = await _read_body(receive)
        if body is None:
            return 413, {"error": f"the request body is over {MAX_BODY_BYTES} bytes"}
        try:
            request = WorkspaceRequest.model_validate_json(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "body"
            return 400, {"error": one_line(f"{where}: {first['msg']}")}
        try:
            hosted = await self.create(request)
        except PatchwardenError as exc:
            return 400, {"error": str(exc)}
        except OSError as exc:
            return 400, {"error": one_line(f"{exc.filename or ''}: {exc.strerror or exc}")}
        return 201, {"id": hosted.id, "mcp_url": hosted.mcp_url, "token": hosted.token}


_NOT_FOUND = (404, {"error": "no such workspace"})


async def _read_body(receive: Any) -> bytes | None:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if len(body) > MAX_BODY_BYTES:
            return None
        if not message.get("more_body"):
            return bytes(body)


async def _send(send: Any, status: int, payload: Mapping[str, Any]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(payload).encode()})


async def _unauthorized(send: Any) -> None:
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
    await send({"type": "http.response.body", "body": UNAUTHORIZED})


async def serve_hosted(
    config_path: Path | None, token_file: Path | None, slots: int | None = None
) -> None:
    """Until interrupted (uvicorn handles SIGINT and SIGTERM): then every workspace is
    deleted (worktrees removed, verdicts kept) and the scorers stopped."""
    import uvicorn

    token = operator_token(token_file)
    port = load_config(config_path).agent.http_port
    async with anyio.create_task_group() as tg:
        hosted = HostedServer(config_path, token, port, tg, slots)
        server = uvicorn.Server(
            uvicorn.Config(hosted, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
        )
        say(f"hosting workspaces on http://127.0.0.1:{port}/workspaces")
        try:
            await server.serve()
        finally:
            with anyio.CancelScope(shield=True):
                await hosted.aclose()
            tg.cancel_scope.cancel()

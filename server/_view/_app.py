"""``patchwarden view``: the log directory in a browser, read-only.

Routes (GET and HEAD only; nothing writes):

    /                                   the verdict list (?decision=, ?page=)
    /verdicts/{id}                      one verdict (?decision= keeps prev/next in the filter)
    /verdicts/{id}/files/{name}         one file of the bundle, as text/plain
    /tickets                            the freeze tickets
    /static/view.css                    the stylesheet

A verdict id must be a line of the index, and a file name a key of the bundle's file
list (:func:`._bundle.list_files`); neither is ever joined onto a path, so ``..``, encoded
slashes and absolute paths are 404s like any other unknown name.

Access (docs/reviewer-guide.md): on a loopback address anyone on this machine may read,
and the Host header must name the loopback (a DNS-rebinding page cannot read it through
a browser). Bound elsewhere, a token is required, as for the MCP HTTP transport: an
``Authorization: Bearer`` header, or ``?token=`` once, which sets a cookie and redirects
to the same page without it.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from patchwarden.scorer import InputError

from ._bundle import list_files
from ._index import IndexReader, bundle_dir
from ._render import (
    CSP,
    LiveLinks,
    SummaryCache,
    decision_filters,
    environment,
    list_page,
    neighbours,
    render,
    stylesheet,
    ticket_rows,
    verdict_page,
)

COOKIE = "patchwarden_view"
LOOPBACK_NAMES = frozenset({"localhost"})
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]
log = logging.getLogger("patchwarden.view")


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """The host of a Host header, without its port (``[::1]:8766`` -> ``::1``)."""
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def cookie_value(token: str) -> str:
    """What the cookie holds: derived from the token, so the cookie jar never has it."""
    return hmac.new(token.encode(), b"patchwarden view cookie", hashlib.sha256).hexdigest()


class ViewGuard:
    """ASGI middleware in front of every request: methods, Host, token, and the
    security headers on every response (errors included)."""

    def __init__(self, app: ASGIApp, *, token: str | None, loopback_only: bool) -> None:
        self.app = app
        self.token = token
        self.loopback_only = loopback_only
        self.bearer = f"Bearer {token}".encode() if token else b""
        self.cookie = cookie_value(token) if token else ""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in SECURITY_HEADERS if k not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        if scope["method"] not in ("GET", "HEAD"):
            await _plain(
                with_headers, 405, "read-only: GET and HEAD only", [(b"allow", b"GET, HEAD")]
            )
            return
        if self.loopback_only and not is_loopback(_host_name(headers.get("host", ""))):
            await _plain(with_headers, 421, "this view answers to its loopback address only")
            return
        if self.token is not None:
            query = parse_qsl(
                scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True
            )
            given = [v for k, v in query if k == "token"]
            if given:
                await self._token_in_query(scope, query, given[-1], with_headers)
                return
            if not self._authorised(headers):
                await _plain(
                    with_headers,
                    401,
                    "token required: send Authorization: Bearer TOKEN, or open ?token=TOKEN once",
                    [(b"www-authenticate", b'Bearer realm="patchwarden view"')],
                )
                return
        await self.app(scope, receive, with_headers)

    def _authorised(self, headers: dict[str, str]) -> bool:
        given = headers.get("authorization", "").encode("latin-1")
        if given and hmac.compare_digest(given, self.bearer):
            return True
        jar = SimpleCookie()
        try:
            jar.load(headers.get("cookie", ""))
        except CookieError:  # a malformed Cookie header is no credential
            return False
        morsel = jar.get(COOKIE)
        return morsel is not None and hmac.compare_digest(morsel.value, self.cookie)

    async def _token_in_query(
        self, scope: Scope, query: list[tuple[str, str]], given: str, send: Send
    ) -> None:
        assert self.token is not None
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            await _plain(send, 401, "wrong token")
            return
        rest = urlencode([(k, v) for k, v in query if k != "token"])
        location = scope.get("root_path", "") + scope["path"] + (f"?{rest}" if rest else "")
        cookie = f"{COOKIE}={self.cookie}; HttpOnly; SameSite=Strict; Path=/"
        if scope.get("scheme") == "https":
            cookie += "; Secure"
        await _plain(
            send,
            303,
            "token accepted",
            [(b"location", location.encode("latin-1")), (b"set-cookie", cookie.encode())],
        )


async def _plain(
    send: Send, status: int, text: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = (text + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _page_number(request: Request) -> int:
    raw = request.query_params.get("page", "1")
    if not raw.isdigit() or int(raw) < 1:
        raise HTTPException(400, f"page must be a positive whole number, got {raw[:40]!r}")
    return int(raw)


def create_app(log_dir: Path, *, token: str | None = None, loopback_only: bool = True) -> ViewGuard:
    """The view of ``log_dir`` as an ASGI app (routes in the module docstring)."""
    env = environment()
    links = LiveLinks()
    index = IndexReader(log_dir)
    summaries = SummaryCache(log_dir)
    css = stylesheet()
    shown_dir = str(log_dir)

    def page(
        template: str, warnings: tuple[str, ...] = (), status: int = 200, **context: Any
    ) -> HTMLResponse:
        html = render(env, template, links, warnings, log_dir=shown_dir, **context)
        return HTMLResponse(html, status_code=status)

    def home(request: Request) -> Response:
        snapshot = index.snapshot()
        decision = request.query_params.get("decision") or None
        return page(
            "list.html",
            snapshot.warnings,
            page=list_page(snapshot, summaries, decision, _page_number(request)),
            filters=decision_filters(snapshot),
            total=len(snapshot.entries),
        )

    def verdict(request: Request) -> Response:
        snapshot = index.snapshot()
        entry = snapshot.by_id.get(request.path_params["verdict_id"])
        if entry is None:
            raise HTTPException(404, "no such verdict in the index")
        decision = request.query_params.get("decision") or None
        return page(
            "verdict.html",
            view=verdict_page(log_dir, entry),
            nav=neighbours(snapshot, entry.verdict_id, decision),
            decision=decision,
        )

    def bundle_file(request: Request) -> Response:
        entry = index.snapshot().by_id.get(request.path_params["verdict_id"])
        if entry is None:
            raise HTTPException(404, "no such verdict in the index")
        files, _ = list_files(bundle_dir(log_dir, entry.verdict_id))
        path = files.get(request.path_params["name"])
        if path is None:
            raise HTTPException(404, "no such file in this bundle")
        return FileResponse(
            path,
            media_type="text/plain; charset=utf-8",
            content_disposition_type="inline",
            filename=path.name,
        )

    def tickets(request: Request) -> Response:
        snapshot = index.snapshot()
        rows, problems = ticket_rows(log_dir)
        return page(
            "tickets.html", snapshot.warnings, rows=rows, problems=problems, known=snapshot.by_id
        )

    def style(request: Request) -> Response:
        return Response(css, media_type="text/css; charset=utf-8")

    def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        titles = {400: "bad request", 404: "not found", 405: "method not allowed"}
        return page(
            "error.html",
            status=exc.status_code,
            code=exc.status_code,
            title=titles.get(exc.status_code, "error"),
            message=exc.detail,
        )

    def index_error(request: Request, exc: Exception) -> Response:
        # A bad line of verdicts.jsonl: the page names file:line, never a shorter list.
        log.error("view: %s", exc)
        return page(
            "error.html",
            status=500,
            code=500,
            title="the verdict index cannot be read",
            message=str(exc),
        )

    def internal_error(request: Request, exc: Exception) -> Response:
        log.exception("view: internal error on %s", request.url.path)
        return Response(
            "internal error; the traceback is in the server's log\n", 500, media_type="text/plain"
        )

    app = Starlette(
        routes=[
            Route("/", home, methods=["GET", "HEAD"]),
            Route("/verdicts/{verdict_id}", verdict, methods=["GET", "HEAD"]),
            Route("/verdicts/{verdict_id}/files/{name:path}", bundle_file, methods=["GET", "HEAD"]),
            Route("/tickets", tickets, methods=["GET", "HEAD"]),
            Route("/static/view.css", style, methods=["GET", "HEAD"]),
        ],
        exception_handlers={
            HTTPException: http_error,
            InputError: index_error,
            Exception: internal_error,
        },
    )
    return ViewGuard(app, token=token, loopback_only=loopback_only)

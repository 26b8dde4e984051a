"""The audit log: one JSONL line per tool call, in the reviewers' log directory.

Written by a server middleware, so calls that never reach a tool (unknown
tool, invalid arguments) are recorded too. File contents and patches are
not copied into the log: the arguments each tool declares elided
(server/tools/, ``ELIDED_ARGUMENTS``) are replaced by their length.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from patchwarden.scorer import append_line

from .tools import ELIDED_ARGUMENTS

AUDIT_FILE = "audit.jsonl"
MAX_ARGUMENT_CHARS = 1000  # other string arguments are cut to this many characters
MAX_MESSAGE_CHARS = 1000


def elide_arguments(arguments: Any) -> Any:
    """The arguments as the log keeps them: bulky text replaced by its length."""
    if not isinstance(arguments, dict):
        return (
            arguments if arguments is None else {"invalid_arguments_type": type(arguments).__name__}
        )
    kept: dict[str, Any] = {}
    for key, value in arguments.items():
        if key in ELIDED_ARGUMENTS:
            kept[key] = {"elided_chars": len(value)} if isinstance(value, str) else {"elided": True}
        else:
            kept[key] = _cut(value)
    return kept


def _cut(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= MAX_ARGUMENT_CHARS else value[:MAX_ARGUMENT_CHARS] + "..."
    if isinstance(value, list):
        return [_cut(v) for v in value[:100]]
    if isinstance(value, dict):
        return {str(k)[:100]: _cut(v) for k, v in list(value.items())[:100]}
    return value


class AuditLog:
    """Append-only ``audit.jsonl`` under the log directory."""

    def __init__(self, log_dir: Path, session_id: str) -> None:
        self.path = log_dir / AUDIT_FILE
        self.session_id = session_id
        log_dir.mkdir(parents=True, exist_ok=True)

    def record(
        self, tool: str, arguments: Any, outcome: str, message: str, duration_s: float
    ) -> None:
        entry = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "session": self.session_id,
            "tool": tool,
            "arguments": elide_arguments(arguments),
            "outcome": outcome,
            "message": message[:MAX_MESSAGE_CHARS],
            "duration_s": round(duration_s, 6),
        }
        self._append(entry)

    def event(self, event: str, message: str, fields: Mapping[str, Any]) -> None:
        """A line about the session rather than a tool call (e.g. a scorer restart)."""
        entry = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "session": self.session_id,
            "event": event,
            "message": message[:MAX_MESSAGE_CHARS],
            **fields,
        }
        self._append(entry)

    def _append(self, entry: dict[str, Any]) -> None:
        """One whole line, or none: a failed write is cut back off and reported on stderr
        (naming the file), and the session goes on; the audit log must not take the
        service down with it when the log directory is full or read-only."""
        line = (json.dumps(entry, sort_keys=True) + "\n").encode()
        try:
            append_line(self.path, line, fsync=False)
        except OSError as exc:
            print(
                f"patchwarden: cannot write the audit log: {exc.filename or self.path}: "
                f"{exc.strerror or exc}",
                file=sys.stderr,
                flush=True,
            )


def _tool_error_text(result: HandlerResult) -> str | None:
    """The error text of a tool result, or None when it is not an error."""
    if result is None:
        return None
    data = result if isinstance(result, dict) else result.model_dump(by_alias=True)
    if not data.get("isError"):
        return None
    texts = [c.get("text", "") for c in data.get("content") or [] if isinstance(c, dict)]
    return " ".join(t for t in texts if t) or "error"


class AuditMiddleware:
    """Server middleware recording every ``tools/call`` in the audit log."""

    def __init__(self, log: AuditLog) -> None:
        self.log = log

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method != "tools/call" or ctx.request_id is None:
            return await call_next(ctx)
        params = ctx.params or {}
        tool = params.get("name") if isinstance(params.get("name"), str) else "?"
        arguments = params.get("arguments")
        started = time.monotonic()
        outcome, message = "error", ""
        try:
            result = await call_next(ctx)
            error = _tool_error_text(result)
            outcome, message = ("ok", "") if error is None else ("error", error)
            return result
        except anyio.get_cancelled_exc_class():
            outcome, message = "cancelled", "the client cancelled the call"
            raise
        except MCPError as exc:
            message = exc.error.message
            raise
        except ValidationError:
            message = "invalid request parameters"
            raise
        except Exception as exc:
            message = f"internal error ({type(exc).__name__})"
            raise
        finally:
            self.log.record(str(tool), arguments, outcome, message, time.monotonic() - started)

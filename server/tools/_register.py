"""The one adapter from the registry to the SDK: each tool becomes an ``@mcp.tool``.

The SDK derives a tool's input schema from its function's signature, so each tool gets a
function whose signature is its argument model's fields (same names, annotations and
defaults); the function validates the arguments into the model and calls the tool's handler
with the session and the request's progress reporter.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic_core import PydanticUndefined

from ._base import Tool
from ._registry import TOOLS
from ._session import Session


def register_tools(mcp: MCPServer[Any], session: Session) -> None:
    """Add every tool of the registry to ``mcp``, bound to ``session``."""
    for tool in TOOLS:
        mcp.add_tool(
            sdk_function(tool, session),
            name=tool.name,
            title=tool.title,
            description=tool.published,
            annotations=tool.annotations,
        )


def sdk_function(tool: Tool[Any, Any], session: Session) -> Any:
    """A coroutine function the SDK can register: keyword arguments as ``tool.args`` declares
    them, plus the request's Context (left out of the schema)."""
    hints = typing.get_type_hints(tool.args, include_extras=True)
    parameters = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
    annotations: dict[str, Any] = {"ctx": Context}
    for name, info in tool.args.model_fields.items():
        default = inspect.Parameter.empty if info.default is PydanticUndefined else info.default
        parameters.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, annotation=hints[name], default=default
            )
        )
        annotations[name] = hints[name]
    annotations["return"] = tool.result

    async def call(ctx: Context, **arguments: Any) -> Any:
        return await tool.run(session, tool.args.model_validate(arguments), ctx.report_progress)

    call.__name__ = call.__qualname__ = tool.name  # names the SDK's argument model
    call.__signature__ = inspect.Signature(parameters, return_annotation=tool.result)  # type: ignore[attr-defined]
    call.__annotations__ = annotations
    return call
